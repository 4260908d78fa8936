#!/usr/bin/env python3
"""A live check of tailor's policies against its simulator, on whatever machine runs it.

    python3 scripts/live-check.py [--out DIR] [--budget-s 470]   # full: GCIDE, up to 8 min on 16 cores
    python3 scripts/live-check.py --quick [--out DIR]            # CI: generated corpus, ~75 s on 2 cores

Phases, in order (each prints its estimated time first; progress goes to stderr with
timestamps, and everything is written under --out as it is measured):

1. Prepare: the corpus (full: Debian's GCIDE, else a generated one, said so; quick: a
   seeded generated corpus written into DIR), then `tailor profile --workload search
   --degrees 1..max(C,4)` of the queries (full: a 40-query pilot first sizes the profile
   to its share of the budget, at most 600 queries, --repeat 3). FIX-4 needs degree 4, so
   the profile covers at least degree 4 even on fewer cores.
2. Capacity: SEQ live at 1.5x the profile's capacity (C / mean t1), given as a trace of
   Poisson arrivals because `tailor run` refuses a rate above the profile's capacity; the
   throughput sustained is completed requests over (last finish - first arrival) from
   the records CSV. Every load below is a fraction of it.
3. Search cells: SEQ, FIX-2, FIX-4, tantivy's executor, Adaptive and FM at 30-90% of
   capacity (quick: 30, 60, 75%), in rounds; each round runs every (policy, load) cell once
   in a seeded shuffled order, with its own seeds. Round 0 runs its SEQ cells first (in a
   shuffled order), because the calibration needs them (phase 4), then the rest of round 0
   shuffled; later rounds shuffle all cells.
4. Calibrate after round 0's SEQ cells: `tailor calibrate` from the profile and those runs
   (--units = the index segments, 16). If it finds fewer than two SEQ loads below
   overload (a busy host), SEQ is also run at 15% and 22%, for the calibration only, and
   it is tried again; if it still fails, the error is reported and the search cells have
   no predictions. A calibration that `tailor simulate` refuses (a curve point below its
   floor) is repaired by clamping the point to the floor, and the report says so. Every
   search cell then gets the simulator's prediction with --calibration, computed right
   after the cell runs (the executor has no model in `tailor simulate`: its prediction
   stays empty). If `tailor plan fm --help` lists --calibration, FM is planned with it
   (FM's cells come after the calibration anyway); else, or if that fails, FM runs the
   table planned in phase 1 (--thread-model busy, tailor's runtime).
5. Work-stealing cells at 75%: steal-first, admit-first and tail-control on Bing-like
   work (examples/tc-bing-fig1.csv) and log-normal work (lognormal:10:13), the target at
   steal-first's live p99, tail-control's table planned at that target; each run with
   the simulator's prediction (same policy, demand, rps, seed, target; the executor's
   mechanics, --joins held --steal-size last-split, where `tailor simulate` has them).
6. Outputs under --out: cells.jsonl, capacity.json, profile, tables, calibration,
   machine.txt, commands.log (every command, its exit status and stderr), progress.log
   and report.md (rewritten every 6 cells, after every round, at the end, and on
   SIGTERM/SIGINT). --export DIR copies report.md, cells.jsonl and live-check.tar.gz (the
   rest, but the corpus and index) there each time: three files, for a machine that
   hands back only a few. --scratch DIR keeps the corpus and index out of --out.

On a lent machine with no network (no dict-gcide): carry a stripped binary and GCIDE's
two files in an ignored folder, e.g. `.live/` (strip -o .live/tailor target/release/tailor;
cp /usr/share/dictd/gcide.dict.dz /usr/share/dictd/gcide.index .live/), and run
    python3 scripts/live-check.py --tailor .live/tailor --gcide-dir .live \
        --out /tmp/lc --scratch /tmp/lc-scratch --export "$OUT"
The script runs a private copy of the binary, so a rebuild during the check is harmless.

The JVM workload (issue 40: OpenSearch with the tailor-fm plugin against its own modes `all`
and `none`, on the same GCIDE and queries) is scripts/opensearch-live.py; at 16 cores it takes
the machine's cores by default. A machine without Maven or a network runs it from a pack of
the jars, written here as one xz archive (jars stored uncompressed inside, so that xz compresses
the classes: 24 MiB instead of about 47):
    python3 scripts/opensearch-live.py --pack .live/jvm --pack-xz .live/jvm.tar.xz && rm -rf .live/jvm
With the stripped binary (14 MiB) and GCIDE's two files (17 MiB) the carry `.live` is about
55 MiB. There (Java 17 and Python 3.11 needed; an 8-minute budget):
    tar -xJf .live/jvm.tar.xz -C /tmp && python3 scripts/opensearch-live.py --prebuilt /tmp/jvm \\
        --tailor .live/tailor --gcide-dir .live --out "$OUT/os" --scratch /tmp/os \\
        --tailor-data /tmp/os-data --max-slice-count 16 --latency-bound-share 0.15 \\
        --rounds 3 --seconds 8 --profile-queries 200 --repeat 2 --low-load 0.02
The unpacked pack ran `--quick` here (2026-11-28); it has not run at 16 cores.

Standard library only (Python 3.11). Exit status 0 when the check ran, whatever it
found; non-zero only when it could not run (no binary, no profile, no capacity).
"""

import argparse
import csv
import datetime
import json
import math
import os
import random
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GCIDE_DIR = Path("/usr/share/dictd")  # where Debian's dict-gcide puts gcide.dict.dz and gcide.index
STEP_MS = 0.5
QUANTUM_MS = 0.5
SEGMENTS = 16  # `tailor run --segments` default: the units a search query is split into
POLICY_ORDER = ["SEQ", "FIX-2", "FIX-4", "executor", "Adaptive", "FM"]
WS_POLICIES = ["steal-first", "admit-first", "tail-control"]
WS_LOAD = 0.75
COLLAPSE_FACTOR = 1.2   # FM collapses: p99 above 1.2x SEQ's ...
COLLAPSE_MAX_LOAD = 0.75  # ... at a load up to 75%
SIM_OFF = 0.25          # the simulator is "off" when |live/sim - 1| > 25%


# ---------------------------------------------------------------------------------------
# Pure helpers (tested in scripts/live_check_test.py)
# ---------------------------------------------------------------------------------------

def median(xs):
    """The median of the numbers in xs that are not None; None when there are none."""
    vals = sorted(x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x)))
    if not vals:
        return None
    return statistics.median(vals)


def seeded_order(cells, seed, round_no):
    """Cells in a shuffled order fixed by (seed, round_no): the same inputs give the same
    order on any machine and Python version (random.Random with an int seed)."""
    out = list(cells)
    random.Random(seed * 1_000_003 + round_no).shuffle(out)
    return out


def throughput_from_records(path):
    """(completed, span_ms, per_second) from a `tailor run --records` CSV: the requests
    completed over (last finish - first arrival)."""
    first, last, n = math.inf, -math.inf, 0
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            fin = row.get("finish_ms")
            if fin in (None, ""):
                continue
            n += 1
            first = min(first, float(row["arrival_ms"]))
            last = max(last, float(fin))
    if n == 0 or last <= first:
        return n, 0.0, 0.0
    span = last - first
    return n, span, 1000.0 * n / span


def miss_ratio_from_records(path, target_ms, warmup=0):
    """The fraction of measured requests (all but the first `warmup` by request number)
    whose latency (finish - arrival) exceeds target_ms."""
    rows = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            rows.append((int(float(row["request"])),
                         float(row["finish_ms"]) - float(row["arrival_ms"])))
    rows.sort()
    lat = [l for _, l in rows[warmup:]]
    if not lat:
        return None
    return sum(1 for l in lat if l > target_ms) / len(lat)


def ratio(a, b):
    if a is None or b is None or b <= 0:
        return None
    return a / b


def fm_collapses(fm_p99, seq_p99, load):
    """True when FM's p99 is above COLLAPSE_FACTOR x SEQ's at a load up to
    COLLAPSE_MAX_LOAD; False otherwise, or when a value is missing."""
    if fm_p99 is None or seq_p99 is None or load > COLLAPSE_MAX_LOAD + 1e-9:
        return False
    return fm_p99 > COLLAPSE_FACTOR * seq_p99


def sim_is_off(live, sim):
    """True when the live value is more than SIM_OFF away from the simulated one,
    relative to the simulated one."""
    r = ratio(live, sim)
    return r is not None and abs(r - 1.0) > SIM_OFF


def profile_stats(path):
    """(requests, max degree, mean t1 ms, longest t1 ms) of a profile CSV."""
    t1 = []
    degree = 1
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        cols = [c for c in (reader.fieldnames or []) if re.fullmatch(r"t\d+_ms", c)]
        degree = max((int(c[1:-3]) for c in cols), default=1)
        for row in reader:
            t1.append(float(row["t1_ms"]))
    if not t1:
        raise ValueError(f"{path}: no requests")
    return len(t1), degree, sum(t1) / len(t1), max(t1)


def degree_ladder(d):
    """1, 2, 4, ... up to d, and d itself: FM's planner searches only these degrees."""
    out, k = [], 1
    while k < d:
        out.append(k)
        k *= 2
    out.append(d)
    return out


def generate_corpus(path, docs, seed=1, vocab_size=5000):
    """A seeded corpus of `docs` documents, one JSON object per line with `title` and
    `body`, of pseudo-words drawn with Zipf-like frequencies (rank^-1.05)."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = []
    seen = set()
    while len(vocab) < vocab_size:
        w = "".join(rng.choice(letters) for _ in range(rng.randint(2, 10)))
        if w not in seen:
            seen.add(w)
            vocab.append(w)
    cum, acc = [], 0.0
    for i in range(vocab_size):
        acc += 1.0 / (i + 1) ** 1.05
        cum.append(acc)
    with open(path, "w") as f:
        for _ in range(docs):
            n = max(3, min(400, int(rng.lognormvariate(math.log(60), 0.8))))
            words = rng.choices(vocab, cum_weights=cum, k=n + 4)
            f.write(json.dumps({"title": " ".join(words[:rng.randint(1, 4)]),
                                "body": " ".join(words[4:])}) + "\n")


def gcide_present(d):
    d = Path(d)
    return (d / "gcide.dict.dz").is_file() and (d / "gcide.index").is_file()


def dictd_number(s):
    """dictd's base64 numbers (A-Z a-z 0-9 + /, most significant digit first)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    n = 0
    for ch in s:
        n = n * 64 + alphabet.index(ch)
    return n


def convert_dictd(dict_dz, index, out_path):
    """Writes a dictd dictionary as a `--corpus` file, the documents tailor's own GCIDE
    reader makes (crates/workloads/src/search/corpus.rs, read_dictd): one per index entry
    but the database's notes (00-...), the headword its title, the definition its body.
    Returns the number of documents."""
    import gzip
    with gzip.open(dict_dz, "rb") as f:
        text = f.read()
    n = 0
    with open(index, encoding="utf-8", errors="replace") as idx, open(out_path, "w") as out:
        for line in idx:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 3 or fields[0].startswith("00-") or fields[0].startswith("00database"):
                continue
            start = dictd_number(fields[1])
            body = text[start:start + dictd_number(fields[2])].decode("utf-8", "replace")
            out.write(json.dumps({"title": fields[0], "body": body}) + "\n")
            n += 1
    return n


def repair_calibration(obj):
    """A copy of a calibration with every curve point below its curve's floor (or not
    finite) set to the floor; and a list of what was changed."""
    import copy
    obj = copy.deepcopy(obj)
    changes = []

    def walk(node, path):
        if isinstance(node, dict):
            if isinstance(node.get("points"), list):
                floor = node.get("floor", 0.0)
                floor = floor if isinstance(floor, (int, float)) and math.isfinite(floor) else 0.0
                for pt in node["points"]:
                    if (isinstance(pt, list) and len(pt) == 2 and isinstance(pt[1], (int, float))
                            and (not math.isfinite(pt[1]) or pt[1] < floor)):
                        changes.append(f"{path} at {pt[0]:g}: {pt[1]:.3f} set to its floor {floor:g}")
                        pt[1] = floor
            for k, v in node.items():
                if k != "source":
                    walk(v, f"{path}.{k}" if path else k)
        elif isinstance(node, list):
            for v in node:
                walk(v, path)

    walk(obj, "")
    return obj, changes


def fmt(x, digits=3):
    if x is None:
        return "–"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.{digits - 1}f}"


def pct(x):
    return "–" if x is None else f"{100 * x:.2f}"


def xratio(x):
    return "–" if x is None else f"{x:.2f}x"


# ---------------------------------------------------------------------------------------
# The report (a pure function of the collected data)
# ---------------------------------------------------------------------------------------

def search_table(cells):
    """{(label, load): {"live": [p99 by round, None where failed], "sim": [...]} }"""
    out = {}
    for c in cells:
        key = (c["label"], c["load"])
        entry = out.setdefault(key, {"live": {}, "sim": {}})
        entry["live"][c["round"]] = (c.get("latency_ms") or {}).get("p99")
        sim = c.get("sim")
        entry["sim"][c["round"]] = (sim.get("latency_ms") or {}).get("p99") if sim else None
    return out


def build_report(data):
    """report.md from the check's data (a dict; missing parts are reported as missing)."""
    L = []
    add = L.append
    status = data.get("status", "running")
    add(f"# tailor live check ({data.get('mode', '?')} mode) — {status}")
    add("")
    add(f"Started {data.get('started', '?')}; report written {data.get('written', '?')}; "
        f"{data.get('elapsed_s', 0):.0f} s elapsed of a {data.get('budget_s', 0):.0f} s budget.")
    add("")
    m = data.get("machine", {})
    add("## Machine")
    add("")
    add(f"- {m.get('model', '?')}; nproc {m.get('nproc', '?')}; cores used C = {data.get('cores')}"
        f"; {m.get('uname', '')}")
    add(f"- tailor: `{data.get('tailor')}`, commit {m.get('commit', '?')}"
        f"{' (working tree modified)' if m.get('dirty') else ''}; binary built {m.get('binary_mtime', '?')}")
    add(f"- corpus: {data.get('corpus', '?')}")
    p = data.get("profile") or {}
    if p:
        add(f"- profile: {p.get('requests')} queries, degrees 1..{p.get('degree')}, --repeat "
            f"{p.get('repeat')}, mean t1 {fmt(p.get('mean_t1'))} ms, longest {fmt(p.get('longest_t1'))} ms "
            f"(`{p.get('path')}`, {p.get('wall_s', 0):.0f} s)")
    add("")
    cap = data.get("capacity") or {}
    add("## Capacity")
    add("")
    if cap:
        add(f"SEQ live at {cap.get('offered_rps', 0):.0f} queries/s offered ({cap.get('requests')} "
            f"queries): **{cap.get('capacity_qps', 0):.0f} queries/s sustained** "
            f"({cap.get('completed')} completed over {cap.get('span_ms', 0):.0f} ms); the profile's "
            f"C / mean t1 is {cap.get('profile_capacity_qps', 0):.0f} "
            f"({xratio(ratio(cap.get('capacity_qps'), cap.get('profile_capacity_qps')))})."
            + (f" {cap['note']}" if cap.get("note") else ""))
    else:
        add("Not measured.")
    add("")
    add("## Setup")
    add("")
    for line in data.get("setup", []):
        add(f"- {line}")
    add("")

    cells = data.get("cells", [])
    loads = data.get("loads", [])
    tab = search_table(cells)
    rounds = sorted({c["round"] for c in cells})
    med_live, med_sim = {}, {}
    for key, e in tab.items():
        med_live[key] = median(e["live"].values())
        med_sim[key] = median(e["sim"].values())
    add("## Search: p99 latency (ms) by load")
    add("")
    if not cells:
        add("No search cells were measured.")
        add("")
    off_cells = []
    for load in loads:
        row_keys = [(lab, load) for lab in POLICY_ORDER if (lab, load) in tab]
        if not row_keys:
            continue
        rps = next((c["rps"] for c in cells if c["load"] == load), None)
        add(f"### {100 * load:.0f}% load ({fmt(rps)} queries/s)")
        add("")
        add("| policy | live p99 (median) | each round | sim p99 (median) | live/sim |")
        add("|---|---|---|---|---|")
        for key in row_keys:
            e = tab[key]
            each = ", ".join(
                f"r{r}: {fmt(e['live'].get(r)) if e['live'].get(r) is not None else 'failed'}"
                for r in rounds if r in e["live"])
            lv, sv = med_live[key], med_sim[key]
            flag = " **(off >25%)**" if sim_is_off(lv, sv) else ""
            if sim_is_off(lv, sv):
                off_cells.append(f"{key[0]} at {100 * load:.0f}% (live {fmt(lv)} ms, sim {fmt(sv)} ms, "
                                 f"{xratio(ratio(lv, sv))})")
            add(f"| {key[0]} | {fmt(lv)} | {each} | {fmt(sv)} | {xratio(ratio(lv, sv))}{flag} |")
        add("")

    add("## FM against the others (medians over rounds)")
    add("")
    collapses = []
    if any(("FM", l) in tab for l in loads):
        add("| load | FM p99 | SEQ p99 | FM / SEQ | best other | FM / best other | collapse? |")
        add("|---|---|---|---|---|---|---|")
        for load in loads:
            fm = med_live.get(("FM", load))
            seq = med_live.get(("SEQ", load))
            others = [(med_live.get((lab, load)), lab) for lab in POLICY_ORDER
                      if lab != "FM" and med_live.get((lab, load)) is not None]
            best = min(others) if others else (None, None)
            col = fm_collapses(fm, seq, load)
            if col:
                collapses.append(f"{100 * load:.0f}% (FM {fmt(fm)} ms = {xratio(ratio(fm, seq))} SEQ's {fmt(seq)} ms)")
            add(f"| {100 * load:.0f}% | {fmt(fm)} | {fmt(seq)} | {xratio(ratio(fm, seq))} | "
                f"{best[1] or '–'} {fmt(best[0])} | {xratio(ratio(fm, best[0]))} | "
                f"{'**yes**' if col else ('no' if load <= COLLAPSE_MAX_LOAD + 1e-9 else 'n/a (>75%)')} |")
        add("")
    else:
        add("FM was not measured.")
        add("")
    add("## Verdicts")
    add("")
    if collapses:
        add(f"- **FM collapses** (p99 above {COLLAPSE_FACTOR}x SEQ's at a load up to "
            f"{100 * COLLAPSE_MAX_LOAD:.0f}%) at: " + "; ".join(collapses) + ".")
    elif any(("FM", l) in tab and ("SEQ", l) in tab for l in loads if l <= COLLAPSE_MAX_LOAD + 1e-9):
        add(f"- FM does not collapse: its p99 is within {COLLAPSE_FACTOR}x SEQ's at every load "
            f"up to {100 * COLLAPSE_MAX_LOAD:.0f}% measured.")
    else:
        add("- FM against SEQ: not enough cells measured to say.")
    ws = data.get("ws_cells", [])
    ws_off = []
    for key, rows in ws_groups(ws).items():
        lv = median(r.get("latency_ms", {}).get("p99") for r in rows)
        sv = median((r.get("sim") or {}).get("latency_ms", {}).get("p99") for r in rows)
        if sim_is_off(lv, sv):
            ws_off.append(f"{key[1]} on {key[0]} (p99 live {fmt(lv)} ms, sim {fmt(sv)} ms, "
                          f"{xratio(ratio(lv, sv))})")
    for what, group in (("search", cells), ("work-stealing", ws)):
        noise = host_noise(group)
        if noise:
            add(f"- Host noise during the {what} cells: other processes used a median "
                f"{noise['other_med']:.2f} cores (max {noise['other_max']:.2f}); hypervisor steal a median "
                f"{noise['steal_med']:.2f} cores (max {noise['steal_max']:.2f}) (the runs' `host` fields "
                f"over each run's wall time).")
    if data.get("calibration_error"):
        add(f"- No search predictions: `tailor calibrate` failed: {data['calibration_error']}")
    if off_cells or ws_off:
        add("- **The simulator is more than 25% off** (median live p99 over median simulated) for: "
            + "; ".join(off_cells + ws_off) + ".")
    elif any(v is not None for v in med_sim.values()) or ws:
        add("- The simulator is within 25% of every live p99 it predicted.")
    add("")

    add("## Work stealing at 75% load (target at steal-first's live p99)")
    add("")
    if ws:
        add("| work | round | target ms | policy | live miss % | sim miss % | live p99 | sim p99 | live/sim p99 | other CPU, cores |")
        add("|---|---|---|---|---|---|---|---|---|---|")
        for c in ws:
            s = c.get("sim") or {}
            lv = (c.get("latency_ms") or {}).get("p99")
            sv = (s.get("latency_ms") or {}).get("p99")
            add(f"| {c['workload']} | {c['round']} | {fmt(c.get('target_ms'))} | {c['label']} | "
                f"{pct(c.get('miss_ratio'))} | {pct(s.get('miss_ratio'))} | {fmt(lv)} | {fmt(sv)} | "
                f"{xratio(ratio(lv, sv))} | {fmt(noise_of(c))} |")
        add("")
        add("Tail-control's misses over the better of steal-first's and admit-first's:")
        add("")
        for (work, rnd), v in ws_tc_ratios(ws).items():
            parts = []
            for kind in ("live", "sim"):
                tc, base = v[kind + "_tc"], v[kind + "_base"]
                r = v[kind]
                txt = xratio(r) if r is not None else ("n/a" if tc is None or base is None else "n/a (the better baseline missed none)")
                parts.append(f"{'live' if kind == 'live' else 'simulated'} {txt} ({pct(tc)}% vs {pct(base)}%)")
            add(f"- {work}, round {rnd}: " + "; ".join(parts))
        add("")
    else:
        add("Not measured.")
        add("")
    if data.get("skipped"):
        add("## Skipped")
        add("")
        for s in data["skipped"]:
            add(f"- {s}")
        add("")
    if data.get("notes"):
        add("## Notes")
        add("")
        for s in data["notes"]:
            add(f"- {s}")
        add("")
    if data.get("phases"):
        add("## Time by phase")
        add("")
        add("| phase | estimated s | took s |")
        add("|---|---|---|")
        for ph in data["phases"]:
            add(f"| {ph['name']} | {fmt(ph.get('estimate_s'))} | {fmt(ph.get('took_s'))} |")
        add("")
    return "\n".join(L) + "\n"


def host_noise(cells):
    """Median and max of the cores that other processes and the hypervisor took during
    the cells, from the live summaries' `host` fields (ms over the run's wall time)."""
    other, steal = [], []
    for c in cells:
        h, w = c.get("host"), c.get("wall_s")
        if not h or not w:
            continue
        if h.get("other_cpu_ms") is not None:
            other.append(h["other_cpu_ms"] / (1000.0 * w))
        if h.get("steal_ms") is not None:
            steal.append(h["steal_ms"] / (1000.0 * w))
    if not other:
        return None
    return {"other_med": median(other), "other_max": max(other),
            "steal_med": median(steal) or 0.0, "steal_max": max(steal) if steal else 0.0}


def noise_of(c):
    h, w = c.get("host"), c.get("wall_s")
    if not h or not w or h.get("other_cpu_ms") is None:
        return None
    return h["other_cpu_ms"] / (1000.0 * w)


def ws_groups(ws):
    g = {}
    for c in ws:
        g.setdefault((c["workload"], c["label"]), []).append(c)
    return g


def ws_tc_ratios(ws):
    """{(work, round): {"live": tc / min(sf, af), "sim": ...}} over miss ratios."""
    by = {}
    for c in ws:
        by.setdefault((c["workload"], c["round"]), {})[c["label"]] = c
    out = {}
    for key, d in by.items():
        vals = {}
        for kind in ("live", "sim"):
            def miss(lab):
                c = d.get(lab)
                if c is None:
                    return None
                return c.get("miss_ratio") if kind == "live" else (c.get("sim") or {}).get("miss_ratio")
            base = [x for x in (miss("steal-first"), miss("admit-first")) if x is not None]
            tc = miss("tail-control")
            vals[kind + "_tc"] = tc
            vals[kind + "_base"] = min(base) if base else None
            vals[kind] = ratio(tc, min(base)) if base and tc is not None else None
        out[key] = vals
    return out


# ---------------------------------------------------------------------------------------
# The check
# ---------------------------------------------------------------------------------------

class Interrupted(Exception):
    pass


def _on_signal(signum, frame):
    raise Interrupted(f"signal {signum}")


class Fatal(Exception):
    pass


class Check:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.t0 = time.monotonic()
        self.started = datetime.datetime.now().isoformat(timespec="seconds")
        self.budget = args.budget_s if args.budget_s is not None else (170.0 if self.quick else 470.0)
        self.cores = args.cores or min(16, os.cpu_count() or 1)
        self.out = Path(args.out or datetime.datetime.now().strftime("live-check-%Y%m%d-%H%M%S")).resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.tailor = str(Path(args.tailor).resolve()) if args.tailor else str(REPO / "target/release/tailor")
        self.tailor_source = self.tailor
        # Big inputs (corpus, index) go here, apart from the results.
        self.scratch = Path(args.scratch).resolve() if args.scratch else self.out
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.export_dir = Path(args.export).resolve() if args.export else None
        self.tmp = None
        self.seed = args.seed
        self.progress = open(self.out / "progress.log", "a")
        self.cmdlog = open(self.out / "commands.log", "a")
        self.cells_file = open(self.out / "cells.jsonl", "a")
        self.child = None
        self.data = {
            "mode": "quick" if self.quick else "full",
            "started": self.started,
            "budget_s": self.budget,
            "cores": self.cores,
            "tailor": self.tailor,
            "status": "running",
            "setup": [],
            "cells": [],
            "ws_cells": [],
            "skipped": [],
            "notes": [],
            "phases": [],
            "loads": [],
        }
        self.search_args = []   # corpus / data-dir flags for every search command
        self.help_cache = {}

    # -- logging and time -----------------------------------------------------------------
    def elapsed(self):
        return time.monotonic() - self.t0

    def left(self):
        return self.budget - self.elapsed()

    def log(self, msg):
        line = f"[{datetime.datetime.now().strftime('%H:%M:%S')} +{self.elapsed():6.1f}s] {msg}"
        try:
            print(line, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass  # stderr closed (a pipe whose reader left): keep going, the log file has it
        self.progress.write(line + "\n")
        self.progress.flush()

    def note(self, msg):
        self.data["notes"].append(msg)
        self.log("note: " + msg)

    def skip(self, msg):
        self.data["skipped"].append(msg)
        self.log("skipped: " + msg)

    def phase(self, name, estimate):
        self.log(f"== {name}: estimated {estimate:.0f} s ({self.left():.0f} s of budget left)")
        ph = {"name": name, "estimate_s": estimate, "took_s": None, "_t": time.monotonic()}
        self.data["phases"].append(ph)
        return ph

    def end_phase(self, ph):
        ph["took_s"] = time.monotonic() - ph.pop("_t")
        self.log(f"== {ph['name']}: took {ph['took_s']:.1f} s")

    # -- commands ---------------------------------------------------------------------------
    def run(self, args, timeout, tag=""):
        """Runs a command from the repository root; returns (rc, stdout, stderr, wall_s).
        rc is None when it ran past `timeout` (its process group is then killed)."""
        args = [str(a) for a in args]
        start = time.monotonic()
        timeout = max(1.0, timeout)
        proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        self.child = proc
        try:
            out, err = proc.communicate(timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            self._kill(proc)
            out, err = proc.communicate()
            rc = None
        except BaseException:
            self._kill(proc)
            proc.communicate()
            raise
        finally:
            self.child = None
        wall = time.monotonic() - start
        self.cmdlog.write(f"# +{self.elapsed():.1f}s {tag} rc={rc if rc is not None else 'timeout'} "
                          f"wall={wall:.2f}s\n$ {shlex.join(args)}\n")
        if err.strip():
            self.cmdlog.write("".join("  " + l + "\n" for l in err.strip().splitlines()[-15:]))
        self.cmdlog.flush()
        return rc, out, err, wall

    @staticmethod
    def _kill(proc):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    @staticmethod
    def last_json(out):
        for line in reversed(out.strip().splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    return json.loads(line)
                except json.JSONDecodeError:
                    return None
        return None

    @staticmethod
    def err_tail(err, rc):
        lines = [l for l in err.strip().splitlines() if l.strip()]
        errs = [l for l in lines if l.startswith("error")]
        msg = (errs[-1] if errs else (lines[-1] if lines else "")).strip()
        return f"{'timed out' if rc is None else f'exit {rc}'}: {msg}"[:400]

    def help_text(self, *sub):
        if sub not in self.help_cache:
            rc, out, err, _ = self.run([self.tailor, *sub, "--help"], 30, "help")
            self.help_cache[sub] = out + err
        return self.help_cache[sub]

    def has_flag(self, flag, *sub):
        return re.search(rf"(^|\s){re.escape(flag)}(\s|$|=)", self.help_text(*sub), re.M) is not None

    # -- output -----------------------------------------------------------------------------
    def append_cell(self, rec):
        self.cells_file.write(json.dumps(rec) + "\n")
        self.cells_file.flush()

    def write_json(self, name, obj):
        with open(self.out / name, "w") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")

    def write_report(self):
        self.data["elapsed_s"] = self.elapsed()
        self.data["written"] = datetime.datetime.now().isoformat(timespec="seconds")
        text = build_report(self.data)
        tmp = self.out / "report.md.tmp"
        tmp.write_text(text)
        tmp.replace(self.out / "report.md")
        self.export()

    BIG = {"corpus.jsonl", "corpus-gcide.jsonl", "data"}

    def export(self):
        """With --export DIR: report.md, cells.jsonl and a tar.gz of the other results
        (not the corpus or the index) copied there: three files, for machines that hand
        back only a few."""
        if self.export_dir is None:
            return
        try:
            self.export_dir.mkdir(parents=True, exist_ok=True)
            for name in ("report.md", "cells.jsonl"):
                if (self.out / name).exists():
                    shutil.copyfile(self.out / name, self.export_dir / (name + ".tmp"))
                    os.replace(self.export_dir / (name + ".tmp"), self.export_dir / name)
            tmp = self.export_dir / "live-check.tar.gz.tmp"
            with tarfile.open(tmp, "w:gz") as tar:
                for f in sorted(self.out.iterdir()):
                    if f.name in self.BIG or f.name.endswith(".tmp") or (self.scratch != self.out and f == self.scratch):
                        continue
                    if f.is_file() and f.stat().st_size > 8 << 20:
                        continue
                    tar.add(f, arcname=f"{self.out.name}/{f.name}")
            os.replace(tmp, self.export_dir / "live-check.tar.gz")
        except OSError as e:
            print(f"live-check: export to {self.export_dir} failed: {e}", file=sys.stderr)

    # -- machine ----------------------------------------------------------------------------
    def machine(self):
        parts, m = [], {}
        for cmd in (["lscpu"], ["nproc"], ["uname", "-a"], ["free", "-g"]):
            if shutil.which(cmd[0]):
                r = subprocess.run(cmd, capture_output=True, text=True)
                parts.append(f"$ {' '.join(cmd)}\n{r.stdout}")
                if cmd[0] == "lscpu":
                    mm = re.search(r"Model name:\s*(.+)", r.stdout)
                    m["model"] = mm.group(1).strip() if mm else "?"
                if cmd[0] == "nproc":
                    m["nproc"] = r.stdout.strip()
                if cmd[0] == "uname":
                    m["uname"] = r.stdout.strip()
            else:
                parts.append(f"$ {' '.join(cmd)}\n(not available)\n")
        m.setdefault("nproc", str(os.cpu_count()))
        m.setdefault("uname", " ".join(os.uname()))
        if shutil.which("git"):
            r = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
            m["commit"] = r.stdout.strip() or "?"
            r2 = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True)
            m["dirty"] = bool(r2.stdout.strip())
            parts.append(f"$ git rev-parse HEAD\n{m['commit']}\n$ git status --porcelain --untracked-files=no\n{r2.stdout}")
        else:
            m["commit"] = "? (no git)"
        try:
            st = os.stat(self.tailor)
            m["binary_mtime"] = datetime.datetime.fromtimestamp(st.st_mtime).isoformat(timespec="seconds")
        except OSError:
            m["binary_mtime"] = "?"
        parts.append(f"tailor binary: {self.tailor} (modified {m['binary_mtime']})\n")
        parts.append(f"cores used: {self.cores}; python {sys.version.split()[0]}\n")
        (self.out / "machine.txt").write_text("\n".join(parts))
        self.data["machine"] = m

    # -- phase 1: prepare -------------------------------------------------------------------
    def prepare(self):
        ph = self.phase("prepare (corpus, index, profile)", 15 if self.quick else 110)
        gdir = Path(self.args.gcide_dir) if self.args.gcide_dir else None
        if self.quick:
            self.corpus_generated(20_000, "quick mode: a generated corpus, no network and no GCIDE")
        elif gcide_present(GCIDE_DIR) and (gdir is None or gdir.resolve() == GCIDE_DIR):
            self.data["corpus"] = f"GCIDE ({GCIDE_DIR}/gcide.dict.dz), tailor's default corpus and data directory"
        elif gdir is not None and gcide_present(gdir):
            path = self.scratch / "corpus-gcide.jsonl"
            t = time.monotonic()
            n = convert_dictd(gdir / "gcide.dict.dz", gdir / "gcide.index", path)
            self.log(f"GCIDE from {gdir} written as a corpus file, {n} documents ({time.monotonic() - t:.1f} s)")
            self.search_args = ["--corpus", path, "--data-dir", self.scratch / "data"]
            self.data["corpus"] = (f"GCIDE from {gdir}, passed as --corpus (the same documents as tailor's "
                                   f"own GCIDE reader, {n})")
        else:
            where = f"{GCIDE_DIR}" + (f" or {gdir}" if gdir else "")
            self.corpus_generated(50_000, f"GCIDE is missing (no gcide.dict.dz and gcide.index in {where}): "
                                          "**fell back to a generated corpus**")
            self.note(f"full mode without GCIDE (not in {where}): the search ran on a generated corpus, "
                      "whose queries are shorter than GCIDE's")

        c = self.cores
        self.pdeg = min(16, max(c, 4))
        repeat = 2 if self.quick else 3
        want = 150 if self.quick else 600
        base = [self.tailor, "profile", "--workload", "search", *self.search_args]
        # The index (and the queries) first, so the profile's timing is the queries' only.
        rc, out, err, wall = self.run(base + ["--degrees", "1..1", "--repeat", "1", "--requests", "1",
                                              "--out", self.out / "profile-index-check.csv"],
                                      max(60, min(300, self.left() * 0.5)), "index")
        if rc != 0:
            raise Fatal(f"the search index could not be built: {self.err_tail(err, rc)}")
        self.log(f"index ready in {wall:.1f} s")
        n = want
        pilot = None
        if not self.quick:
            pilot_n = 40
            pilot = self.out / "profile-pilot.csv"
            rc, out, err, wall = self.run(base + ["--degrees", f"1..{self.pdeg}", "--repeat", "1",
                                                  "--requests", pilot_n, "--out", pilot],
                                          max(30, self.left() * 0.3), "profile-pilot")
            if rc != 0:
                raise Fatal(f"the profile's pilot failed: {self.err_tail(err, rc)}")
            per = wall / pilot_n  # per query and repeat, start-up included: conservative
            share = min(120.0, 0.25 * self.budget)
            n = int(max(100, min(want, share / (per * repeat))))
            self.log(f"pilot: {pilot_n} queries x 1 repeat in {wall:.1f} s; profiling {n} queries "
                     f"x {repeat} repeats, estimated {n * repeat * per:.0f} s")
            if n < want:
                self.note(f"the profile was shortened to {n} queries (of {want}) to fit its share of the budget")
        prof = self.out / "profile.csv"
        est = 10 if self.quick else n * repeat * (wall / 40 if pilot else 0.05)
        rc, out, err, wall = self.run(base + ["--degrees", f"1..{self.pdeg}", "--repeat", repeat,
                                              "--requests", n, "--out", prof],
                                      max(60, 2 * est + 30) if self.quick
                                      else min(max(60, 2 * est + 30), 0.45 * self.budget), "profile")
        if rc != 0:
            if pilot is not None and pilot.exists():
                self.note(f"the profile failed ({self.err_tail(err, rc)}); using the 40-query pilot's")
                shutil.copy(pilot, prof)
                repeat = 1
            else:
                raise Fatal(f"tailor profile failed: {self.err_tail(err, rc)}")
        self.profile = prof
        nreq, deg, mean_t1, longest = profile_stats(prof)
        self.mean_t1 = mean_t1
        self.longest_t1 = longest
        self.data["profile"] = {"path": str(prof), "requests": nreq, "degree": deg, "repeat": repeat,
                                "mean_t1": mean_t1, "longest_t1": longest, "wall_s": wall}
        self.log(f"profile: {nreq} queries, degrees 1..{deg}, mean t1 {mean_t1:.3f} ms, longest {longest:.2f} ms ({wall:.1f} s)")
        self.plan_tables()
        self.end_phase(ph)

    def corpus_generated(self, docs, why):
        path = self.scratch / "corpus.jsonl"
        t = time.monotonic()
        generate_corpus(path, docs, seed=1)
        self.log(f"generated corpus {path} ({docs} documents) in {time.monotonic() - t:.1f} s")
        self.search_args = ["--corpus", path, "--data-dir", self.scratch / "data"]
        self.data["corpus"] = f"{why}: {docs} documents of Zipf-distributed pseudo-words (seed 1), `{path}`"

    def plan_tables(self):
        c = self.cores
        self.max_degree = min(c, 8)
        self.max_load = max(32, 4 * c)
        y = math.ceil(min(25.0, max(2.0, self.longest_t1)) / STEP_MS) * STEP_MS
        self.y = y
        # Adaptive
        self.adaptive_table = self.out / "adaptive-table.json"
        rc, out, err, _ = self.run([self.tailor, "plan", "adaptive", "--profile", self.profile,
                                    "--max-degree", self.max_degree, "--target-parallelism", c,
                                    "--max-load", self.max_load, "--out", self.adaptive_table],
                                   60, "plan-adaptive")
        if rc != 0:
            self.note(f"tailor plan adaptive failed ({self.err_tail(err, rc)}): no Adaptive cells")
            self.adaptive_table = None
        else:
            self.data["setup"].append(
                f"Adaptive: `tailor plan adaptive --max-degree {self.max_degree} --target-parallelism {c} "
                f"--max-load {self.max_load}` (`adaptive-table.json`)")
        # FM without calibration: the table used unless the planner takes a calibration.
        self.fm_cal_supported = self.has_flag("--calibration", "plan", "fm")
        self.fm_table = self.plan_fm(None)
        if self.fm_table is None:
            self.note("tailor plan fm failed without a calibration: FM cells wait for a calibrated plan")

    def fm_args(self, y, cal, thread_model=True):
        args = [self.tailor, "plan", "fm", "--profile", self.profile, "--cores", self.cores,
                "--max-degree", self.max_degree, "--step-ms", STEP_MS, "--max-interval-ms", y,
                "--percentile", "0.99", "--max-load", self.max_load]
        if self.max_degree > 2 and self.has_flag("--degrees", "plan", "fm"):
            args += ["--degrees", ",".join(str(d) for d in degree_ladder(self.max_degree))]
        if thread_model and self.has_flag("--thread-model", "plan", "fm"):
            args += ["--thread-model", "busy"]
        if cal is not None:
            args += ["--calibration", cal]
        return args

    def plan_fm(self, cal):
        name = "fm-table-cal.json" if cal else "fm-table.json"
        path = self.out / name
        y = self.y
        last = ""
        for attempt in range(4):
            for tm in ((False,) if cal else (True, False)):
                args = self.fm_args(y, cal, tm) + ["--out", path]
                rc, out, err, _ = self.run(args, 120, "plan-fm")
                if rc == 0:
                    shown = [a for a in args[:-2] if a != self.tailor]
                    shown = " ".join(str(a) for a in shown).replace(str(self.out) + "/", "")
                    self.data["setup"].append(f"FM{' (calibrated)' if cal else ''}: `tailor {shown}` (`{name}`)")
                    return path
                last = self.err_tail(err, rc)
                if "search space" in err or "schedules" in err:
                    break  # a smaller y, not another thread model
            y = max(STEP_MS, math.floor(y / 2 / STEP_MS) * STEP_MS)
        self.note(f"tailor plan fm{' --calibration' if cal else ''} failed: {last}")
        return None

    # -- phase 2: capacity ------------------------------------------------------------------
    def capacity(self):
        c = self.cores
        self.profile_capacity = 1000.0 * c / self.mean_t1
        offered = 1.5 * self.profile_capacity
        span_s = 0.8 if self.quick else 1.0
        n = int(max(300, offered * span_s))
        ph = self.phase("capacity (SEQ at a saturating rate)", n / self.profile_capacity * 1.5 + 2)
        trace = self.out / "capacity-arrivals.csv"
        rng = random.Random(self.seed * 7 + 3)
        t = 0.0
        with open(trace, "w") as f:
            f.write("arrival_ms\n")
            for _ in range(n):
                t += rng.expovariate(offered / 1000.0)
                f.write(f"{t:.4f}\n")
        rec = self.out / "capacity-records.csv"
        args = [self.tailor, "run", "--workload", "search", *self.search_args, "--search-profile", self.profile,
                "--cores", c, "--policy", "seq", "--arrivals", f"trace:{trace}", "--rps", f"{offered:.1f}",
                "--requests", n, "--seed", self.seed, "--quantum-ms", QUANTUM_MS, "--records", rec]
        rc, out, err, wall = self.run(args, max(30, 10 * n / self.profile_capacity + 20), "capacity")
        cap = {"offered_rps": offered, "requests": n, "profile_capacity_qps": self.profile_capacity,
               "mean_t1_ms": self.mean_t1, "wall_s": wall}
        summary = self.last_json(out) if rc == 0 else None
        if summary is not None and rec.exists():
            done, span, qps = throughput_from_records(rec)
            cap.update(completed=done, span_ms=span, capacity_qps=qps, summary=summary)
            self.overhead = max(0.2, wall - span / 1000.0)
        else:
            cap.update(completed=0, span_ms=0, capacity_qps=0.85 * self.profile_capacity,
                       note=f"**The capacity run failed** ({self.err_tail(err, rc)}); loads use 0.85x the profile's capacity.")
            self.note("the capacity run failed: loads are fractions of 0.85x the profile's capacity")
            self.overhead = 1.0
        if cap["capacity_qps"] <= 0:
            raise Fatal("no capacity could be measured")
        self.cap = cap["capacity_qps"]
        self.write_json("capacity.json", cap)
        self.data["capacity"] = {k: v for k, v in cap.items() if k != "summary"}
        self.log(f"capacity {self.cap:.0f} queries/s (profile's {self.profile_capacity:.0f}); "
                 f"start-up and drain overhead {self.overhead:.2f} s per run")
        self.end_phase(ph)

    # -- phases 3 and 4: search cells, calibration, predictions --------------------------
    def search_policies(self):
        c = self.cores
        pols = [("SEQ", ["--policy", "seq"], "seq"),
                ("FIX-2", ["--policy", "fix:2"], "fix:2"),
                ("FIX-4", ["--policy", "fix:4"], "fix:4"),
                ("executor", ["--policy", "seq", "--tantivy-executor", str(c)], None)]
        if self.adaptive_table:
            pols.append(("Adaptive", ["--policy", "adaptive", "--table", str(self.adaptive_table)], "adaptive"))
        pols.append(("FM", ["--policy", "fm"], "fm"))
        return pols

    def cell_size(self, load):
        rps = load * self.cap
        limit = 0.97 * self.profile_capacity  # tailor run refuses rps at or above the profile's capacity
        if rps >= limit:
            self.note(f"{100 * load:.0f}% of the capacity is {rps:.0f}/s, at or above the profile's "
                      f"capacity; run at {limit:.0f}/s instead")
            rps = limit
        secs = self.args.cell_s or (1.0 if self.quick else 2.0)
        n = int(max(200, round(rps * secs)))
        return rps, n

    def cell_estimate(self, load, rps, n):
        return n / rps * (1.15 if load <= 0.75 else 1.6) + self.overhead + 0.1

    def search(self):
        c = self.cores
        loads = [0.3, 0.6, 0.75] if self.quick else [0.3, 0.45, 0.6, 0.75, 0.9]
        self.data["loads"] = loads
        sizes = {l: self.cell_size(l) for l in loads}
        pols = self.search_policies()
        self.pols = {p[0]: p for p in pols}
        round_est = sum(self.cell_estimate(l, *sizes[l]) for l in loads) * len(pols)
        self.ws_estimate = self.ws_round_estimate()
        max_rounds = self.args.rounds or (2 if self.quick else 3)
        avail = self.left() - self.ws_estimate - 5
        rounds = max(1, min(max_rounds, int(avail // round_est)))
        if rounds < max_rounds:
            self.note(f"{rounds} search round(s) instead of {max_rounds}: a round is estimated at "
                      f"{round_est:.0f} s and {avail:.0f} s are left before the work-stealing phase")
        self.data["setup"].append(
            f"Search cells: `tailor run --workload search --search-profile profile.csv --cores {c} --rps R "
            f"--requests N --seed S --quantum-ms {QUANTUM_MS}` and the policy's flags; loads "
            + ", ".join(f"{100 * l:.0f}% = {sizes[l][0]:.0f}/s x {sizes[l][1]}" for l in loads)
            + f"; {rounds} round(s), seeds {self.seed}00+round*10+load index")
        self.data["setup"].append("Each round runs every (policy, load) cell once in a seeded shuffled order; "
                                  "round 0 runs its SEQ cells first, then calibrates, then the rest")
        for r in range(rounds):
            ph = self.phase(f"search round {r}", round_est)
            cells = [(lab, l) for lab in self.pols for l in loads]
            order = seeded_order(cells, self.seed, r)
            if r == 0:
                first = [x for x in order if x[0] == "SEQ"]
                rest = [x for x in order if x[0] != "SEQ"]
                pending = []
                for lab, l in first:
                    rec = self.search_cell(lab, l, r, sizes, loads, defer=True)
                    if rec is not None:
                        pending.append(rec)
                self.calibrate(pending)
                for rec in pending:
                    rec["sim"] = self.predict(rec)
                    self.commit_cell(rec)
                for lab, l in rest:
                    self.search_cell(lab, l, r, sizes, loads)
            else:
                for lab, l in order:
                    self.search_cell(lab, l, r, sizes, loads)
            self.end_phase(ph)
            self.write_report()

    def seed_for(self, r, load, loads):
        return self.seed * 100 + r * 10 + loads.index(load)

    def search_cell(self, label, load, r, sizes, loads, defer=False):
        rps, n = sizes[load]
        est = self.cell_estimate(load, rps, n)
        if self.elapsed() + est > self.budget - self.ws_estimate_left():
            self.skip(f"search {label} at {100 * load:.0f}% round {r}: the budget is nearly spent")
            return None
        pol = self.pols[label]
        args = list(pol[1])
        table = None
        if label == "FM":
            table = self.fm_table
            if table is None:
                self.skip(f"search FM at {100 * load:.0f}% round {r}: no FM table")
                return None
            args += ["--table", str(table)]
        elif label == "Adaptive":
            table = self.adaptive_table
        seed = self.seed_for(r, load, loads)
        cmd = [self.tailor, "run", "--workload", "search", *self.search_args, "--search-profile", self.profile,
               "--cores", self.cores, "--rps", f"{rps:.1f}", "--requests", n, "--seed", seed,
               "--quantum-ms", QUANTUM_MS, *args]
        if r == 0:
            # Per-request records of the first round (arrival, start, finish, degree): where
            # a request's time went, which the summaries cannot say (docs/calibration.md).
            cmd += ["--records", self.out / f"records-{label}-{round(100 * load)}-r0.csv"]
        timeout = min(max(20.0, 5 * est), self.budget + 20 - self.elapsed())
        rc, out, err, wall = self.run(cmd, timeout, f"search {label} {load} r{r}")
        summary = self.last_json(out) if rc == 0 else None
        rec = dict(summary) if summary else {"error": self.err_tail(err, rc)}
        rec.update(family="search", label=label, load=load, round=r, rps=rps, requests_asked=n,
                   seed=seed, wall_s=round(wall, 2), table=str(table) if table else None, sim=None,
                   _policy=pol[2], _table=str(table) if table else None)
        p99 = (rec.get("latency_ms") or {}).get("p99")
        if summary is None:
            self.log(f"r{r} {label:9s} {100 * load:3.0f}% {rps:7.0f}/s FAILED {rec['error']}")
        if defer:
            if summary is not None:
                with open(self.out / "seq-runs.jsonl", "a") as f:
                    f.write(json.dumps(summary) + "\n")
            self.log(f"r{r} {label:9s} {100 * load:3.0f}% {rps:7.0f}/s p99 {fmt(p99):>7} ms ({wall:.1f} s)")
            return rec
        rec["sim"] = self.predict(rec)
        sp = ((rec["sim"] or {}).get("latency_ms") or {}).get("p99")
        self.log(f"r{r} {label:9s} {100 * load:3.0f}% {rps:7.0f}/s p99 {fmt(p99):>7} ms, sim {fmt(sp):>7} ms ({wall:.1f} s)")
        self.commit_cell(rec)
        return rec

    def commit_cell(self, rec):
        rec.pop("_policy", None)
        rec.pop("_table", None)
        self.data["cells"].append(rec)
        self.append_cell(rec)
        if len(self.data["cells"]) % 6 == 0:
            self.write_report()  # also between rounds: a run cut short keeps a recent report

    def predict(self, rec):
        """The simulator's summary for a search cell, or None (executor, no calibration, or
        a failed live run)."""
        policy = rec.get("_policy")
        if policy is None or self.calibration is None or "error" in rec:
            return None
        cmd = [self.tailor, "simulate", "--cores", self.cores, "--policy", policy,
               "--demand", f"profile:{self.profile}", "--arrivals", "poisson",
               "--rps", f"{rec['rps']:.1f}", "--requests", rec["requests_asked"], "--seed", rec["seed"],
               "--quantum-ms", QUANTUM_MS, "--calibration", self.calibration]
        if rec.get("_table"):
            cmd += ["--table", rec["_table"]]
        rc, out, err, _ = self.run(cmd, max(10.0, min(60.0, self.budget + 20 - self.elapsed())),
                                   f"simulate {rec['label']} {rec['load']}")
        if rc != 0:
            self.log(f"simulate {rec['label']} {rec['load']} failed: {self.err_tail(err, rc)}")
            return None
        return self.last_json(out)

    calibration = None

    def calibrate(self, seq_recs):
        ph = self.phase("calibrate (and FM's calibrated plan)", 1)
        runs = self.out / "seq-runs.jsonl"
        ok = [r for r in seq_recs if "error" not in r]
        err_msg = None
        cal = self.out / "calibration.json"
        base = [self.tailor, "calibrate", "--profile", self.profile, "--units", SEGMENTS, "--out", cal]
        rc, err = None, ""
        if ok:
            rc, out, err, _ = self.run(base + ["--runs", runs], 60, "calibrate")
        if rc != 0:
            err_msg = self.err_tail(err, rc) if ok else "no SEQ run of round 0 succeeded"
            # tailor calibrate leaves out SEQ runs it finds overloaded (mean latency over 3x
            # the time on a thread) and needs two loads left: on a busy host only the lowest
            # load may pass. Measure SEQ at lower loads, for the calibration only, and retry.
            extra = [l for l in (0.15, 0.22) if l not in self.data["loads"]]
            added = []
            for load in extra:
                rec = self.calibration_run(load)
                if rec is not None:
                    added.append(rec)
            if added:
                rc, out, err, _ = self.run(base + ["--runs", runs], 60, "calibrate")
                if rc == 0:
                    self.note(f"tailor calibrate refused round 0's SEQ runs ({err_msg}); with SEQ also at "
                              + ", ".join(f"{100 * r['load']:.0f}%" for r in added)
                              + " (calibration-only runs) it calibrated")
                    err_msg = None
                    ok = ok + added
                else:
                    err_msg = self.err_tail(err, rc) + " (also with SEQ at " + ", ".join(
                        f"{100 * r['load']:.0f}%" for r in added) + ")"
        if err_msg is None:
            desc = [l for l in err.splitlines() if "calibration:" in l]
            self.data["setup"].append(
                f"Calibration: `tailor calibrate --profile profile.csv --runs seq-runs.jsonl --units {SEGMENTS}` "
                f"from {len(ok)} SEQ runs (round 0's SEQ cells{' and calibration-only runs' if len(ok) > len(seq_recs) else ''}): {desc[-1].split('calibration: ', 1)[-1] if desc else 'ok'}")
            # `tailor calibrate` can write a calibration that the simulator refuses (a
            # hand-off delay extrapolated below zero): try it once, and repair it by
            # clamping such points to their curve's floor, said in the report.
            bad = self.try_calibration(cal, ok[0])
            if bad is None:
                self.calibration = cal
            else:
                fixed, changes = repair_calibration(json.loads(cal.read_text()))
                rcal = self.out / "calibration-repaired.json"
                if changes:
                    rcal.write_text(json.dumps(fixed, indent=2) + "\n")
                if changes and self.try_calibration(rcal, ok[0]) is None:
                    self.calibration = rcal
                    self.note(f"**tailor calibrate wrote a calibration the simulator refuses** ({bad}); "
                              f"the predictions use calibration-repaired.json, with {'; '.join(changes)}")
                else:
                    err_msg = f"the calibration it wrote is refused by tailor simulate: {bad}"
        if err_msg:
            self.data["calibration_error"] = err_msg
            self.note(f"no calibration, so no search predictions: {err_msg}")
        # FM: calibrated plan where the planner takes one.
        if self.fm_cal_supported and self.calibration is not None:
            t = self.plan_fm(self.calibration)
            if t is not None:
                self.fm_table = t
                self.data["setup"].append("FM runs the calibrated table (fm-table-cal.json)")
            else:
                self.data["setup"].append("FM runs the uncalibrated table (its calibrated plan failed)")
        elif self.fm_cal_supported:
            self.data["setup"].append("FM runs the uncalibrated table (no calibration)")
        else:
            self.data["setup"].append("FM runs the uncalibrated table: `tailor plan fm --help` lists no --calibration")
        self.end_phase(ph)

    def calibration_run(self, load):
        """SEQ at `load` for the calibration only (seq-runs.jsonl, not a cell)."""
        rps, n = self.cell_size(load)
        est = self.cell_estimate(load, rps, n)
        if self.elapsed() + est > self.budget - self.ws_estimate_left():
            return None
        cmd = [self.tailor, "run", "--workload", "search", *self.search_args, "--search-profile", self.profile,
               "--cores", self.cores, "--rps", f"{rps:.1f}", "--requests", n, "--seed", self.seed * 100 + 9,
               "--quantum-ms", QUANTUM_MS, "--policy", "seq"]
        rc, out, err, wall = self.run(cmd, max(20.0, 5 * est), f"calibration SEQ {load}")
        summary = self.last_json(out) if rc == 0 else None
        if summary is None:
            self.log(f"calibration run SEQ at {100 * load:.0f}% failed: {self.err_tail(err, rc)}")
            return None
        with open(self.out / "seq-runs.jsonl", "a") as f:
            f.write(json.dumps(summary) + "\n")
        self.log(f"calibration run SEQ {100 * load:3.0f}% {rps:7.0f}/s p99 {fmt(summary['latency_ms']['p99'])} ms, "
                 f"mean {fmt(summary['latency_ms']['mean'])} ms ({wall:.1f} s)")
        return dict(summary, load=load, rps=rps)

    def try_calibration(self, cal, rec):
        """None when `tailor simulate` accepts the calibration, else its error."""
        cmd = [self.tailor, "simulate", "--cores", self.cores, "--policy", "seq",
               "--demand", f"profile:{self.profile}", "--arrivals", "poisson", "--rps", f"{rec['rps']:.1f}",
               "--requests", 200, "--seed", 1, "--quantum-ms", QUANTUM_MS, "--calibration", cal]
        rc, out, err, _ = self.run(cmd, 30, "calibration-check")
        return None if rc == 0 else self.err_tail(err, rc)

    # -- phase 5: work stealing ----------------------------------------------------------
    def ws_params(self):
        rps = WS_LOAD * self.cores * 1000.0 / 10.0  # both workloads have a mean work of 10 ms
        secs = 4.0 if self.quick else 5.0
        n = int(max(300, min(12000, rps * secs)))
        return rps, n

    def ws_round_estimate(self):
        rps, n = self.ws_params()
        return 6 * (n / rps * 1.1 + 0.8) + 3

    def ws_estimate_left(self):
        return 0.0 if getattr(self, "ws_started", False) else self.ws_estimate

    def work_stealing(self):
        self.ws_started = True
        rps, n = self.ws_params()
        works = []
        bing = REPO / "examples/tc-bing-fig1.csv"
        if bing.exists():
            works.append(("bing-fig1", f"distribution:{bing}", ["--distribution", str(bing)]))
        else:
            self.skip(f"work stealing on Bing-like work: {bing} is missing")
        works.append(("lognormal", "lognormal:10:13", ["--demand", "lognormal:10:13"]))
        max_rounds = 1 if self.quick else 2
        self.mechanics = []
        if self.has_flag("--joins", "simulate") and self.has_flag("--steal-size", "simulate"):
            self.mechanics = ["--joins", "held", "--steal-size", "last-split"]
        # The spin loop's rate, measured once, so that every run's requests have one length.
        self.spin = None
        rc, out, err, _ = self.run([self.tailor, "run", "--workload", "synthetic:const:1", "--policy", "seq",
                                    "--rps", "100", "--requests", "20", "--seed", "1"], 60, "spin-rate")
        mm = re.search(r"spin loop at ([0-9.]+)", err)
        if mm:
            self.spin = mm.group(1)
        self.data["setup"].append(
            f"Work stealing: `tailor run --workload synthetic:DEMAND --policy P --cores {self.cores} --rps {rps:.0f} "
            f"--requests {n} --seed S" + (f" --spin-rate {self.spin}" if self.spin else "")
            + "` (75%: mean work 10 ms); steal-first first with --records, target = its live p99; tail-control's "
            f"table from `tailor plan tail-control --cores {self.cores} --rps {rps:.0f} --target-ms T "
            f"--max-active {max(40, 4 * self.cores)}` (--distribution for Bing-like, --demand for log-normal); "
            f"predictions `tailor simulate` with the same policy, demand, rps, seed and target"
            + (f" and {' '.join(self.mechanics)} (the executor's mechanics)" if self.mechanics else ""))
        for r in range(max_rounds):
            est = self.ws_round_estimate()
            if r > 0 and self.elapsed() + est > self.budget:
                self.skip(f"work-stealing round {r}: {est:.0f} s estimated, {self.left():.0f} s left")
                break
            ph = self.phase(f"work stealing round {r}", est)
            for wi, (name, demand, plan_arg) in enumerate(works):
                self.ws_work(r, wi, name, demand, plan_arg, rps, n)
            self.end_phase(ph)
            self.write_report()

    def ws_run(self, policy, demand, rps, n, seed, target=None, table=None, records=None):
        cmd = [self.tailor, "run", "--workload", f"synthetic:{demand}", "--policy", policy,
               "--cores", self.cores, "--rps", f"{rps:.3f}", "--requests", n, "--seed", seed]
        if self.spin:
            cmd += ["--spin-rate", self.spin]
        if target is not None:
            cmd += ["--target-ms", f"{target:.3f}"]
        if table:
            cmd += ["--table", table]
        if records:
            cmd += ["--records", records]
        est = n / rps * 1.1 + 0.8
        timeout = min(max(30.0, 5 * est), self.budget + 20 - self.elapsed())
        rc, out, err, wall = self.run(cmd, timeout, f"ws {policy} {demand}")
        s = self.last_json(out) if rc == 0 else None
        return s, (None if s else self.err_tail(err, rc)), wall

    def ws_sim(self, policy, demand, rps, n, seed, target, table=None):
        cmd = [self.tailor, "simulate", "--cores", self.cores, "--policy", policy, "--demand", demand,
               "--arrivals", "poisson", "--rps", f"{rps:.3f}", "--requests", n, "--seed", seed,
               "--target-ms", f"{target:.3f}", *self.mechanics]
        if table:
            cmd += ["--table", table]
        rc, out, err, _ = self.run(cmd, 60, f"ws-sim {policy} {demand}")
        if rc != 0:
            self.log(f"simulate {policy} {demand} failed: {self.err_tail(err, rc)}")
            return None
        return self.last_json(out)

    def ws_work(self, r, wi, name, demand, plan_arg, rps, n):
        seed = self.seed * 100 + 50 + r * 10 + wi
        est_run = n / rps * 1.1 + 0.8
        if self.elapsed() + 3 * est_run > self.budget + 10:
            self.skip(f"work stealing on {name}, round {r}: the budget is spent")
            return
        rec_path = self.out / f"ws-{name}-r{r}-steal-first-records.csv"
        sf, err, wall = self.ws_run("steal-first", demand, rps, n, seed, records=rec_path)
        if sf is None:
            self.skip(f"work stealing on {name}, round {r}: steal-first failed ({err})")
            return
        target = sf["latency_ms"]["p99"]
        try:
            sf["miss_ratio"] = miss_ratio_from_records(rec_path, target, sf.get("warmup", 0))
        except (OSError, KeyError, ValueError):
            sf["miss_ratio"] = None
        sf["target_ms"] = target
        self.ws_commit(sf, "steal-first", name, r, rps, target, seed,
                       self.ws_sim("steal-first", demand, rps, n, seed, target), wall)
        order = seeded_order(["admit-first", "tail-control"], self.seed, 100 + r * 10 + wi)
        for pol in order:
            if self.elapsed() + est_run > self.budget + 10:
                self.skip(f"work stealing {pol} on {name}, round {r}: the budget is spent")
                continue
            table = None
            if pol == "tail-control":
                table = self.out / f"tc-table-{name}-r{r}.json"
                rc, out, e2, _ = self.run([self.tailor, "plan", "tail-control", *plan_arg, "--cores", self.cores,
                                           "--rps", f"{rps:.3f}", "--target-ms", f"{target:.3f}",
                                           "--max-active", max(40, 4 * self.cores), "--out", table],
                                          60, "plan-tail-control")
                if rc != 0:
                    self.skip(f"tail-control on {name}, round {r}: its plan failed ({self.err_tail(e2, rc)})")
                    continue
            s, err, wall = self.ws_run(pol, demand, rps, n, seed, target=target, table=table)
            if s is None:
                rec = {"error": err}
                self.ws_commit(rec, pol, name, r, rps, target, seed, None, wall)
                continue
            self.ws_commit(s, pol, name, r, rps, target, seed,
                           self.ws_sim(pol, demand, rps, n, seed, target, table), wall)

    def ws_commit(self, summary, label, name, r, rps, target, seed, sim, wall):
        rec = dict(summary)
        rec.update(family="work-stealing", label=label, workload=name, load=WS_LOAD, round=r, rps=rps,
                   target_ms=target, seed=seed, wall_s=round(wall, 2), sim=sim)
        self.data["ws_cells"].append(rec)
        self.append_cell(rec)
        lv = (rec.get("latency_ms") or {}).get("p99")
        sv = ((sim or {}).get("latency_ms") or {}).get("p99")
        self.log(f"ws r{r} {name:9s} {label:12s} target {target:.1f} ms: miss {pct(rec.get('miss_ratio'))}% "
                 f"(sim {pct((sim or {}).get('miss_ratio'))}%), p99 {fmt(lv)} ms (sim {fmt(sv)}) ({wall:.1f} s)")

    # -- main -------------------------------------------------------------------------------
    def main(self):
        if not os.access(self.tailor, os.X_OK):
            print(f"live-check: no tailor binary at {self.tailor}: build it with "
                  f"`cargo build --release` or pass --tailor PATH", file=sys.stderr)
            return 2
        self.log(f"live check, {self.data['mode']} mode, {self.cores} cores, budget {self.budget:.0f} s, out {self.out}")
        rc = 0
        try:
            self.machine()
            # Run a private copy, so that a rebuild during the check cannot swap the binary.
            try:
                self.tmp = tempfile.mkdtemp(prefix="live-check-")
                copy = os.path.join(self.tmp, "tailor")
                shutil.copy2(self.tailor, copy)
                self.tailor = copy
            except OSError as e:
                self.log(f"could not copy the binary ({e}); running {self.tailor} itself")
            self.write_report()
            self.prepare()
            self.capacity()
            self.write_report()
            self.search()
            self.work_stealing()
            self.data["status"] = "complete" if not self.data["skipped"] else "complete, some cells skipped"
        except Fatal as e:
            self.data["status"] = f"could not run: {e}"
            self.log(f"FATAL: {e}")
            rc = 1
        except (Interrupted, KeyboardInterrupt) as e:
            self.data["status"] = f"interrupted ({e or 'SIGINT'}) at +{self.elapsed():.0f} s: partial results"
            self.log("interrupted: writing the report")
            rc = 0 if (self.data["cells"] or self.data["ws_cells"]) else 1
        except Exception as e:  # an unexpected bug: keep what was measured
            import traceback
            try:
                traceback.print_exc()
            except (OSError, ValueError):
                pass
            self.data["notes"].append("script error: " + "".join(
                traceback.format_exception_only(type(e), e)).strip())
            self.data["status"] = f"stopped by an error in the script ({type(e).__name__}: {e}): partial results"
            rc = 0 if (self.data["cells"] or self.data["ws_cells"]) else 1
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            self.write_report()
            if self.tmp:
                shutil.rmtree(self.tmp, ignore_errors=True)
            self.log(f"done: {self.data['status']}; report {self.out / 'report.md'} ({self.elapsed():.0f} s)")
        return rc


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="CI mode: a generated corpus (no network, no GCIDE), loads 30/60/75%%, 2 rounds of "
                         "small cells, one small work-stealing round; about 2 minutes on 2 cores")
    ap.add_argument("--out", help="output directory (default: live-check-YYYYMMDD-HHMMSS)")
    ap.add_argument("--tailor", help="the tailor binary (default: target/release/tailor in the repository)")
    ap.add_argument("--cores", type=int, help="cores C (default: os.cpu_count(), at most 16)")
    ap.add_argument("--budget-s", type=float,
                    help="stop launching new cells when this much time is nearly spent (default 470, quick 170)")
    ap.add_argument("--scratch", help="where the corpus and the search index go (default: --out); "
                                       "keep them out of a results folder that is copied back")
    ap.add_argument("--export", help="after every round, copy report.md, cells.jsonl and live-check.tar.gz "
                                      "(all other results but the corpus and index) here")
    ap.add_argument("--gcide-dir", help="full mode: a folder with gcide.dict.dz and gcide.index to use when "
                                         "/usr/share/dictd has none (converted to a --corpus file)")
    ap.add_argument("--seed", type=int, default=1, help="base seed of the shuffles and the runs (default 1)")
    ap.add_argument("--rounds", type=int, help="search rounds at most (default 3, quick 2)")
    ap.add_argument("--cell-s", type=float, help="seconds of arrivals per search cell (default 2, quick 1)")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    return Check(args).main()


if __name__ == "__main__":
    sys.exit(main())
