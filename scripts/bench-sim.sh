#!/usr/bin/env bash
# Simulator benchmarks for BENCHMARKS.md:
#   1. a 100,000-request FM simulation at 16 cores, 5 ms quantum, shape:lucene;
#   2. SEQ at 16 cores (M/M/16 at utilization 0.75): requests simulated per second;
#   3. the same M/M/16 model in SimPy (installed from PyPI into a scratch virtualenv),
#      side by side with tailor on the same number of requests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
T=target/release/tailor
dir=$(mktemp -d)
measure() { /usr/bin/time -f "  wall %e s, max RSS %M KB" "$@"; }

$T profile generate --demand shape:lucene --requests 10000 --max-degree 4 --seed 1 \
  --out "$dir/lucene.csv"
$T plan fm --profile "$dir/lucene.csv" --cores 16 --max-degree 4 --step-ms 5 \
  --max-interval-ms 500 --percentile 0.99 --max-load 60 --out "$dir/fm.json" 2>/dev/null
echo "1. FM, 100,000 requests, 16 cores, quantum 5 ms, shape:lucene at 36 rps (60% load):"
for _ in 1 2 3; do
  measure $T simulate --cores 16 --policy fm --table "$dir/fm.json" --demand shape:lucene \
    --arrivals poisson --rps 36 --requests 100000 --seed 1 --quantum-ms 5 > /dev/null
done

echo "2. SEQ, 4,000,000 requests, 16 cores, exp:10 at 1200 rps (utilization 0.75):"
for _ in 1 2 3; do
  measure $T simulate --cores 16 --policy seq --demand exp:10 --arrivals poisson \
    --rps 1200 --requests 4000000 --seed 1 > /dev/null
done

N=${SIMPY_REQUESTS:-1000000}
echo "3. M/M/16 at 1200 rps, exp:10: tailor with 5,000,000 requests and SimPy with $N,"
echo "   interleaved, ${ROUNDS:-7} rounds; rates in requests per second"
python3 -m venv "$dir/venv"
"$dir/venv/bin/pip" install --quiet simpy
ratios=()
for round in $(seq "${ROUNDS:-7}"); do
  start=$(date +%s.%N)
  $T simulate --cores 16 --policy seq --demand exp:10 --arrivals poisson --rps 1200 \
    --requests 5000000 --seed 1 > /dev/null
  end=$(date +%s.%N)
  tailor_rate=$(python3 -c "print(5000000 / ($end - $start))")
  simpy_line=$("$dir/venv/bin/python" scripts/simpy_mmm.py 16 1200 10 "$N")
  simpy_rate=$(echo "$simpy_line" | sed -E 's/.* = ([0-9,]+) requests.*/\1/' | tr -d ,)
  python3 -c "print(f'  round $round: tailor {$tailor_rate:,.0f}/s, SimPy {$simpy_rate:,.0f}/s, ratio {$tailor_rate/$simpy_rate:.1f}x')"
  ratios+=("$(python3 -c "print($tailor_rate / $simpy_rate)")")
done
joined=$(IFS=,; echo "${ratios[*]}")
python3 -c "import statistics; r = [$joined]; print(f'  median ratio {statistics.median(r):.1f}x over {len(r)} rounds (min {min(r):.1f}x, max {max(r):.1f}x)')"
rm -rf "$dir"
