#!/usr/bin/env python3
"""The FM paper's evaluation (Haque et al., ASPLOS 2015, §6 Lucene and §7 Bing) in
tailor's simulator; docs/reproduction.md shows its output.

Usage:
  python3 scripts/reproduce-fm.py [--out DIR] [--seeds N] [--seed S] [--requests K]
                                  [--only SECTION[,SECTION...]]

Sections: lucene, flat, quoted, interval, boost, breakdown, variation, bing, literal.
Every FM table is planned with `tailor plan fm --profile P --cores M --max-degree N
--step-ms S --max-interval-ms Y --percentile 0.99 --max-load 60` and no other flag (the
defaults: target parallelism M, `--wait-model running`), except in the `literal` section,
which plans the paper's literal reading. Loads are fractions of SEQ's capacity
(cores / mean work). A cell is the median over N seeds (default 3) of runs of K requests
(default 20,000; the first 5% are warm-up); every policy sees the same arrivals and
demands for a seed. Markdown goes to stdout, every run summary to DIR/runs.jsonl
(default /tmp/tailor-fm). About 2 minutes on 2 cores, after the release build.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAILOR = os.environ.get("TAILOR", os.path.join(ROOT, "target", "release", "tailor"))
FRACTIONS = [0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9]


def P99(r):
    return r["latency_ms"]["p99"]


def MEAN(r):
    return r["latency_ms"]["mean"]


def median(summaries, stat):
    return {label: statistics.median(stat(r) for r in runs) for label, runs in summaries.items()}


def sh(*args):
    out = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, args))}\n{out.stderr}")
    return out.stdout


class Setup:
    """A profile with its FM and Adaptive tables, planned with the defaults."""

    def __init__(self, ctx, name, demand, cores, degree, step, y):
        self.ctx, self.name, self.cores, self.degree = ctx, name, cores, degree
        out = ctx.out
        self.profile = f"{out}/{name}.csv"
        sh(TAILOR, "profile", "generate", "--demand", demand, "--requests", 10000,
           "--max-degree", degree, "--seed", 1, "--out", self.profile)
        desc = sh(TAILOR, "profile", "describe", self.profile)
        self.mean = float(next(l for l in desc.splitlines() if l.startswith("work_ms mean")).split()[-1])
        self.capacity = cores * 1000.0 / self.mean
        self.plan_args = ["--profile", self.profile, "--max-degree", degree, "--step-ms", step,
                          "--max-interval-ms", y, "--percentile", 0.99, "--max-load", 60]
        self.fm = self.plan_fm("fm", "--cores", cores)
        self.adaptive = f"{out}/{name}-adaptive.json"
        sh(TAILOR, "plan", "adaptive", "--profile", self.profile, "--max-degree", degree,
           "--target-parallelism", cores, "--max-load", 60, "--out", self.adaptive)

    def plan_fm(self, label, *flags):
        path = f"{self.ctx.out}/{self.name}-{label}.json"
        sh(TAILOR, "plan", "fm", *self.plan_args, *flags, "--out", path)
        return path

    def rps(self, fraction):
        return round(fraction * self.capacity, 2)

    def runs(self, policies, rps, fm_table=None, arrivals="poisson", requests=None, seeds=None):
        """Summaries of every policy at one load, over the seeds."""
        args = [TAILOR, "simulate", "--cores", self.cores, "--demand", f"profile:{self.profile}",
                "--arrivals", arrivals, "--rps", rps, "--requests", requests or self.ctx.requests,
                "--seed", self.ctx.seed, "--seeds", seeds or self.ctx.seeds, "--format", "json",
                "--table", fm_table or self.fm, "--table", self.adaptive]
        for p in policies:
            args += ["--policy", p]
        rows = [json.loads(l) for l in sh(*args).splitlines()]
        self.ctx.log.writelines(json.dumps({"setup": self.name, **r}) + "\n" for r in rows)
        return {p: [r for r in rows if r["policy"] == p] for p in policies}

    def summaries(self, columns, rps):
        """{label: the seeds' summaries} for columns of (label, policy, fm table or None)."""
        by_table = {}
        for label, policy, table in columns:
            by_table.setdefault(table, []).append((label, policy))
        out = {}
        for table, cols in by_table.items():
            runs = self.runs(sorted({p for _, p in cols}), rps, table)
            for label, policy in cols:
                out[label] = runs[policy]
        return out

    def cells(self, columns, rps, stat=P99):
        """{label: median of `stat` over the seeds}."""
        return median(self.summaries(columns, rps), stat)


class Ctx:
    def __init__(self, args):
        self.out, self.seeds, self.seed, self.requests = args.out, args.seeds, args.seed, args.requests
        os.makedirs(self.out, exist_ok=True)
        self.log = open(f"{self.out}/runs.jsonl", "w")


def table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()


def sweep(setup, columns, fm_label, peers, fractions=FRACTIONS, adaptive="Adaptive"):
    """p99 and mean tables over loads, with FM against the best peer and Adaptive."""
    p99, mean = {}, {}
    for f in fractions:
        runs = setup.summaries(columns, setup.rps(f))
        p99[f], mean[f] = median(runs, P99), median(runs, MEAN)
    labels = [c[0] for c in columns]
    for what, cells in (("p99", p99), ("mean", mean)):
        print(f"{what} latency (ms):\n")
        rows = []
        for f in fractions:
            c = cells[f]
            best = min(c[p] for p in peers)
            lowest = min(c[l] for l in labels)
            row = [f"{setup.rps(f)} ({f:.0%})"]
            row += [f"**{c[l]:.1f}**" if c[l] == lowest else f"{c[l]:.1f}" for l in labels]
            row += [f"{c[fm_label] / best:.2f}", f"{c[fm_label] / c[adaptive]:.2f}"]
            rows.append(row)
        table(["rps (load)"] + labels + [f"{fm_label} / best", f"{fm_label} / Adaptive"], rows)
    return p99


def lucene_columns(setup, rc):
    return [("SEQ", "seq", None), ("FIX-2", "fix:2", None), ("FIX-4", "fix:4", None),
            ("Adaptive", "adaptive", None), ("RC", rc, None), ("FM", "fm", None),
            ("FM no boost", "fm:noboost", None)]


def rc_policy(setup):
    out = sh(TAILOR, "plan", "rc", "--demand", f"profile:{setup.profile}", "--cores", setup.cores,
             "--rps", setup.rps(0.6), "--max-degree", setup.degree)
    return json.loads(out)["policy"]


def paper_table2(ctx):
    paths = {}
    for reading in ("arrival", "executed"):
        paths[reading] = f"{ctx.out}/paper-table2-{reading}.json"
        sh(sys.executable, os.path.join(ROOT, "scripts", "paper-table2.py"), reading, paths[reading])
    return paths


def lucene(ctx, shape="lucene"):
    s = Setup(ctx, shape, f"shape:{shape}", 15, 4, 5, 500)
    rc = rc_policy(s)
    t2 = paper_table2(ctx)
    print(f"### {shape}: mean work {s.mean:.1f} ms, SEQ's capacity {s.capacity:.1f} rps, "
          f"RC planned at 60% load: `{rc}`\n")
    cols = lucene_columns(s, rc) + [("Table 2 (arrival)", "fm", t2["arrival"]),
                                    ("Table 2 (executed)", "fm", t2["executed"])]
    sweep(s, cols, "FM", ["SEQ", "FIX-2", "FIX-4", "Adaptive", "RC"])
    return s, rc


def quoted(ctx, s, rc):
    print("### FM at the paper's quoted loads (§6.2)\n")
    paper = {40: {"FIX-2": (-33, -29), "Adaptive": (-32, None), "RC": (-22, None)},
             43: {"FIX-2": (-40, -20), "Adaptive": (-30, None), "RC": (-38, None)}}
    cols = [("FIX-2", "fix:2", None), ("Adaptive", "adaptive", None), ("RC", rc, None),
            ("FM", "fm", None)]
    rows = []
    for rps in (40, 43):
        runs = s.summaries(cols, rps)
        p99, mean = median(runs, P99), median(runs, MEAN)
        for peer in ("FIX-2", "Adaptive", "RC"):
            pp, pm = paper[rps][peer]
            rows.append([f"{rps} ({rps / s.capacity:.0%})", peer,
                         f"{100 * (p99['FM'] / p99[peer] - 1):+.0f}%", f"{pp:+d}%",
                         f"{100 * (mean['FM'] / mean[peer] - 1):+.0f}%",
                         f"{pm:+d}%" if pm is not None else "not given"])
    table(["rps (load)", "against", "FM's p99", "paper", "FM's mean", "paper"], rows)


def interval(ctx, s):
    print("### Fixed-interval incremental parallelism (Fig. 4), p99 (ms)\n")
    cols = [("SEQ", "seq", None), ("FIX-4", "fix:4", None), ("interval 20 ms", "interval:20:4", None),
            ("interval 100 ms", "interval:100:4", None), ("interval 500 ms", "interval:500:4", None),
            ("FM", "fm", None)]
    rows = []
    for f in FRACTIONS:
        c = s.cells(cols, s.rps(f))
        rows.append([f"{s.rps(f)} ({f:.0%})"] + [f"{c[l]:.1f}" for l, _, _ in cols])
    table(["rps (load)"] + [c[0] for c in cols], rows)


def boost(ctx, s):
    print("### Selective thread priority boosting (Fig. 10(c)), p99 (ms)\n")
    p24 = s.plan_fm("running24", "--target-parallelism", 24)
    cols = [("FM", "fm", None), ("FM no boost", "fm:noboost", None),
            ("FM, P = 24", "fm", p24), ("FM, P = 24, no boost", "fm:noboost", p24),
            ("FIX-3", "fix:3", None), ("FIX-3 boost", "fix:3:boost", None)]
    rows = []
    for f in FRACTIONS:
        c = s.cells(cols, s.rps(f))
        rows.append([f"{s.rps(f)} ({f:.0%})"] + [f"{c[l]:.1f}" for l, _, _ in cols]
                    + [f"{100 * (1 - c[a] / c[b]):+.1f}%" for a, b in
                       (("FM", "FM no boost"), ("FM, P = 24", "FM, P = 24, no boost"),
                        ("FIX-3 boost", "FIX-3"))])
    table(["rps (load)"] + [c[0] for c in cols]
          + ["boost lowers FM by", "at P = 24", "boost lowers FIX-3 by"], rows)


def breakdown(ctx, s):
    print("### FM's parallelism and threads (Fig. 9), FM with boosting, seed "
          f"{ctx.seed}\n")
    rows = []
    for rps in (31, 36, 40, 45, 47, 48):
        r = s.runs(["fm"], rps, seeds=1)["fm"][0]
        dist = r["degree_distribution"]
        rows.append([f"{rps} ({rps / s.capacity:.0%})", f"{r['mean_degree']:.2f}",
                     f"{r['mean_degree_shortest_5pct']:.2f}", f"{r['mean_degree_longest_5pct']:.2f}",
                     " / ".join(f"{100 * x:.0f}" for x in dist), f"{r['mean_threads']:.1f}",
                     f"{r['cpu_utilization']:.2f}"])
    table(["rps (load)", "mean degree", "shortest 5%", "longest 5%",
           "% finishing at degree 1 / 2 / 3 / 4", "mean threads", "CPU utilization"], rows)


def variation(ctx, s):
    print("### Load variation (Fig. 11): 45, 30, 45, 30 rps, 500 requests each; p99 of the "
          "last 100 of each phase, median of 10 seeds\n")
    rows = []
    for label, policy in (("FM", "fm"), ("SEQ", "seq"), ("FIX-2", "fix:2"), ("FIX-4", "fix:4"),
                          ("Adaptive", "adaptive")):
        runs = s.runs([policy], 1, arrivals="phases:45*500,30*500,45*500,30*500",
                      requests=2000, seeds=10)[policy]
        rows.append([label] + [f"{statistics.median(r['phases'][i]['p99_last_100_ms'] for r in runs):.1f}"
                               for i in range(4)])
    table(["policy", "45 rps", "30 rps", "45 rps", "30 rps"], rows)


def bing(ctx):
    s = Setup(ctx, "bing", "shape:bing", 12, 3, 1, 200)
    print(f"### Bing: mean work {s.mean:.2f} ms, SEQ's capacity {s.capacity:.0f} rps\n")
    cols = [("SEQ", "seq", None), ("FIX-3", "fix:3", None), ("FIX-3, gate 30", "fix:3:gate=30", None),
            ("Adaptive", "adaptive", None), ("FM no boost", "fm:noboost", None), ("FM", "fm", None)]
    sweep(s, cols, "FM no boost", ["SEQ", "FIX-3", "FIX-3, gate 30", "Adaptive"])
    print("FM (no boost) against Adaptive at the paper's quoted rps (§7.2; paper: 26% and 24% lower):\n")
    rows = []
    for rps in (180, 260):
        c = s.cells([("Adaptive", "adaptive", None), ("FM", "fm:noboost", None)], rps)
        rows.append([f"{rps} ({rps / s.capacity:.0%})", f"{c['FM']:.1f}", f"{c['Adaptive']:.1f}",
                     f"{100 * (c['FM'] / c['Adaptive'] - 1):+.1f}%"])
    table(["rps (load)", "FM no boost", "Adaptive", "FM against Adaptive"], rows)
    print("Capacity at a 120 ms p99 (§7.2: FM serves the same load with 42% fewer servers "
          "than Adaptive): the highest rps, in steps of 1% of SEQ's capacity, whose p99 is "
          "at most 120 ms\n")
    caps = {}
    for label, policy in (("Adaptive", "adaptive"), ("FM no boost", "fm:noboost")):
        best = None
        for pct in range(30, 100):
            c = s.cells([(label, policy, None)], s.rps(pct / 100))
            if c[label] > 120:
                break
            best = pct
        caps[label] = best
    rows = [[l, f"{s.rps(p / 100)} ({p}%)"] for l, p in caps.items()]
    table(["policy", "highest rps with p99 <= 120 ms"], rows)
    a, f = caps["Adaptive"], caps["FM no boost"]
    print(f"Servers for the same load: FM needs {100 * (1 - a / f):.0f}% fewer than Adaptive.\n")
    print("FM's parallelism (Fig. 12(b, c)), seed 1:\n")
    rows = []
    for f in (0.3, 0.5, 0.7, 0.9):
        r = s.runs(["fm:noboost"], s.rps(f), seeds=1)["fm:noboost"][0]
        rows.append([f"{s.rps(f)} ({f:.0%})", f"{100 * r['degree_distribution'][0]:.0f}%",
                     f"{r['mean_degree']:.2f}", f"{r['mean_threads']:.1f}", f"{r['cpu_utilization']:.2f}"])
    table(["rps (load)", "sequential", "mean degree", "mean threads", "CPU utilization"], rows)
    return s


def literal(ctx, s, rc):
    print("### Sensitivity: the paper's literal reading (Lucene, p99 in ms)\n")
    variants = [("running, P = 15 (default)", s.fm),
                ("running, P = 24", s.plan_fm("running24", "--target-parallelism", 24)),
                ("Eq. 2 waits, P = 15", s.plan_fm("paper15", "--cores", 15, "--wait-model", "paper")),
                ("Eq. 2 waits, P = 24 (literal)", s.plan_fm("paper24", "--target-parallelism", 24,
                                                            "--wait-model", "paper"))]
    cols = [("Adaptive", "adaptive", None), ("RC", rc, None)]
    cols += [(label, "fm", path) for label, path in variants]
    rows = []
    for f in FRACTIONS:
        c = s.cells(cols, s.rps(f))
        rows.append([f"{s.rps(f)} ({f:.0%})"] + [f"{c[l]:.1f}" for l, _, _ in cols])
    table(["rps (load)"] + [c[0] for c in cols], rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="/tmp/tailor-fm")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--only", default="lucene,flat,quoted,interval,boost,breakdown,variation,bing,literal")
    args = ap.parse_args()
    only = set(args.only.split(","))
    if not os.environ.get("TAILOR"):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    ctx = Ctx(args)
    print(f"(seeds {args.seed}..{args.seed + args.seeds - 1}, {args.requests} requests per run)\n")
    s = rc = None
    if only & {"lucene", "quoted", "interval", "boost", "breakdown", "variation", "literal"}:
        print("## Lucene (15 cores, n = 4, step 5 ms, y = 500 ms)\n")
        if "lucene" in only:
            s, rc = lucene(ctx)
        else:
            s = Setup(ctx, "lucene", "shape:lucene", 15, 4, 5, 500)
            rc = rc_policy(s)
    if "flat" in only:
        lucene(ctx, "lucene-flat")
    for name, fn in (("quoted", quoted), ("interval", interval), ("boost", boost),
                     ("breakdown", breakdown), ("variation", variation)):
        if name in only:
            if name == "quoted":
                fn(ctx, s, rc)
            else:
                fn(ctx, s)
    if "bing" in only:
        print("## Bing (12 cores, n = 3, step 1 ms, y = 200 ms)\n")
        bing(ctx)
    if "literal" in only:
        literal(ctx, s, rc)


if __name__ == "__main__":
    main()
