#!/bin/bash
# Fourth sitting: the merged main end to end on the GPU (profile, then counters of the same script).
export PYTHONUNBUFFERED=1
W=/tmp/w4; rm -rf $W; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site
exec > >(tee $OUT/log4.txt) 2>&1
T=$(date +%s); el(){ echo "== +$(( $(date +%s)-T ))s $*"; }
M=gpu__time_duration.sum,sm__inst_executed_pipe_tensor.sum,sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum,sm__ops_path_tensor_src_fp16.sum,sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_tf32_dst_fp32.sum
el profile fp16
timeout 60 python3 -m tcreport profile --backend torch --output-dir $W/p --iter-start 2 --iter-stop 5 examples/torch_cnn.py -- --precision float16 --steps 8 --batch-size 256 --image-size 64 2>&1 | grep -v Warn
el ncu fp16
timeout 80 ncu --csv --page raw --clock-control none --metrics "$M" -c 300 python3 examples/torch_cnn.py --precision float16 --steps 3 --batch-size 256 --image-size 64 > $W/ncu.csv 2>$W/ncu.err; echo rc=$?
el summary counters
python3 -m tcreport summary $W/p --counters $W/ncu.csv 2>&1 | grep -v "^│\|^┃\|^┏\|^┡\|^└"
cd $W && tar czf $OUT/run4.tgz p ncu.csv; el done
