#!/bin/bash
# Records small real traces on the lent GPU machine; see devrec/README.md for what each is.
export PYTHONUNBUFFERED=1
W=/tmp/w; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site
exec > >(tee $OUT/log.txt) 2>&1
T=$(date +%s); el(){ echo "== +$(( $(date +%s)-T ))s $*"; }
el env
{ nvidia-smi; nvidia-smi -q | head -40; python3 -c "import torch,triton,sys;print(sys.version);print('torch',torch.__version__,'cuda',torch.version.cuda,'cudnn',torch.backends.cudnn.version(),'triton',triton.__version__);print(torch.cuda.get_device_name(), torch.cuda.get_device_capability())"; which ncu; ncu --version; uname -a; } > $OUT/env.txt 2>&1
NCU=$(which ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
ALL=$($NCU --query-metrics 2>/dev/null | awk '{print $1}')
echo "$ALL" | grep -E 'tensor|mma' > $W/tensor_metrics.txt; cp $W/tensor_metrics.txt $OUT/ncu_tensor_metrics.txt
M=gpu__time_duration.sum
for b in sm__inst_executed_pipe_tensor_op_gmma sm__inst_executed_pipe_tensor_op_hmma sm__inst_executed_pipe_tensor_op_imma sm__inst_executed_pipe_tensor_op_dmma sm__inst_executed_pipe_tensor sm__pipe_tensor_op_gmma_cycles_active sm__pipe_tensor_cycles_active dram__bytes_read smsp__inst_executed; do
  if echo "$ALL" | grep -qx "$b"; then case $b in *cycles_active) M="$M,$b.avg.pct_of_peak_sustained_active";; *) M="$M,$b.sum";; esac; fi
done
echo "metrics: $M"
el ncu raw mix
timeout 120 $NCU --csv --page raw --clock-control none --metrics "$M,device__attribute_display_name,device__attribute_multiprocessor_count" -c 80 python3 devrec/mix.py > $OUT/ncu_raw_mix_h.csv 2> $W/ncu1.err; echo rc=$?; tail -5 $W/ncu1.err
el ncu details mix
timeout 120 $NCU --csv --clock-control none --metrics "$M" -c 80 python3 devrec/mix.py > $W/ncu_details_mix_h.csv 2> $W/ncu2.err; echo rc=$?; tail -5 $W/ncu2.err
el kineto mix
timeout 60 python3 devrec/mix.py --kineto $W/kineto_mix_h.json; echo rc=$?
el profile runs
for v in "fp32:--precision float32" "bf16fixed:--precision bfloat16 --fixed" "fp16:--precision float16"; do
  n=${v%%:*}; a=${v#*:}
  el "profile $n"
  timeout 90 python3 -m tcreport profile --backend torch --output-dir $W/profile_$n --iter-start 2 --iter-stop 5 examples/torch_cnn.py -- $a --steps 8 --batch-size 256 --image-size 64 2>&1 | tail -40; echo rc=$?; python3 -m tcreport summary $W/profile_$n 2>&1 | head -60
done
el report counters
python3 -m tcreport report $W/kineto_mix_h.json --counters $OUT/ncu_raw_mix_h.csv -o $W/mix_counters.html 2>&1 | tail -30
python3 -m tcreport summary $W/kineto_mix_h.json --counters $OUT/ncu_raw_mix_h.csv 2>&1 | tail -40
el pack
cd $W && gzip -k kineto_mix_h.json && tar czf $OUT/profile_runs.tgz profile_* mix_counters.html && cp kineto_mix_h.json.gz ncu_details_mix_h.csv $OUT/ ; ls -la $OUT
el done
