#!/bin/bash
# Interleaved live A/B at RPS over seeds, N requests each: SEQ, FM with the table FM2
# (the demo's: `tailor plan fm --profile P --max-degree 2 --cores 2 --target-parallelism 2
# --step-ms 0.25 --max-interval-ms 16 --percentile 0.99 --max-load 60 --thread-model busy
# --wait-model running`), FM with the table FM3 (the same at --target-parallelism 3), and
# FIX-2, in an order rotated per seed. docs/demo.md, "Widened for few rounds".
# Usage: FM2=fm2.csv FM3=fm3.csv scripts/fm-seq-ab.sh RPS N SEED...
VARIANTS="seq --policy seq
fm2 --policy fm --table $FM2
fm3 --policy fm --table $FM3
fix2 --policy fix:2" exec "$(dirname "$0")/ab-live.sh" "$@"
