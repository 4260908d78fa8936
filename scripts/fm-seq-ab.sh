#!/bin/bash
# Interleaved live A/B at RPS over seeds, N requests each: SEQ, FM with the table FM2
# (the demo's: `tailor plan fm --profile P --max-degree 2 --cores 2 --target-parallelism 2
# --step-ms 0.25 --max-interval-ms 16 --percentile 0.99 --max-load 60 --thread-model busy
# --wait-model running`), FM with the table FM3 (the same at --target-parallelism 3), and
# FIX-2, in an order rotated per seed. Prints: seed, variant, p99 ms, mean ms, CPU
# utilization. docs/demo.md, "Widened for few rounds".
# Usage: FM2=fm2.csv FM3=fm3.csv scripts/fm-seq-ab.sh RPS N SEED...
P=${PROFILE:-~/.cache/tailor/profile-queries-gcide-16seg-2000q-seed1-mix2-400p-r10-m2.csv}
T=${TAILOR:-target/release/tailor}
RPS=$1; N=$2; shift 2
i=0
for s in "$@"; do
  vs=(seq fm2 fm3 fix2)
  for k in 0 1 2 3; do
    v=${vs[$(( (k + i) % 4 ))]}
    case $v in
      seq) a="--policy seq";;
      fm2) a="--policy fm --table $FM2";;
      fm3) a="--policy fm --table $FM3";;
      fix2) a="--policy fix:2";;
    esac
    out=$($T run --workload search --search-profile $P $a --cores 2 --rps $RPS --requests $N --seed $s --quantum-ms 0.25 2>/dev/null)
    echo "$s $v $(echo "$out" | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); l=d['latency_ms']; print(round(l['p99'],2), round(l['mean'],3), round(d['cpu_utilization'],3))")"
  done
  i=$((i+1))
done
