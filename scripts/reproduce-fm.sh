#!/usr/bin/env bash
# Reproduces the FM paper's evaluation (Haque et al., ASPLOS 2015, §6 and §7) in the
# simulator; docs/reproduction.md shows its output. Takes a few minutes on 2 cores.
#
#   bash scripts/reproduce-fm.sh [OUTPUT_DIR]
#
# Every run uses 20,000 requests (the first 5% are warm-up, leaving 19,000 measured) and
# the table cells are the median over 5 seeds.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/tailor-reproduction}
mkdir -p "$out"
cargo build --release --quiet
T=target/release/tailor
SEEDS=5
REQUESTS=20000
common=(--arrivals poisson --requests "$REQUESTS" --seed 1 --seeds "$SEEDS")

# Loads from 30% to 90% of SEQ's capacity (cores / mean work), in steps of 10%.
loads() {
  python3 -c "
c = $1 * 1000.0 / $2
print(f'{0.3*c:.4f}:{0.9*c + 1e-3:.4f}:{0.1*c:.4f}')"
}
mean_work() { $T profile describe "$1" | awk '/work_ms mean/ {print $3}'; }

# The median over seeds of one policy's p99 at one load, from JSON summaries.
median_p99() {
  python3 -c "
import json, statistics, sys
rows = [json.loads(l) for l in open('$1')]
print(statistics.median(r['latency_ms']['p99'] for r in rows if r['policy'] == '$2' and abs(r['rps'] - $3) < 1e-9))"
}

# setup NAME CORES MAX_DEGREE TARGET_PARALLELISM STEP_MS MAX_INTERVAL_MS: a 10,000-request
# shape:NAME profile, its FM table and its Adaptive table (for the cores); prints the mean
# work and SEQ's capacity.
setup() {
  local name=$1 cores=$2 degree=$3 target=$4 step=$5 y=$6
  $T profile generate --demand "shape:$name" --requests 10000 --max-degree "$degree" --seed 1 \
    --out "$out/$name.csv"
  local mean
  mean=$(mean_work "$out/$name.csv")
  echo "mean work $mean ms; SEQ capacity $(python3 -c "print(round($cores * 1000 / $mean, 1))") rps"
  $T plan fm --profile "$out/$name.csv" --max-degree "$degree" --target-parallelism "$target" \
    --step-ms "$step" --max-interval-ms "$y" --percentile 0.99 --max-load 60 \
    --out "$out/$name-fm.json"
  $T plan adaptive --profile "$out/$name.csv" --max-degree "$degree" \
    --target-parallelism "$cores" --max-load 60 --out "$out/$name-adaptive.json"
}

# quote FM_POLICY RPS SIMULATE_ARGS...: FM's and Adaptive's median p99 at one load.
quote() {
  local fm=$1 rps=$2
  shift 2
  $T simulate "$@" --rps "$rps" --policy "$fm" --policy adaptive --format json \
    > "$out/quote.json"
  local f a
  f=$(median_p99 "$out/quote.json" "$fm" "$rps")
  a=$(median_p99 "$out/quote.json" adaptive "$rps")
  python3 -c "print(f'$rps rps: FM p99 {$f:.1f} ms, Adaptive {$a:.1f} ms, FM lower by {100*(1-$f/$a):.1f}%')"
}

echo "# Lucene: 15 cores, target parallelism 24, n = 4, step and quantum 5 ms"
setup lucene 15 4 24 5 500
lucene_mean=$(mean_work "$out/lucene.csv")
lucene_loads=$(loads 15 "$lucene_mean")
mid=$(python3 -c "print(round(0.6 * 15000 / $lucene_mean, 2))")
$T plan rc --demand "profile:$out/lucene.csv" --cores 15 --rps "$mid" --max-degree 4 \
  --out "$out/lucene-rc.json"
rc=$(python3 -c "import json; print(json.load(open('$out/lucene-rc.json'))['policy'])")
lucene=(--cores 15 --demand "profile:$out/lucene.csv" --table "$out/lucene-fm.json"
        --table "$out/lucene-adaptive.json" "${common[@]}")

echo
echo "## FM against SEQ, FIX-2, FIX-4, Adaptive and RC (RC planned at $mid rps: $rc)"
$T simulate "${lucene[@]}" --rps "$lucene_loads" --policy seq --policy fix:2 \
  --policy fix:4 --policy adaptive --policy "$rc" --policy fm

echo "## Fixed-interval incremental parallelism (FM paper Fig. 4)"
$T simulate "${lucene[@]}" --rps "$lucene_loads" --policy seq --policy fix:4 \
  --policy interval:20:4 --policy interval:100:4 --policy interval:500:4

echo "## Boosting"
$T simulate "${lucene[@]}" --rps "$lucene_loads" --policy fm --policy fm:noboost

echo "## FM against Adaptive at the loads the paper quotes (40 and 43 rps; paper: 32% and 30%)"
for rps in 40 43; do quote fm "$rps" "${lucene[@]}"; done

echo
echo "## Load variation: 45, 30, 45, 30 rps, 500 requests each; p99 of the last 100 of each"
echo "## (median of 10 seeds)"
for policy in fm seq fix:2 fix:4; do
  $T simulate --cores 15 --demand "profile:$out/lucene.csv" --table "$out/lucene-fm.json" \
    --arrivals phases:45*500,30*500,45*500,30*500 --rps 1 --requests 2000 --seed 1 \
    --seeds 10 --policy "$policy" --format json > "$out/variation-$policy.json"
done
python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
print(f"{'policy':>8} " + " ".join(f"{'phase ' + str(i + 1):>10}" for i in range(4)))
for policy in ["fm", "seq", "fix:2", "fix:4"]:
    runs = [json.loads(l) for l in open(f"{out}/variation-{policy}.json")]
    cells = [statistics.median(r["phases"][i]["p99_last_100_ms"] for r in runs) for i in range(4)]
    print(f"{policy:>8} " + " ".join(f"{c:>10.1f}" for c in cells))
PY

echo
echo "# Bing: 12 cores, target parallelism 16, n = 3, no boosting (FM paper §7.1)"
setup bing 12 3 16 1 200
bing_mean=$(mean_work "$out/bing.csv")
bing=(--cores 12 --demand "profile:$out/bing.csv" --table "$out/bing-fm.json"
      --table "$out/bing-adaptive.json" "${common[@]}")
echo
echo "## FM against SEQ, FIX-3 with the load gate at 30, and Adaptive"
$T simulate "${bing[@]}" --rps "$(loads 12 "$bing_mean")" --policy seq \
  --policy fix:3:gate=30 --policy adaptive --policy fm:noboost --policy fm

echo "## FM against Adaptive at the loads the paper quotes (180 and 260 rps; paper: 26% and 24%)"
for rps in 180 260; do quote fm:noboost "$rps" "${bing[@]}"; done
