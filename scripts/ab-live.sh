#!/bin/bash
# Interleaved live A/B: at RPS, N requests a run, for each seed every variant once, in an
# order rotated per seed. Variants come from the environment as lines `LABEL ARGS...`
# in VARIANTS, ARGS being `tailor run` flags (policy, table, scheduler). Prints: seed,
# label, p99 ms, mean ms, CPU utilization. Used by fm-fix2-scheduler-ab.sh and
# fm-seq-ab.sh.
# Usage: VARIANTS=$'seq --policy seq\nfix2 --policy fix:2' scripts/ab-live.sh RPS N SEED...
P=${PROFILE:-~/.cache/tailor/profile-queries-gcide-16seg-2000q-seed1-mix2-400p-r10-m2.csv}
T=${TAILOR:-target/release/tailor}
RPS=$1; N=$2; shift 2
mapfile -t vs <<< "$VARIANTS"
i=0
for s in "$@"; do
  for k in "${!vs[@]}"; do
    read -r label args <<< "${vs[$(( (k + i) % ${#vs[@]} ))]}"
    out=$($T run --workload search --search-profile $P $args --cores 2 --rps $RPS --requests $N --seed $s --quantum-ms 0.25 2>/dev/null)
    echo "$s $label $(echo "$out" | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); l=d['latency_ms']; print(round(l['p99'],2), round(l['mean'],3), round(d['cpu_utilization'],3))")"
  done
  i=$((i+1))
done
