#!/bin/bash
# Second sitting: the example CNN profiled by tcreport (torch backend) and counted by ncu, same arguments.
export PYTHONUNBUFFERED=1
W=/tmp/w2; rm -rf $W; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site
exec > >(tee $OUT/log2.txt) 2>&1
T=$(date +%s); el(){ echo "== +$(( $(date +%s)-T ))s $*"; }
NCU=$(which ncu)
M=gpu__time_duration.sum,sm__inst_executed_pipe_tensor_op_gmma.sum,sm__inst_executed_pipe_tensor_op_hmma.sum,sm__inst_executed_pipe_tensor_op_imma.sum,sm__inst_executed_pipe_tensor_op_dmma.sum,sm__inst_executed_pipe_tensor.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active
for v in "fp32:--precision float32" "fp16:--precision float16" "bf16fixed:--precision bfloat16 --fixed"; do
  n=${v%%:*}; a=${v#*:}
  el "profile $n"
  timeout 80 python3 -m tcreport profile --backend torch --output-dir $W/profile_$n --iter-start 2 --iter-stop 5 examples/torch_cnn.py -- $a --steps 8 --batch-size 256 --image-size 64 2>&1 | tail -3
  el "ncu $n"
  timeout 100 $NCU --csv --page raw --clock-control none --metrics "$M" -c 300 python3 examples/torch_cnn.py $a --steps 3 --batch-size 256 --image-size 64 > $W/ncu_cnn_$n.csv 2> $W/ncu_$n.err; echo rc=$?; tail -3 $W/ncu_$n.err; wc -l $W/ncu_cnn_$n.csv
  python3 -m tcreport summary $W/profile_$n --counters $W/ncu_cnn_$n.csv 2>&1 | head -70
  python3 -m tcreport summary --json $W/profile_$n --counters $W/ncu_cnn_$n.csv > $W/summary_counters_$n.json 2>&1
done
el pack
cd $W && tar czf $OUT/cnn_runs.tgz profile_* ncu_cnn_*.csv summary_counters_*.json && ls -la $OUT
el done
