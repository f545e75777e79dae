#!/bin/bash
# Fifth sitting: a JAX (XLA) training step on the H200, profiled by jax.profiler (xplane.pb) and
# counted by Nsight Compute with the deciding tensor metrics; then the merged main's
# `tcreport profile --backend torch` end to end.
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
W=/tmp/w5; rm -rf $W; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site
exec > >(tee $OUT/log5.txt) 2>&1
T=$(date +%s); el(){ echo "== +$(( $(date +%s)-T ))s $*"; }
nvidia-smi -L; ncu --version | tail -1
python3 -m pip list 2>/dev/null | grep -i -E "^(jax|jaxlib|jax-cuda13-plugin|torch|nvidia-cudnn-cu13|nvidia-cublas|triton) "
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed_pipe_tensor.sum,sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum,sm__inst_executed_pipe_tensor_op_gmma.sum,sm__ops_path_tensor_src_fp16.sum,sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_tf32_dst_fp32.sum,sm__ops_path_tensor_src_fp64.sum
for prec in bf16 fp32 fp32-highest; do
  el "jax $prec trace"
  timeout 60 python3 devrec/jax_mlp.py --precision $prec --steps 6 --trace $W/jax_$prec --cache $W/cache_$prec 2>&1 | grep -v python_hooks; echo rc=$?
  el "jax $prec ncu"
  timeout 80 ncu --csv --page raw --clock-control none --metrics "$M" -c 400 python3 devrec/jax_mlp.py --precision $prec --steps 2 --cache $W/cache_$prec > $W/ncu_jax_$prec.csv 2> $W/ncu_jax_$prec.err; echo rc=$?; tail -2 $W/ncu_jax_$prec.err; wc -l $W/ncu_jax_$prec.csv
done
el "tcreport summary jax bf16 (here)"
timeout 30 python3 -m tcreport summary $W/jax_bf16 2>&1 | head -8
el "tcreport profile torch bf16 --fixed"
timeout 90 python3 -m tcreport profile --backend torch --output-dir $W/torch_bf16fixed --iter-start 2 --iter-stop 5 examples/torch_cnn.py -- --precision bfloat16 --fixed --steps 8 --batch-size 256 --image-size 64 2>&1 | grep -v Warn; echo rc=$?
timeout 30 python3 -m tcreport report $W/torch_bf16fixed -o $W/torch_bf16fixed.html; echo rc=$?
cd $W && tar czf $OUT/jax5.tgz jax_* ncu_jax_* && tar czf $OUT/torch5.tgz torch_bf16fixed torch_bf16fixed.html
ls -la $OUT; el done
