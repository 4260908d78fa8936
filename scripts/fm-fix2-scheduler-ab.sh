#!/bin/bash
# Interleaved live A/B at RPS over the given seeds: FM and FIX-2 (the demo's FM table at
# /tmp/tr/fm.csv, from `tailor plan fm ... --max-degree 2 --cores 2 --step-ms 0.25
# --max-interval-ms 60 --percentile 0.99 --max-load 60 --thread-model busy --wait-model
# running`), each under the fair scheduler and SCHED_RR, in an order rotated per seed.
# Prints: seed, variant, p99 ms, mean ms, CPU utilization. docs/demo.md, 2026-11-25 afternoon.
P=${PROFILE:-~/.cache/tailor/profile-queries-gcide-16seg-2000q-seed1-mix2-400p-r10-m2.csv}
T=${TAILOR:-target/release/tailor}
RPS=$1; shift
i=0
for s in "$@"; do
  vs=(fm-fair fix2-fair fm-rr fix2-rr)
  # rotate the order each seed
  for k in 0 1 2 3; do
    v=${vs[$(( (k + i) % 4 ))]}
    case $v in fm*) pol=fm;; fix2*) pol=fix:2;; esac
    case $v in *-rr) sch=rr;; *) sch=fair;; esac
    out=$($T run --workload search --search-profile $P --policy $pol --table ${TABLE:-/tmp/tr/fm.csv} --cores 2 --rps $RPS --requests 3000 --seed $s --quantum-ms 0.25 --scheduler $sch 2>/dev/null)
    echo "$s $v $(echo "$out" | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); l=d['latency_ms']; print(round(l['p99'],2), round(l['mean'],3), round(d['cpu_utilization'],3))")"
  done
  i=$((i+1))
done
