#!/usr/bin/env python3
"""Re-planning under drift, live (issue 41): `tailor serve --replan-every` against a stale and
a fresh offline table, on a synthetic workload whose mean demand doubles halfway through.

Three servers, each started fresh for each run and given the same requests:
  replan   FM with the table planned offline for the first demand, re-planning every --every
  stale    FM with that table, never re-planned
  fresh    FM with a table planned offline for the second demand
The load is `tailor load --arrivals phases:R*N,R*N --work DEMAND --work scale:2:DEMAND`: the same
rate throughout, the second phase's work drawn at twice the mean. Its "phases" give each half's
p99. While a run lasts, /metrics is read every second for tailor_policy_swaps_total, which
dates each swap from the moment the demand changed.

Offline tables: `tailor profile --workload synthetic:D` (each request alone at degrees 1..cores),
then `tailor plan fm --profile P --cores M`, as a service owner would plan them.

    python3 scripts/drift-live.py [--quick] [--out DIR] [--rounds 3] [--half-s 45]

Results go to --out (default runs/drift/DATE) as they come: results.json, report.md, and
each server's log. Nothing else should use the CPU while it runs.
"""

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIGS = ("replan", "stale", "fresh")


def sh(args, timeout=1800):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise SystemExit(f"error: `{' '.join(map(str, args))[:300]}` exited {r.returncode}:\n{r.stderr[-2000:]}")
    return r.stdout, r.stderr


def start_server(tailor, log_path, flags):
    """Starts `tailor serve` on a free port with stderr to log_path; returns (process, base URL)."""
    log = open(log_path, "w")
    p = subprocess.Popen([str(tailor), "serve", "--listen", "127.0.0.1:0", *map(str, flags)],
                         stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + 120
    while time.time() < deadline:
        m = re.search(r"http://([\d.]+:\d+)", log_path.read_text())
        if m:
            return p, f"http://{m.group(1)}"
        if p.poll() is not None:
            raise SystemExit(f"the server exited before listening; see {log_path}")
        time.sleep(0.05)
    p.kill()
    raise SystemExit(f"the server did not start; see {log_path}")


def stop_server(p):
    p.terminate()
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()


def metric(base, name):
    try:
        with urllib.request.urlopen(base + "/metrics", timeout=2) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def mean_t1(profile_csv):
    rows = Path(profile_csv).read_text().splitlines()[1:]
    return statistics.mean(float(r.split(",")[1]) for r in rows if r.strip())


def one_run(a, tailor, out, config, round_no, tables, rps, n):
    flags = ["--workload", f"synthetic:{a.demand}", "--policy", "fm", "--cores", a.cores,
             "--spin-rate", a.spin_rate, "--table", tables["b" if config == "fresh" else "a"]]
    if config == "replan":
        flags += ["--replan-every", a.every, "--profile-window", a.window,
                  "--replan-min-requests", a.min_requests]
    log = out / f"serve-{config}-r{round_no}.log"
    server, base = start_server(tailor, log, flags)
    swaps, stop = [], threading.Event()
    started = time.time()

    def watch():
        last = 0.0
        while not stop.wait(1.0):
            s = metric(base, "tailor_policy_swaps_total")
            if s is not None and s > last:
                swaps.append(round(time.time() - started, 1))
                last = s

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        stdout, _ = sh([tailor, "load", "--format", "json", "--url", base, "--rps", f"{rps:.3f}", "--requests", 2 * n,
                        "--arrivals", f"phases:{rps:.3f}*{n},{rps:.3f}*{n}", "--seed", round_no,
                        "--work", a.demand, "--work", f"scale:2:{a.demand}"], timeout=3 * a.half_s + 120)
    finally:
        stop.set()
        watcher.join()
        stop_server(server)
    summary = json.loads(stdout)
    phases = summary.get("phases", [])
    change_s = a.half_s  # the load starts about when the server is up; the demand changes N / R later
    return {
        "config": config, "round": round_no,
        "p99_first_ms": phases[0]["p99_ms"], "p99_second_ms": phases[1]["p99_ms"],
        "mean_second_ms": phases[1]["mean_ms"], "p99_ms": summary["latency_ms"]["p99"],
        "unavailable": summary.get("unavailable"), "failed": summary.get("failed"),
        "swaps_s": swaps, "swaps_after_change_s": [round(s - change_s, 1) for s in swaps if s > change_s],
    }


def report(data):
    lines = [f"# Re-planning under drift, {data['date']}", "", data["setup"], "",
             "| config | " + " | ".join(f"round {r}" for r in range(1, data["rounds"] + 1))
             + " | median p99, second half (ms) |", "|---" * (data["rounds"] + 2) + "|"]
    med = {}
    for c in CONFIGS:
        runs = sorted((r for r in data["runs"] if r["config"] == c), key=lambda r: r["round"])
        if not runs:
            continue
        med[c] = statistics.median(r["p99_second_ms"] for r in runs)
        cells = {r["round"]: f"{r['p99_second_ms']:.2f}" for r in runs}
        lines.append(f"| {c} | " + " | ".join(cells.get(k, "-") for k in range(1, data["rounds"] + 1))
                     + f" | {med[c]:.2f} |")
    if "fresh" in med:
        lines += [""] + [f"- {c} / fresh: {med[c] / med['fresh']:.3f}" for c in ("replan", "stale") if c in med]
    swaps = [r["swaps_after_change_s"] for r in data["runs"] if r["config"] == "replan"]
    lines += ["", "Swaps after the change (s from the change, each replan run): "
              + "; ".join(", ".join(map(str, s)) or "none" for s in swaps)]
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=None)
    p.add_argument("--demand", default="exp:5", help="the first half's demand; the second's is scale:2 of it")
    p.add_argument("--load", type=float, default=0.3, help="the first half's load (the second's is twice)")
    p.add_argument("--half-s", type=float, default=45.0, help="seconds of each half")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--every", default="10s")
    p.add_argument("--window", type=int, default=1000, help="--profile-window of the replan server")
    p.add_argument("--min-requests", type=int, default=500)
    p.add_argument("--cores", type=int, default=os.cpu_count())
    p.add_argument("--quick", action="store_true", help="a small trial of every step, not a result")
    a = p.parse_args()
    if a.quick:
        a.half_s, a.rounds, a.every, a.window, a.min_requests = 6.0, 1, "2s", 300, 100
    date = datetime.date.today().isoformat()
    out = Path(a.out or REPO / "runs" / "drift" / date)
    out.mkdir(parents=True, exist_ok=True)
    tailor = REPO / "target" / "release" / "tailor"
    print("building the release binary", flush=True)
    sh(["cargo", "build", "--release", "-q", "-p", "tailor-cli"])
    _, err = sh([tailor, "run", "--workload", "synthetic:const:1", "--policy", "seq", "--rps", "100",
                 "--requests", "20", "--seed", "1"])
    a.spin_rate = re.search(r"spin loop at ([0-9.]+)", err).group(1)
    tables = {}
    for key, demand in (("a", a.demand), ("b", f"scale:2:{a.demand}")):
        profile, table = out / f"profile-{key}.csv", out / f"table-{key}.json"
        print(f"profiling synthetic:{demand} offline and planning its table", flush=True)
        sh([tailor, "profile", "--workload", f"synthetic:{demand}", "--degrees", f"1..{a.cores}",
            "--requests", 100 if a.quick else 300, "--repeat", 3 if a.quick else 5, "--spin-rate", a.spin_rate,
            "--out", profile])
        sh([tailor, "plan", "fm", "--profile", profile, "--cores", a.cores, "--out", table])
        tables[key] = table
    rps = a.load * a.cores * 1000.0 / mean_t1(out / "profile-a.csv")
    n = int(rps * a.half_s)
    data = {"date": date, "rounds": a.rounds, "runs": [], "rps": rps, "per_half": n,
            "setup": (f"{a.cores} cores; {rps:.1f} requests/s throughout, {n} per half; first half "
                      f"synthetic:{a.demand} ({a.load:.0%} load), second scale:2:{a.demand} ({2 * a.load:.0%}); "
                      f"replan: --replan-every {a.every} --profile-window {a.window} "
                      f"--replan-min-requests {a.min_requests}; spin rate {a.spin_rate}. "
                      f"Command: python3 scripts/drift-live.py {' '.join(sys.argv[1:])}")}
    for r in range(1, a.rounds + 1):
        order = CONFIGS[r - 1:] + CONFIGS[:r - 1]  # rotated, so no config always runs first
        for config in order:
            print(f"round {r}: {config}", flush=True)
            data["runs"].append(one_run(a, tailor, out, config, r, tables, rps, n))
            (out / "results.json").write_text(json.dumps(data, indent=1) + "\n")
            (out / "report.md").write_text(report(data))
    print(report(data))


if __name__ == "__main__":
    main()
