#!/usr/bin/env bash
# Simulator agreement (issue #4, docs/validation.md): the synthetic workload with
# shape:lucene demand scaled to a mean near 20 ms and speedup amdahl:0.05, on 2 cores, at
# 30%, 50% and 70% of SEQ's capacity, live and simulated with the same seed, for SEQ,
# FIX-2, Adaptive and FM (n = 2, the planner's defaults: target parallelism 2, the running
# wait model). Each run has 10,500 requests (500 warm-up,
# 10,000 measured). Takes about 35 minutes; keep the machine otherwise idle. RATES and
# POLICIES (space-separated) run a subset.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/tailor-validation}
mkdir -p "$out"
cargo build --release --quiet
T=target/release/tailor
DEMAND="scale:0.075:shape:lucene"
REQUESTS=${REQUESTS:-10500}
$T profile generate --demand "$DEMAND" --speedup amdahl:0.05 --requests 10000 --max-degree 2 \
  --seed 1 --out "$out/profile.csv"
$T plan fm --profile "$out/profile.csv" --cores 2 --max-degree 2 --step-ms 1 \
  --max-interval-ms 200 --percentile 0.99 --max-load 30 --out "$out/fm.json" 2>/dev/null
$T plan adaptive --profile "$out/profile.csv" --max-degree 2 --target-parallelism 2 \
  --max-load 30 --out "$out/adaptive.json"
printf "%-6s %5s  %9s %9s %6s  %9s %9s %6s\n" policy rps live_p99 sim_p99 diff% \
  live_mean sim_mean diff%
for rps in ${RATES:-30 50 70}; do
  for policy in ${POLICIES:-seq fix:2 adaptive fm}; do
    $T run --workload "synthetic:$DEMAND:amdahl:0.05" --policy "$policy" --table "$out/fm.json" \
      --table "$out/adaptive.json" \
      --rps "$rps" --requests "$REQUESTS" --seed 1 --cores 2 --warmup 500 \
      > "$out/live-$policy-$rps.json" 2> "$out/live-$policy-$rps.err"
    $T simulate --cores 2 --demand "$DEMAND" --speedup amdahl:0.05 --arrivals poisson \
      --rps "$rps" --requests "$REQUESTS" --seed 1 --warmup 500 --policy "$policy" \
      --table "$out/fm.json" --table "$out/adaptive.json" > "$out/sim-$policy-$rps.json"
    python3 - "$out/live-$policy-$rps.json" "$out/sim-$policy-$rps.json" "$policy" "$rps" <<'PY'
import json, sys
live, sim = (json.load(open(p)) for p in sys.argv[1:3])
lp, sp = live["latency_ms"]["p99"], sim["latency_ms"]["p99"]
lm, sm = live["latency_ms"]["mean"], sim["latency_ms"]["mean"]
print(f"{sys.argv[3]:<6} {sys.argv[4]:>5}  {lp:9.1f} {sp:9.1f} {100*(lp-sp)/sp:+6.1f}  "
      f"{lm:9.2f} {sm:9.2f} {100*(lm-sm)/sm:+6.1f}")
PY
  done
done
