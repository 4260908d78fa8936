#!/usr/bin/env bash
# Benchmarks `tailor plan fm` at paper scale (BENCHMARKS.md): a 10,000-request
# shape:lucene profile, n = 4, step 5 ms, y = 500 ms, Q = 60, beta = 0.99, 15 cores, with
# the planner's defaults (target parallelism 15, the running wait model).
# Also runs the Fig. 7 exhaustive reference side by side on a coarser grid (step 25 ms),
# and, with FULL=1, on the paper-scale grid (about an hour of 2 cores), and checks that
# the tables are identical.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
T=target/release/tailor
dir=$(mktemp -d)
$T profile generate --demand shape:lucene --requests 10000 --max-degree 4 --seed 1 \
  --out "$dir/lucene10k.csv"
args=(--profile "$dir/lucene10k.csv" --cores 15 --max-degree 4
      --max-interval-ms 500 --percentile 0.99 --max-load 60)
measure() { /usr/bin/time -f "  wall %e s, user %U s, max RSS %M KB" "$@"; }

same() {
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
bad = [x["load"] for x, y in zip(a["rows"], b["rows"])
       if x["intervals_ms"] != y["intervals_ms"]
       or abs(x["tail_ms"] - y["tail_ms"]) > 1e-9 * max(1, abs(y["tail_ms"]))
       or abs(x["mean_ms"] - y["mean_ms"]) > 1e-9 * max(1, abs(y["mean_ms"]))]
print("  tables identical" if not bad else f"  tables DIFFER at loads {bad}")
PY
}

echo "paper scale, step 5 ms, fast exact search (3 runs):"
for _ in 1 2 3; do measure $T plan fm "${args[@]}" --step-ms 5 --out "$dir/fast5.json"; done
echo "step 25 ms: fast, then Fig. 7 exhaustive:"
measure $T plan fm "${args[@]}" --step-ms 25 --out "$dir/fast25.json"
measure $T plan fm "${args[@]}" --step-ms 25 --method exhaustive --out "$dir/ex25.json"
same "$dir/fast25.json" "$dir/ex25.json"
if [ "${FULL:-0}" = 1 ]; then
  echo "step 5 ms: Fig. 7 exhaustive (long):"
  measure $T plan fm "${args[@]}" --step-ms 5 --method exhaustive --out "$dir/ex5.json"
  same "$dir/fast5.json" "$dir/ex5.json"
fi
rm -rf "$dir"
