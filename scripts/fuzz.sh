#!/usr/bin/env bash
# Fuzzes every parser of user input for a bounded number of inputs (issue #23) and
# prints what ran, for docs/hardening.md. Proptest drives it: each target is a proptest
# in crates/core/tests/fuzz.rs or crates/server/tests/fuzz.rs, run here with
# TAILOR_FUZZ_CASES inputs (default a million) instead of CI's 2,000.
#
#   bash scripts/fuzz.sh            # a million inputs per target
#   CASES=100000 bash scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CASES=${CASES:-1000000}
cargo build --release --tests -p tailor-core -p tailor-server >/dev/null 2>&1 \
  || cargo build --release --tests -p tailor-core -p tailor-server
run() {
  local package=$1 target=$2
  local started ended
  started=$(date +%s.%N)
  if TAILOR_FUZZ_CASES=$CASES cargo test --release -q -p "$package" --test fuzz -- --exact "$target" \
      >"/tmp/tailor-fuzz-$target.log" 2>&1; then
    ended=$(date +%s.%N)
    printf '%-20s %9d inputs  %7.1f s  no failure\n' "$target" "$CASES" "$(awk "BEGIN{print $ended - $started}")"
  else
    printf '%-20s FAILED: see /tmp/tailor-fuzz-%s.log\n' "$target" "$target"
    tail -30 "/tmp/tailor-fuzz-$target.log"
    exit 1
  fi
}
echo "fuzzing, $CASES inputs per target, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
for t in profile_csv distribution_csv trace_csv shard_log_csv table_json spec_strings; do
  run tailor-core "$t"
done
run tailor-server search_parameters
