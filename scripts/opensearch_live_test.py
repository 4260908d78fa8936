"""Tests of scripts/opensearch-live.py's and opensearch-null.py's pure parts (standard library only).

    python3 scripts/opensearch_live_test.py
"""

import argparse
import contextlib
import importlib.util
import io
import json
import math
import tempfile
import unittest
from pathlib import Path


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / file)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


live = load("opensearch_live", "opensearch-live.py")
null = load("opensearch_null", "opensearch-null.py")

# p99 per (round, mode) at one load: fm-cores is 1.2x fm in every round, fm 0.9x none.
P99 = {1: {"none": 100.0, "all": 120.0, "fm": 90.0, "fm-cores": 108.0},
       2: {"none": 50.0, "all": 40.0, "fm": 45.0, "fm-cores": 54.0},
       3: {"none": 80.0, "all": 80.0, "fm": 72.0, "fm-cores": 86.4}}


def cells(load=0.75):
    return [{"round": r, "load": load, "mode": m, "p99_ms": p, "steal_ms": 0.0}
            for r, by in P99.items() for m, p in by.items()]


class AlsoYieldTest(unittest.TestCase):
    def setUp(self):
        self.saved = dict(live.MODES)
        live.MODES["fm-cores"] = ("auto", True)

    def tearDown(self):
        live.MODES.clear()
        live.MODES.update(self.saved)

    def test_summary_has_the_second_fm_mode_and_fm_paired_to_it(self):
        (s,) = live.summarize(cells())
        o = s["others"]["fm-cores"]
        self.assertAlmostEqual(s["p99_ms"]["fm-cores"], 86.4)
        self.assertAlmostEqual(o["over_none"], 86.4 / 80.0)
        self.assertAlmostEqual(o["paired_over_none"], 1.08)
        self.assertEqual(o["paired_fm_over_it_each"], [0.833, 0.833, 0.833])
        # FM's own ratios are as without the fourth mode.
        self.assertAlmostEqual(s["paired_fm_over_none"], 0.9)

    def test_a_stored_run_with_it_is_summarized_without_the_flag(self):
        live.MODES.pop("fm-cores")  # --summarize parses no --also-yield
        (s,) = live.summarize(cells())
        self.assertAlmostEqual(s["others"]["fm-cores"]["paired_over_none"], 1.08)

    def test_without_it_the_summary_has_no_others(self):
        live.MODES.pop("fm-cores")
        rows = [c for c in cells() if c["mode"] != "fm-cores"]
        (s,) = live.summarize(rows)
        self.assertNotIn("others", s)


class PooledTest(unittest.TestCase):
    def pooled(self, fm):
        with tempfile.TemporaryDirectory() as d:
            run = Path(d) / "run"
            run.mkdir()
            (run / "results.json").write_text(json.dumps({"cells": cells()}))
            saved, null.FM = null.FM, fm
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    null.pooled(Path(d), ["run"])
            finally:
                null.FM = saved
            return out.getvalue()

    def test_fm_is_compared_with_every_other_mode(self):
        text = self.pooled("fm")
        for mode in ("none", "all", "fm-cores"):
            self.assertIn(f"FM / {mode:4s} at 75%", text)
        self.assertIn(f"FM / none at 75%: {0.9:.2f}", text)
        self.assertIn(f"at 75%: {1 / 1.2:.2f}", text.split("fm-cores")[1])

    def test_the_second_fm_mode_can_be_the_one_compared(self):
        text = self.pooled("fm-cores")
        self.assertIn(f"fm-cores / fm   at 75%: {1.2:.2f}", text)
        self.assertIn(f"fm-cores / none at 75%: {1.08:.2f}", text)


class RecentTest(unittest.TestCase):
    class Http:
        def __init__(self, n, total):
            self.n, self.total = n, total

        def call(self, method, path, body=None):
            ks = list(range(self.n))
            return {"queries": self.total, "recent": {"run_us": ks, "degree": [1] * self.n, "load": ks},
                    "degrees": {}, "admissions_waited": {}, "helpers": {}}

    def test_the_last_k_queries_by_the_count_before(self):
        rec, _, k = live.fm_recent(self.Http(10, 25), before=22)
        self.assertEqual(k, 3)
        self.assertEqual(rec["run_us"], [7, 8, 9])
        self.assertNotIn("sliced", rec)

    def test_no_new_query_gives_an_empty_record(self):
        rec, _, k = live.fm_recent(self.Http(10, 25), before=25)
        self.assertEqual((k, rec["run_us"]), (0, []))

    def test_more_queries_than_the_plugin_kept_are_cut_to_what_it_kept(self):
        rec, _, k = live.fm_recent(self.Http(10, 40), before=20)
        self.assertEqual(k, 20)
        self.assertEqual(len(rec["load"]), 10)
        split = live.fm_split(self.Http(10, 40), 20)
        self.assertTrue(split["truncated"])

    def test_a_cell_gathered_block_by_block_knows_when_it_was_cut(self):
        rec, _, k = live.fm_recent(self.Http(10, 40), before=20)
        self.assertTrue(live.fm_split(self.Http(10, 40), None, rec, k)["truncated"])
        self.assertFalse(live.fm_split(self.Http(10, 40), None, rec, len(rec["run_us"]))["truncated"])


class ProfileCsvTest(unittest.TestCase):
    """--profile-csv: the run plans from a given profile and measures none."""

    def plan(self, out, given, plan_bins=None):
        calls = []
        saved = live.sh
        live.sh = lambda args, timeout=None, **kw: calls.append([str(x) for x in args])
        try:
            a = argparse.Namespace(cores=2, max_degree=None, profile_csv=str(given), profile_queries=400,
                                   segments=16, repeat=3, max_interval_ms=None, tailor="tailor",
                                   target_parallelism=None, keep_sequential=60.0, latency_bound_share=None,
                                   plan_bins=plan_bins)
            with contextlib.redirect_stdout(io.StringIO()):
                return live.profile_and_plan(a, out, "cp", "corpus", "queries"), calls
        finally:
            live.sh = saved

    def plan_given(self, given, plan_bins=None):
        """Plans from a two-query profile written to GIVEN, into a run directory beside it."""
        given.write_text("request,t1_ms,t2_ms\nq1,1.0,0.8\nq2,30.2,25.0\n")
        (out := given.parent / "run").mkdir()
        return self.plan(out, given, plan_bins)

    def test_a_given_profile_is_planned_from_and_not_measured(self):
        with tempfile.TemporaryDirectory() as d:
            given = Path(d) / "profile-lucene.csv"
            (profile, table, cmd), calls = self.plan_given(given)
            self.assertEqual(given.read_text(), profile.read_text())
            self.assertEqual(1, len(calls), "the planner only: no LuceneProfile")
            self.assertEqual(["plan", "fm"], calls[0][1:3])
            # y is the given profile's longest query, rounded up to the table's step.
            self.assertEqual("30.5ms", calls[0][calls[0].index("--max-interval") + 1])
            self.assertNotIn("--bins", calls[0])

    def test_plan_bins_reach_the_planner(self):
        with tempfile.TemporaryDirectory() as d:
            (_, _, cmd), calls = self.plan_given(Path(d) / "profile-lucene.csv", plan_bins=40)
            self.assertEqual("40", calls[0][calls[0].index("--bins") + 1])
            self.assertIn("--bins 40", cmd, "the report's plan command names the bins")

    def test_a_missing_profile_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(SystemExit) as e:
                self.plan(Path(d), Path(d) / "nowhere.csv")
            self.assertIn("--profile-csv", str(e.exception.code))
            self.assertIn("nowhere.csv", str(e.exception.code))


if __name__ == "__main__":
    unittest.main()
