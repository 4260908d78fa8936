#!/usr/bin/env bash
# Measures `tailor serve` (issue 6): the server's own overhead per request with empty
# synthetic work, latency agreement between `tailor load` and the integrated harness
# (`tailor run`) at the same policy and load, and wrk against the server at moderate load
# and in overload. Figures go to BENCHMARKS.md.
#
#   bash scripts/http-bench.sh            # everything
#   PARTS="overhead agreement" bash ...   # a subset (overhead, agreement, wrk)
#   ROUNDS=3 bash ...                     # agreement rounds (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
PARTS=${PARTS:-"overhead agreement wrk"}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-18080}
URL="http://127.0.0.1:$PORT"
cargo build --release -q
T=target/release/tailor
OUT=$(mktemp -d)
SERVER=""
trap '[ -n "$SERVER" ] && kill -TERM "$SERVER" 2>/dev/null; rm -rf "$OUT"' EXIT

# serve ARGS...: starts a server and waits for /healthz.
serve() {
    $T serve --listen "127.0.0.1:$PORT" "$@" 2>>"$OUT/serve.err" &
    SERVER=$!
    for _ in $(seq 100); do
        curl -sf "$URL/healthz" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "the server did not come up:" >&2
    cat "$OUT/serve.err" >&2
    exit 1
}
stop() {
    grep -E "VmHWM" "/proc/$SERVER/status" | sed 's/^/server peak memory /' || true
    kill -TERM "$SERVER"
    wait "$SERVER"
    SERVER=""
}
# The fields of a summary line: p50, p99, mean, utilization (and 503s for load).
fields() {
    python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
l = r["latency_ms"]
extra = "" if "unavailable" not in r else " 503s=%d failed=%d client_cpu=%.3f" % (r["unavailable"], r["failed"], r["client_cpu_utilization"])
print("p50=%.3f p99=%.3f mean=%.3f cpu=%.3f%s" % (l["p50"], l["p99"], l["mean"], r["cpu_utilization"], extra))'
}

if [[ " $PARTS " == *" overhead "* ]]; then
    echo "== overhead: synthetic work of 1 us, SEQ, 1,000 requests/s, 20,000 requests"
    serve --workload synthetic:const:0.001 --policy seq
    $T load --format json --url "$URL" --rps 1000 --requests 20000 --seed 1 2>/dev/null | tee "$OUT/o.json" | fields
    python3 - "$OUT/o.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print("server CPU per request: %.1f us" % (r["cpu_utilization"] * r["cores"] / r["rps"] * 1e6))
EOF
    curl -s "$URL/metrics" | python3 -c '
import sys
v = {}
for line in sys.stdin:
    if line.startswith("tailor_request_duration_seconds_"):
        k, x = line.rsplit(" ", 1)
        v[k] = float(x)
s, n = v["tailor_request_duration_seconds_sum"], v["tailor_request_duration_seconds_count"]
print("server time per request, receipt to answer: %.1f us (mean of %d)" % (s / n * 1e6, n))'
    stop
fi

if [[ " $PARTS " == *" agreement "* ]]; then
    # One spin rate for every process, so that both engines run requests of one length
    # (separate calibrations differ by several percent on this machine).
    RATE=$($T run --workload synthetic:const:1 --policy seq --rps 50 --requests 20 --seed 1 2>&1 >/dev/null \
        | sed -n 's/.*spin loop at \([0-9.]*\) iterations.*/\1/p')
    echo "spin rate $RATE iterations/us"
    # exp:5 on 2 cores at 200 requests/s is 50% load.
    for policy in seq fix:2; do
        for round in $(seq "$ROUNDS"); do
            echo "== agreement: synthetic:exp:5, $policy, 200 requests/s, 6,000 requests, round $round"
            printf 'run  '
            $T run --workload synthetic:exp:5 --spin-rate "$RATE" --policy "$policy" --rps 200 --requests 6000 --seed "$round" 2>/dev/null | fields
            serve --workload synthetic:exp:5 --spin-rate "$RATE" --policy "$policy" --seed "$round"
            printf 'load '
            $T load --format json --url "$URL" --rps 200 --requests 6000 --seed "$round" 2>/dev/null | fields
            stop
        done
    done
fi

if [[ " $PARTS " == *" wrk "* ]]; then
    if ! command -v wrk >/dev/null; then
        if [ "$(id -u)" = 0 ]; then
            apt-get install -y -q wrk >/dev/null
        else
            echo "wrk is missing: install it with: sudo apt-get install wrk" >&2
            exit 1
        fi
    fi
    echo "== wrk, moderate: 2 connections (closed loop), synthetic:exp:2, SEQ, 10 s"
    serve --workload synthetic:exp:2 --policy seq --queue-bound 32
    wrk -t1 -c2 -d10s --latency "$URL/work"
    echo "== wrk, overload: 256 connections, same server (queue bound 32), 10 s"
    wrk -t1 -c256 -d10s --timeout 5s --latency "$URL/work"
    curl -sf "$URL/healthz"
    echo
    stop
    tail -n 1 "$OUT/serve.err"
fi
