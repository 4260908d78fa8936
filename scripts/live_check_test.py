"""Tests of scripts/live-check.py's pure parts (standard library only).

    python3 -m unittest scripts/live_check_test.py
    python3 scripts/live_check_test.py
"""

import importlib.util
import json
import os
import tempfile
import unittest
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "live_check", Path(__file__).resolve().parent / "live-check.py")
lc = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(lc)


def write(text, suffix=".csv"):
    fd, path = tempfile.mkstemp(suffix=suffix)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


class ShuffleTest(unittest.TestCase):
    CELLS = [(p, l) for p in ["SEQ", "FIX-2", "FIX-4", "executor", "Adaptive", "FM"]
             for l in [0.3, 0.45, 0.6, 0.75, 0.9]]

    def test_same_seed_and_round_same_order(self):
        self.assertEqual(lc.seeded_order(self.CELLS, 1, 0), lc.seeded_order(self.CELLS, 1, 0))

    def test_is_a_permutation_and_leaves_input_alone(self):
        cells = list(self.CELLS)
        order = lc.seeded_order(cells, 7, 2)
        self.assertEqual(sorted(order), sorted(self.CELLS))
        self.assertEqual(cells, self.CELLS)

    def test_rounds_and_seeds_differ(self):
        self.assertNotEqual(lc.seeded_order(self.CELLS, 1, 0), lc.seeded_order(self.CELLS, 1, 1))
        self.assertNotEqual(lc.seeded_order(self.CELLS, 1, 0), lc.seeded_order(self.CELLS, 2, 0))

    def test_shuffles(self):
        self.assertNotEqual(lc.seeded_order(self.CELLS, 1, 0), self.CELLS)


class MedianTest(unittest.TestCase):
    def test_odd_even(self):
        self.assertEqual(lc.median([3, 1, 2]), 2)
        self.assertEqual(lc.median([4, 1, 3, 2]), 2.5)

    def test_skips_missing(self):
        self.assertEqual(lc.median([None, 5.0, None]), 5.0)
        self.assertIsNone(lc.median([]))
        self.assertIsNone(lc.median([None]))
        self.assertEqual(lc.median(x for x in [1.0, float("nan"), 3.0]), 2.0)


class RecordsTest(unittest.TestCase):
    CSV = ("request,arrival_ms,start_ms,finish_ms,work_ms,max_degree,latency_ms,mean_degree,boosted\n"
           "1,10.0,10.1,12.0,1.9,1,2.0,1.0,false\n"
           "2,11.0,12.0,30.0,5.0,1,19.0,1.0,false\n"
           "3,12.0,30.0,110.0,3.0,1,98.0,1.0,false\n"
           "4,13.0,110.0,1010.0,3.0,1,997.0,1.0,false\n")

    def test_throughput(self):
        path = write(self.CSV)
        try:
            done, span, qps = lc.throughput_from_records(path)
        finally:
            os.unlink(path)
        self.assertEqual(done, 4)
        self.assertAlmostEqual(span, 1000.0)  # 1010 - 10
        self.assertAlmostEqual(qps, 4.0)

    def test_throughput_empty(self):
        path = write("request,arrival_ms,start_ms,finish_ms\n")
        try:
            self.assertEqual(lc.throughput_from_records(path), (0, 0.0, 0.0))
        finally:
            os.unlink(path)

    def test_miss_ratio_skips_warmup(self):
        path = write(self.CSV)
        try:
            # latencies 2, 19, 98, 997 ms
            self.assertAlmostEqual(lc.miss_ratio_from_records(path, 50.0), 0.5)
            self.assertAlmostEqual(lc.miss_ratio_from_records(path, 50.0, warmup=2), 1.0)
            self.assertAlmostEqual(lc.miss_ratio_from_records(path, 10.0, warmup=1), 1.0)
        finally:
            os.unlink(path)


class VerdictTest(unittest.TestCase):
    def test_collapse_flag(self):
        self.assertTrue(lc.fm_collapses(12.1, 10.0, 0.75))
        self.assertTrue(lc.fm_collapses(30.0, 10.0, 0.3))
        self.assertFalse(lc.fm_collapses(12.0, 10.0, 0.6))   # exactly 1.2x is not above
        self.assertFalse(lc.fm_collapses(50.0, 10.0, 0.9))   # above 75%: not judged
        self.assertFalse(lc.fm_collapses(None, 10.0, 0.3))
        self.assertFalse(lc.fm_collapses(10.0, None, 0.3))

    def test_sim_off(self):
        self.assertTrue(lc.sim_is_off(13.0, 10.0))
        self.assertTrue(lc.sim_is_off(7.0, 10.0))
        self.assertFalse(lc.sim_is_off(12.4, 10.0))
        self.assertFalse(lc.sim_is_off(None, 10.0))
        self.assertFalse(lc.sim_is_off(10.0, None))

    def test_degree_ladder(self):
        self.assertEqual(lc.degree_ladder(1), [1])
        self.assertEqual(lc.degree_ladder(2), [1, 2])
        self.assertEqual(lc.degree_ladder(6), [1, 2, 4, 6])
        self.assertEqual(lc.degree_ladder(8), [1, 2, 4, 8])

    def test_repair_calibration(self):
        cal = {"cores": 2, "dispatch_ms": {"points": [[0.0, 2.1], [1.0, -2.6]], "floor": 0.0},
               "slowdown": {"points": [[0.0, 1.0], [1.0, 1.9]], "floor": 0.5},
               "source": {"runs": [{"dispatch_ms": -1.0}]}}
        fixed, changes = lc.repair_calibration(cal)
        self.assertEqual(fixed["dispatch_ms"]["points"], [[0.0, 2.1], [1.0, 0.0]])
        self.assertEqual(fixed["slowdown"], cal["slowdown"])
        self.assertEqual(cal["dispatch_ms"]["points"][1][1], -2.6)  # the input is left alone
        self.assertEqual(len(changes), 1)
        self.assertEqual(lc.repair_calibration(fixed)[1], [])

    def test_dictd_number(self):
        self.assertEqual(lc.dictd_number("A"), 0)
        self.assertEqual(lc.dictd_number("b"), 27)
        self.assertEqual(lc.dictd_number("BA"), 64)


def cell(label, load, rnd, p99, sim=None):
    return {"label": label, "load": load, "round": rnd, "rps": 100.0 * load,
            "latency_ms": {"p99": p99}, "sim": {"latency_ms": {"p99": sim}} if sim else None}


class ReportTest(unittest.TestCase):
    def data(self, cells, ws=()):
        return {"mode": "quick", "cores": 2, "loads": [0.3, 0.75, 0.9], "cells": cells,
                "ws_cells": list(ws), "capacity": {"capacity_qps": 1000.0, "offered_rps": 1500.0,
                                                   "profile_capacity_qps": 1200.0}}

    def test_collapse_reported(self):
        cells = [cell("SEQ", 0.3, 0, 10.0, 10.0), cell("SEQ", 0.3, 1, 12.0, 10.0),
                 cell("FM", 0.3, 0, 20.0, 10.5), cell("FM", 0.3, 1, 30.0, 10.5),
                 cell("SEQ", 0.75, 0, 10.0), cell("FM", 0.75, 0, 11.0),
                 cell("SEQ", 0.9, 0, 10.0), cell("FM", 0.9, 0, 99.0)]
        text = lc.build_report(self.data(cells))
        self.assertIn("**FM collapses**", text)
        self.assertIn("30% (FM 25.0 ms = 2.27x SEQ's 11.0 ms)", text)
        self.assertNotIn("75% (FM", text)
        self.assertNotIn("90% (FM", text)       # above 75% is not judged
        self.assertIn("r0: 20.0, r1: 30.0", text)  # each round's value
        self.assertIn("The simulator is more than 25% off", text)
        self.assertIn("FM at 30%", text)

    def test_no_collapse(self):
        cells = [cell("SEQ", 0.3, 0, 10.0, 9.0), cell("FM", 0.3, 0, 11.0, 10.0)]
        text = lc.build_report(self.data(cells))
        self.assertIn("FM does not collapse", text)
        self.assertIn("within 25% of every live p99", text)

    def test_empty_and_failed_cells(self):
        text = lc.build_report({})
        self.assertIn("No search cells", text)
        failed = {"label": "FM", "load": 0.3, "round": 0, "rps": 30.0, "error": "exit 1: boom", "sim": None}
        text = lc.build_report(self.data([cell("SEQ", 0.3, 0, 10.0), failed]))
        self.assertIn("r0: failed", text)

    def test_work_stealing_ratio(self):
        ws = [{"label": "steal-first", "workload": "lognormal", "round": 0, "target_ms": 30.0,
               "miss_ratio": 0.010, "latency_ms": {"p99": 30.0},
               "sim": {"miss_ratio": 0.012, "latency_ms": {"p99": 31.0}}},
              {"label": "admit-first", "workload": "lognormal", "round": 0, "target_ms": 30.0,
               "miss_ratio": 0.008, "latency_ms": {"p99": 29.0},
               "sim": {"miss_ratio": 0.0, "latency_ms": {"p99": 28.0}}},
              {"label": "tail-control", "workload": "lognormal", "round": 0, "target_ms": 30.0,
               "miss_ratio": 0.004, "latency_ms": {"p99": 27.0},
               "sim": {"miss_ratio": 0.003, "latency_ms": {"p99": 27.0}}}]
        ratios = lc.ws_tc_ratios(ws)
        self.assertAlmostEqual(ratios[("lognormal", 0)]["live"], 0.5)
        self.assertIsNone(ratios[("lognormal", 0)]["sim"])  # the better baseline missed none
        text = lc.build_report(self.data([], ws))
        self.assertIn("live 0.50x", text)
        self.assertIn("the better baseline missed none", text)


class CorpusTest(unittest.TestCase):
    def test_generated_corpus_is_seeded(self):
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a.jsonl"), os.path.join(d, "b.jsonl")
            lc.generate_corpus(a, 50, seed=3)
            lc.generate_corpus(b, 50, seed=3)
            self.assertEqual(Path(a).read_text(), Path(b).read_text())
            docs = [json.loads(l) for l in Path(a).read_text().splitlines()]
            self.assertEqual(len(docs), 50)
            self.assertTrue(all(d["title"] and d["body"] for d in docs))


if __name__ == "__main__":
    unittest.main()
