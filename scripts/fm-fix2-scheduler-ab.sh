#!/bin/bash
# Interleaved live A/B at RPS over the given seeds (3,000 requests each): FM and FIX-2
# (the demo's FM table at TABLE, default /tmp/tr/fm.csv, from `tailor plan fm ...
# --max-degree 2 --cores 2 --step-ms 0.25 --max-interval-ms 60 --percentile 0.99
# --max-load 60 --thread-model busy --wait-model running`), each under the fair scheduler
# and SCHED_RR, in an order rotated per seed. docs/demo.md, 2026-11-25 afternoon.
# Usage: scripts/fm-fix2-scheduler-ab.sh RPS SEED...
RPS=$1; shift
TABLE=${TABLE:-/tmp/tr/fm.csv}
VARIANTS="fm-fair --policy fm --table $TABLE --scheduler fair
fix2-fair --policy fix:2 --scheduler fair
fm-rr --policy fm --table $TABLE --scheduler rr
fix2-rr --policy fix:2 --scheduler rr" exec "$(dirname "$0")/ab-live.sh" "$RPS" 3000 "$@"
