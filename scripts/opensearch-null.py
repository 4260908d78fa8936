#!/usr/bin/env python3
"""How often issue 40's p99 criterion calls FM a miss when it is not, with this VM's noise.

The criterion: FM's p99 is not worse than mode `none`'s by more than 10%, each mode's p99
taken as the median of R interleaved rounds, at each of four loads. This script measures
the noise the criterion faces from every recorded run of scripts/opensearch-live.py, and
simulates the criterion under it.

Model (two-way, on log p99 of one mode in one round at one load of one run):
    log p99 = mu[mode] + rho[round] + e,
rho shared by the modes of a round (the machine's speed that round), e a mode's own noise
(its tail's sampling noise and the VM's bursts during its cell). The residual variance of
e is pooled over every (run, load) with at least 3 rounds, with (R - 1)(M - 1) degrees of
freedom each; rho's variance from the round means' mean square (E = M var(rho) + var(e)).
Real differences between modes that change from round to round count as noise here, as
they do for the criterion.

Then, for FM whose true p99 is EFFECT times `none`'s, it draws R rounds at 4 loads and
counts how often no load misses (median FM / median none <= 1.1). Against both `none` and
`all` the chance is lower still: this is an upper bound on the criterion's pass rate.

With --pool RUN ..., it also prints FM's paired ratio to each mode, pooled over the named
runs' rounds: the geometric mean of FM / mode within a round, with a 95% t interval; and the
same ratio at equal hypervisor steal. `tailor load` records the host's steal time over each
cell (`host.steal_ms` in load-runs.jsonl): CPU the VM was owed and did not get, which no mode
causes. A least-squares fit of log(FM / mode) = a[load] + b (steal of FM's cell - steal of
the mode's), with one slope b over every load, gives exp(a[load]): the ratio had both cells
lost the same time to steal. A 95% interval from the fit's residuals goes with each.

Usage: python3 scripts/opensearch-null.py [--runs DIR] [--trials N] [--seed S] [--blocks K] [--pool RUN ...]
       python3 scripts/opensearch-null.py --edges RUN SECONDS
       python3 scripts/opensearch-null.py --longest RUN
(--blocks K: the noise of the runs whose cells the live script sent in K blocks. --edges: a
blocked run's paired ratios as recorded and with each block's first and last SECONDS of
requests dropped, to see whether the node starting each block idle and draining at its end
moves them. --longest: FM's latency over each mode's query by query on the run's longest 3%
of queries, per round. --fm MODE: the mode these compare with the others, default fm; a
run with the live script's --also-yield has a second, fm-cores or fm-row.)
Pure Python (no numpy); seeded.
"""
import argparse
import gzip
import importlib.util
import json
import math
import random
import statistics
from pathlib import Path

# The live script's own definitions (its p99 and what counts as a failed request), so that the
# two scripts cannot drift apart.
_spec = importlib.util.spec_from_file_location("opensearch_live", Path(__file__).resolve().parent / "opensearch-live.py")
LIVE = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(LIVE)

# The mode --pool, --edges and --longest compare with the others (--fm), and its label.
FM = "fm"


def label(mode):
    return "FM" if mode == "fm" else mode


def others(present, first=("all", "none")):
    """The modes FM is compared with, of those `present`: `first`'s order (the order of the
    outputs stored before --fm existed), then any FM mode but FM itself."""
    return [m for m in first + ("fm", "fm-cores", "fm-row") if m != FM and m in present]

T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
        10: 2.23, 11: 2.20, 12: 2.18, 14: 2.14, 17: 2.11, 20: 2.09, 29: 2.05}


def t975(dof):
    """The 97.5% point of Student's t, from the nearest tabled degrees of freedom below."""
    return T975[max(k for k in T975 if k <= dof)] if dof >= 1 else float("inf")


def cells_of(path):
    r = json.loads(path.read_text())
    return [c for c in r.get("cells", []) if c.get("p99_ms")], r.get("quick", False), r.get("args", {}).get("blocks", 1)


def noise(runs_dir, blocks=1):
    """Pooled residual and round sigmas of log p99 over every run with at least 3 rounds whose
    cells were sent in `blocks` blocks (1: each in one piece)."""
    ss = ssr = 0.0
    dof = dofr = 0
    modes_n = []
    used = []
    for p in sorted(runs_dir.glob("*/results.json")):
        cells, quick, b = cells_of(p)
        rounds = sorted({c["round"] for c in cells})
        if quick or len(rounds) < 3 or b != blocks:
            continue
        used.append(p.parent.name)
        for load in sorted({c["load"] for c in cells}):
            x = {(c["round"], c["mode"]): math.log(c["p99_ms"]) for c in cells if c["load"] == load}
            modes = sorted({m for (_, m) in x})
            if len(modes) < 2 or any((r, m) not in x for r in rounds for m in modes):
                continue
            n_r, n_m = len(rounds), len(modes)
            g = sum(x.values()) / (n_r * n_m)
            rm = {r: sum(x[r, m] for m in modes) / n_m for r in rounds}
            mm = {m: sum(x[r, m] for r in rounds) / n_r for m in modes}
            ss += sum((x[r, m] - rm[r] - mm[m] + g) ** 2 for r in rounds for m in modes)
            dof += (n_r - 1) * (n_m - 1)
            ssr += n_m * sum((rm[r] - g) ** 2 for r in rounds)
            dofr += n_r - 1
            modes_n.append(n_m)
    if dof == 0:
        raise SystemExit(f"error: no run under {runs_dir} in {blocks} block(s) has 3 rounds of at least 2 modes")
    se = math.sqrt(ss / dof)
    m = statistics.mean(modes_n)
    sr = math.sqrt(max(0.0, (ssr / dofr - se**2) / m))
    return se, sr, dof, used


def pass_rate(rng, rounds, sigma_e, sigma_r, effect, trials, loads=4, margin=1.1):
    ok = 0
    for _ in range(trials):
        passed = True
        for _ in range(loads):
            rho = [rng.gauss(0, sigma_r) for _ in range(rounds)]
            fm = statistics.median(r + rng.gauss(0, sigma_e) + math.log(effect) for r in rho)
            none = statistics.median(r + rng.gauss(0, sigma_e) for r in rho)
            if fm - none > math.log(margin):
                passed = False
        ok += passed
    return ok / trials


def pooled(runs_dir, names):
    runs = [cells_of(runs_dir / name / "results.json")[0] for name in names]
    loads = sorted({c["load"] for cells in runs for c in cells})
    for mode in others({c["mode"] for cells in runs for c in cells}, ("none", "all")):
        for load in loads:
            lr = []
            for cells in runs:
                at = {(c["round"], c["mode"]): c["p99_ms"] for c in cells if c["load"] == load}
                for r in sorted({r for (r, _) in at}):
                    if (r, FM) in at and (r, mode) in at:
                        lr.append(math.log(at[r, FM] / at[r, mode]))
            if len(lr) < 2:
                continue
            mean = statistics.mean(lr)
            half = t975(len(lr) - 1) * statistics.stdev(lr) / math.sqrt(len(lr))
            print(f"  {label(FM)} / {mode:4s} at {load:.0%}: {math.exp(mean):.2f} "
                  f"(95% interval {math.exp(mean - half):.2f}-{math.exp(mean + half):.2f}, "
                  f"{len(lr)} rounds; above 1: {sum(x > 0 for x in lr)})")


def cell_steal(runs_dir, names):
    """(mode, load, log p99 ratio FM / mode, steal gap in s) for every round of the named runs:
    from the cells' own steal where results.json has it, else from load-runs.jsonl."""
    pts = []
    for name in names:
        d = {}
        cells = cells_of(runs_dir / name / "results.json")[0]
        if cells and all(c.get("steal_ms") is not None for c in cells):
            d = {(f"r{c['round']}", str(c["load"]), c["mode"]): (c["p99_ms"], c["steal_ms"] / 1e3) for c in cells}
        for line in (runs_dir / name / "load-runs.jsonl").read_text().splitlines() if not d else []:
            x = json.loads(line)
            parts = x["tag"].split("-")
            host = x["summary"].get("host") or {}
            if len(parts) != 3 or not parts[0].startswith("r") or host.get("steal_ms") is None:
                continue
            d[tuple(parts)] = (x["summary"]["latency_ms"]["p99"], host["steal_ms"] / 1e3)
        for (r, load, mode), (p99, steal) in d.items():
            if mode != FM:
                continue
            for other in ("none", "all"):
                if (r, load, other) in d:
                    q, s = d[r, load, other]
                    pts.append((other, float(load), math.log(p99 / q), steal - s))
    return pts


def steal_adjusted(runs_dir, names):
    pts = cell_steal(runs_dir, names)
    for mode in ("none", "all"):
        by = {}
        for m, load, y, x in pts:
            if m == mode:
                by.setdefault(load, []).append((x, y))
        if not by or sum(len(v) for v in by.values()) <= len(by) + 1:
            continue
        mean = {ld: (statistics.mean(x for x, _ in v), statistics.mean(y for _, y in v)) for ld, v in by.items()}
        sxy = sum((x - mean[ld][0]) * (y - mean[ld][1]) for ld, v in by.items() for x, y in v)
        sxx = sum((x - mean[ld][0]) ** 2 for ld, v in by.items() for x, _ in v)
        if sxx == 0:
            continue
        b = sxy / sxx
        a = {ld: my - b * mx for ld, (mx, my) in mean.items()}
        res = [y - a[ld] - b * x for ld, v in by.items() for x, y in v]
        dof = len(res) - len(by) - 1
        sd = math.sqrt(sum(e * e for e in res) / dof)
        print(f"  {label(FM)} / {mode}: each second more steal in FM's cell multiplies the ratio by {math.exp(b):.3f}; "
              f"residual sigma {sd:.2f}")
        for ld in sorted(by):
            n = len(by[ld])
            half = t975(dof) * math.sqrt(sd**2 / n + (mean[ld][0] ** 2) * sd**2 / sxx)
            print(f"    at {ld:.0%}: {math.exp(mean[ld][1]):.2f} as measured, {math.exp(a[ld]):.2f} at equal steal "
                  f"(95% interval {math.exp(a[ld] - half):.2f}-{math.exp(a[ld] + half):.2f}, {n} rounds)")


def block_latencies(run_dir):
    """{(round, load, mode): [each block's latencies in send order]} of a run the live script
    sent in blocks: from latencies.jsonl.gz's per-block lists, or (runs that kept one list per
    cell) that list cut at each block's measured count, read from load-runs.jsonl, which only
    holds when no request in the cell failed."""
    if not (run_dir / "latencies.jsonl.gz").is_file():
        raise SystemExit(f"error: {run_dir}: no latencies.jsonl.gz; --edges and --longest need a run "
                         "the live script sent with --blocks")
    sizes = {}
    for line in (run_dir / "load-runs.jsonl").read_text().splitlines():
        x = json.loads(line)
        parts = x["tag"].split("-")
        if len(parts) == 4 and parts[0].startswith("r") and parts[3].startswith("b"):
            sm = x["summary"]
            key = (int(parts[0][1:]), float(parts[1]), parts[2])
            ok = LIVE.failures(sm) == 0
            sizes.setdefault(key, []).append(sm["requests"] - sm["warmup"] if ok else None)
    out = {}
    with gzip.open(run_dir / "latencies.jsonl.gz", "rt") as f:
        for line in f:
            x = json.loads(line)
            key = (x["round"], x["load"], x["mode"])
            if "blocks_ms" in x:
                out[key] = x["blocks_ms"]
                continue
            flat, cuts = x["latencies_ms"], sizes.get(key, [])
            if None in cuts or sum(cuts) != len(flat):
                raise SystemExit(f"error: {run_dir.name}: cannot split round {key[0]} load {key[1]} "
                                 f"{key[2]} into its blocks (failed requests)")
            blocks, i = [], 0
            for n in cuts:
                blocks.append(flat[i:i + n])
                i += n
            out[key] = blocks
    return out


def edges(runs_dir, name, seconds):
    """FM's paired p99 ratios of a blocked run as recorded and with each block's first and last
    `seconds` of requests dropped (the node starting a block idle and draining at its end)."""
    run_dir = runs_dir / name
    lat = block_latencies(run_dir)
    res = json.loads((run_dir / "results.json").read_text())
    rps = {(c["round"], c["load"]): c["rps"] for c in res["cells"]}

    def p99(blocks, drop):
        xs = [x for b in blocks for x in b[drop:len(b) - drop]]
        return LIVE.nearest_rank(xs, 0.99) if xs else float("nan")

    rounds = sorted({r for r, _, _ in lat})
    # Groups of three rounds (the statistic); rounds left over join the last group.
    halves = [rounds[i:i + 3] for i in range(0, len(rounds) - 2, 3)] or [rounds]
    halves[-1] = halves[-1] + rounds[sum(len(h) for h in halves):]
    print(f"{name}: {label(FM)}'s p99 over each mode's, paired within a round; medians of rounds "
          + ", ".join(f"{h[0]}-{h[-1]}" for h in halves) + f"; trimmed: each block's first and last {seconds:g} s dropped")
    for mode in others({k[2] for k in lat}):
        for ld in sorted({l for _, l, _ in lat}):
            row = []
            for drop_s in (0.0, seconds):
                ratios = {}
                for r in rounds:
                    if (r, ld, FM) in lat and (r, ld, mode) in lat:
                        drop = round(drop_s * rps[r, ld])
                        ratios[r] = p99(lat[r, ld, FM], drop) / p99(lat[r, ld, mode], drop)
                row.append(" ".join(f"{statistics.median(ratios[r] for r in h if r in ratios):.2f}" for h in halves))
            print(f"  {label(FM)} / {mode:4s} at {ld:.0%}: as recorded {row[0]}; trimmed {row[1]}")


def longest(runs_dir, name, share=0.03):
    """Query by query, on a blocked run's longest `share` of queries: the modes got the same
    queries in the same order, so each measured position is one query under every mode. The
    longest are chosen by the mean of the modes' log latencies, which favours no mode; per round,
    the geometric mean of FM's latency over each other mode's, and of all's over none's, on them."""
    lat = block_latencies(runs_dir / name)
    print(f"{name}: the longest {share:.0%} of queries (by the modes' mean), per round: "
          "geometric means of the paired latency ratios")
    for ld in sorted({l for _, l, _ in lat}):
        modes = sorted({m for _, l, m in lat if l == ld})
        pairs = [(FM, m) for m in others(modes)] + [("all", "none")]
        rows = {f"{label(p)} / {label(q)}": [] for p, q in pairs}
        for r in sorted({r for r, l, _ in lat if l == ld}):
            sizes = {m: [len(b) for b in lat[r, ld, m]] for m in modes}
            if len({tuple(v) for v in sizes.values()}) > 1:
                # A failed request leaves no line, so positions would no longer pair up.
                raise SystemExit(f"error: {name}: round {r} load {ld}: the modes measured different "
                                 f"counts in some block ({sizes}); their queries cannot be paired")
            x = {m: [v for b in lat[r, ld, m] for v in b] for m in modes}
            k = len(x["none"])
            key = [sum(math.log(x[m][i]) for m in x) / len(x) for i in range(k)]
            top = sorted(range(k), key=key.__getitem__)[-max(1, int(k * share)):]
            for p, q in pairs:
                rows[f"{label(p)} / {label(q)}"].append(math.exp(statistics.mean(math.log(x[p][i] / x[q][i]) for i in top)))
        print(f"  at {ld:.0%}: " + "; ".join(f"{k} " + " ".join(f"{v:.2f}" for v in vs) for k, vs in rows.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=Path, default=Path(__file__).resolve().parent.parent / "runs" / "opensearch")
    ap.add_argument("--trials", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pool", nargs="+", default=[], metavar="RUN")
    ap.add_argument("--edges", nargs=2, metavar=("RUN", "SECONDS"), default=None,
                    help="a blocked run's ratios again without each block's first and last SECONDS")
    ap.add_argument("--longest", metavar="RUN", default=None,
                    help="a blocked run's paired ratios query by query on its longest 3%% of queries")
    ap.add_argument("--fm", default="fm", metavar="MODE",
                    help="the mode --pool, --edges and --longest compare with the others (fm-cores or fm-row "
                         "in a run with the live script's --also-yield)")
    ap.add_argument("--blocks", type=int, default=1,
                    help="measure the noise of runs whose cells were sent in this many blocks (--blocks of the live script)")
    a = ap.parse_args()
    if a.trials < 1:
        ap.error("--trials must be at least 1")
    global FM
    FM = a.fm
    for name in ([a.longest] if a.longest else []) + ([a.edges[0]] if a.edges else []) + a.pool:
        modes = {c["mode"] for c in cells_of(a.runs / name / "results.json")[0]}
        if FM not in modes:
            ap.error(f"--fm {FM}: run {name} has no such mode (it has {', '.join(sorted(modes))})")
    if a.longest:
        longest(a.runs, a.longest)
        return
    if a.edges:
        try:
            seconds = float(a.edges[1])
        except ValueError:
            seconds = -1.0
        if not seconds >= 0:
            ap.error(f"--edges {a.edges[0]} {a.edges[1]}: SECONDS must be a number, 0 or more")
        edges(a.runs, a.edges[0], seconds)
        return
    se, sr, dof, used = noise(a.runs, a.blocks)
    print(f"{len(used)} runs with 3+ rounds under {a.runs}" + (f", cells in {a.blocks} blocks" if a.blocks > 1 else ""))
    print(f"sigma of a mode's log p99 in a round, round effect removed: {se:.3f} ({dof} dof); "
          f"of the round effect: {sr:.3f}")
    rng = random.Random(a.seed)
    print("P(no load of 4 misses FM / none <= 1.10, medians of R rounds), FM's true p99 = EFFECT x none's:")
    for rounds in (3, 5, 6, 7, 15):
        row = [f"{e:.1f}: {pass_rate(rng, rounds, se, sr, e, a.trials):.2f}" for e in (1.0, 0.9, 0.8)]
        print(f"  R = {rounds:2d}   " + "   ".join(row))
    if a.pool:
        designs = {cells_of(a.runs / name / "results.json")[2] for name in a.pool}
        if len(designs) > 1:
            ap.error(f"--pool mixes runs sent in one piece and in blocks ({sorted(designs)}): "
                     "their steal relates to p99 differently; pool one design at a time")
        if designs != {a.blocks}:
            ap.error(f"--pool's runs were sent in {designs.pop()} block(s): give the same --blocks, "
                     "so that the noise printed is that design's")
        print("Paired, pooled over " + ", ".join(a.pool) + ":")
        pooled(a.runs, a.pool)
        print("At equal hypervisor steal, pooled over the same runs:")
        steal_adjusted(a.runs, a.pool)


if __name__ == "__main__":
    main()
