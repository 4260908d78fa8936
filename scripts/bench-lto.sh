#!/usr/bin/env bash
# What fat LTO and one codegen unit buy (issue #22), for BENCHMARKS.md: two builds from
# clean, `release` (cargo's defaults: thin-local LTO, 16 codegen units) and `release-lto`
# (fat LTO, one codegen unit), timed; then the planner, simulator and runtime benchmarks
# with each binary, interleaved round by round so that the machine's drift hits both.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
# WORK=DIR reuses the builds an earlier run left there (KEEP=1 keeps them).
work=${WORK:-$(mktemp -d)}
build() { # profile
  local dir=$work/$1
  local start end
  start=$(date +%s.%N)
  CARGO_TARGET_DIR=$dir cargo build --profile "$1" --quiet -p tailor-cli
  end=$(date +%s.%N)
  echo "build --profile $1 from clean: $(echo "$end - $start" | bc) s, binary $(stat -c %s "$dir/$1/tailor") bytes"
}
[ -x "$work/release/release/tailor" ] || build release
[ -x "$work/release-lto/release-lto/tailor" ] || build release-lto
A=$work/release/release/tailor
B=$work/release-lto/release-lto/tailor
$A profile generate --demand shape:lucene --requests 10000 --max-degree 4 --seed 1 \
  --out "$work/lucene.csv"
$A plan fm --profile "$work/lucene.csv" --cores 16 --max-degree 4 --step-ms 5 \
  --max-interval-ms 500 --percentile 0.99 --max-load 60 --out "$work/fm.json" 2>/dev/null
wall() {
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null 2>&1
  end=$(date +%s.%N)
  printf "%.3f" "$(echo "$end - $start" | bc)"
}
planner() { $1 plan fm --profile "$work/lucene.csv" --cores 15 --max-degree 4 --step-ms 5 \
  --max-interval-ms 500 --percentile 0.99 --max-load 30 --out /dev/null; }
sim_fm() { $1 simulate --cores 16 --policy fm --table "$work/fm.json" --demand shape:lucene \
  --arrivals poisson --rps 36 --requests 100000 --seed 1 --quantum-ms 5; }
sim_seq() { $1 simulate --cores 16 --policy seq --demand exp:10 --arrivals poisson \
  --rps 1200 --requests 4000000 --seed 1; }
echo "round | planner release | planner release-lto | sim FM release | sim FM release-lto | sim SEQ release | sim SEQ release-lto"
for r in $(seq "$ROUNDS"); do
  echo "$r | $(wall planner $A) | $(wall planner $B) | $(wall sim_fm $A) | $(wall sim_fm $B) | $(wall sim_seq $A) | $(wall sim_seq $B)"
done
echo "runtime overhead (criterion), each profile:"
for p in release release-lto; do
  echo "-- $p"
  CARGO_TARGET_DIR=$work/$p cargo bench --profile "$p" -p tailor-runtime --bench overhead \
    -- --noplot 2>/dev/null | grep -E "^(scheduling|throughput)|time:" || true
done
[ -n "${KEEP:-}" ] || rm -rf "$work"
