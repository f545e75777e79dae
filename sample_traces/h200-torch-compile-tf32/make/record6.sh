#!/bin/bash
# Sixth sitting: torch.compile (Inductor, Triton GEMM templates forced) on the H200, profiled by
# torch.profiler and counted by Nsight Compute, in bf16, fp32 with TF32 and fp32 without.
export PYTHONUNBUFFERED=1
W=/tmp/w6; rm -rf $W; mkdir -p $W
exec > >(tee $OUT/log6.txt) 2>&1
T=$(date +%s); el(){ echo "== +$(( $(date +%s)-T ))s $*"; }
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed_pipe_tensor.sum,sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum,sm__inst_executed_pipe_tensor_op_gmma.sum,sm__ops_path_tensor_src_fp16.sum,sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_tf32_dst_fp32.sum,sm__ops_path_tensor_src_fp64.sum
for prec in bf16 fp32-tf32 fp32; do
  export TORCHINDUCTOR_CACHE_DIR=$W/cache_$prec
  el "inductor $prec profile"
  timeout 120 python3 devrec/inductor_mlp.py --precision $prec --profile $W/ind_$prec 2>&1 | grep -v -i "warn" | tail -3; echo rc=$?
  el "inductor $prec ncu"
  timeout 75 ncu --csv --page raw --clock-control none --metrics "$M" -c 120 python3 devrec/inductor_mlp.py --precision $prec --steps 4 > $W/ncu_ind_$prec.csv 2> $W/ncu_ind_$prec.err; echo rc=$?; tail -2 $W/ncu_ind_$prec.err; wc -l $W/ncu_ind_$prec.csv
done
cd $W && tar czf $OUT/ind6.tgz ind_* ncu_ind_*; ls -la $OUT; el done
