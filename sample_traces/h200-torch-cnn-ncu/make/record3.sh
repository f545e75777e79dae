#!/bin/bash
# Third sitting: the counters that separate matrix instructions from HFMA2.MMA moves, and kernel-name bases.
export PYTHONUNBUFFERED=1
W=/tmp/w3; rm -rf $W; mkdir -p $W
exec > >(tee $OUT/log3.txt) 2>&1
T=$(date +%s); el(){ echo "== +$(( $(date +%s)-T ))s $*"; }
NCU=$(which ncu)
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed_pipe_tensor.sum,sm__inst_executed_pipe_tensor_op_hmma.sum,sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum,sm__inst_executed_pipe_tensor_op_gmma.sum,sm__inst_executed_pipe_tensor_op_imma.sum,sm__inst_executed_pipe_tensor_op_dmma.sum,sm__pipe_tensor_cycles_active.sum,sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.sum,sm__pipe_tensor_op_dmma_cycles_active.sum,sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum,sm__ops_path_tensor_src_fp16.sum,sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_tf32_dst_fp32.sum,sm__ops_path_tensor_src_fp64.sum,sm__ops_path_tensor_src_int8.sum,sm__ops_path_tensor_src_fp8.sum
el mix
timeout 100 $NCU --csv --page raw --clock-control none --metrics "$M" -c 80 python3 devrec/mix.py > $OUT/ncu3_mix.csv 2> $W/e1; echo rc=$?; tail -3 $W/e1
for v in "fp16:--precision float16" "bf16fixed:--precision bfloat16 --fixed" "fp32:--precision float32"; do
  n=${v%%:*}; a=${v#*:}
  el "cnn $n"
  timeout 100 $NCU --csv --page raw --clock-control none --metrics "$M" -c 300 python3 examples/torch_cnn.py $a --steps 3 --batch-size 256 --image-size 64 > $OUT/ncu3_cnn_$n.csv 2> $W/e_$n; echo rc=$?; tail -3 $W/e_$n
done
el "cnn fp16 bases"
timeout 60 $NCU --csv --page raw --clock-control none --print-kernel-base mangled --metrics gpu__time_duration.sum -c 300 python3 examples/torch_cnn.py --precision float16 --steps 3 --batch-size 256 --image-size 64 > $OUT/ncu3_cnn_fp16_mangled.csv 2>&1; echo rc=$?
timeout 60 $NCU --csv --page raw --clock-control none --print-kernel-base function --metrics gpu__time_duration.sum -c 300 python3 examples/torch_cnn.py --precision float16 --steps 3 --batch-size 256 --image-size 64 > $OUT/ncu3_cnn_fp16_function.csv 2>&1; echo rc=$?
ls -la $OUT; el done
