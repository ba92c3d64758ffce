"""Tests of quest_compare.py on quest_time lines and qbench records laid out
as the two tools write them.

    python3 -m unittest discover -s results/ref -p 'test_*.py'
"""
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import quest_compare as qc  # noqa: E402


def quest_line(ranks, op, t):
    return json.dumps({"tool": "quest", "qubits": 30, "ranks": ranks, "gpu": True, "op": op,
                       "times_s": [t, t, t], "median_s": t})


def summary(t):
    return {"samples": 3, "min": t, "median": t, "mean": t, "p99": t, "p999": t, "max": t}


def cls(kind, qubits, t, transport=None):
    c = {"class": kind, "qubits": qubits, "time_s": t, "wrong": 0}
    if transport:
        c["transport"] = transport
    return c


def register(ranks, classes, circuits):
    return {"ranks": ranks, "qubits": 30, "local_qubits": 30 - (ranks.bit_length() - 1),
            "classes": classes, "circuits": circuits}


def qft(t, projected, schedule="quest", transport=None, wrong=0):
    return {"circuit": "qft", "schedule": schedule, "transport": transport, "time": summary(t),
            "projected_s": projected, "wrong": wrong}


class Compare(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def write(self, name, text):
        p = os.path.join(self.dir, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def run_compare(self, one_qft=2.4, projected=2.5, spread_qft=10.0, global_h=5.2, priced=None):
        quest = self.write("q.jsonl", "\n".join([
            "not json: a warning QuEST printed",
            quest_line(1, "h:0", 0.0085), quest_line(1, "cphase:1,0", 0.0085), quest_line(1, "qft", 2.49),
            quest_line(2, "h:29", 5.08), quest_line(2, "swap:0,29", 2.39), quest_line(2, "qft", 9.95)]) + "\n")
        one = {"registers": [register(1, [cls("h", [0], 0.0081), cls("phase", [1, 0], 0.0040)],
                                      [qft(one_qft, projected), qft(2.6, 2.6, "swap")])]}
        two = {"registers": [register(2, [cls("h", [0], 0.004), cls("global_gate", [29], global_h, "quest"),
                                          cls("global_swap", [29, 0], 2.40, "quest"),
                                          cls("global_gate", [29], 3.0, "nccl")],
                                      [qft(spread_qft, 10.1, "quest", "quest"), qft(6.0, 6.0, "quest", "nccl")])]}
        if priced:
            given, spread = priced
            two["decisions"] = [{"circuit": "qft", "qubits": 30, "gpus": 2, "one_gpu_s": one_qft, "spread_s": 6.0,
                                 "one_gpu_from": "measured in one.json", "verdict": "…",
                                 "simulator": {"one_gpu_s": given, "spread_s": spread, "speedup": given / spread}}]
        files = [self.write("one.json", json.dumps(one)), self.write("two.json", json.dumps(two))]
        out = os.path.join(self.dir, "out.json")
        rc = qc.main(["--quest", quest, "--qbench", *files, "--out", out])
        with open(out) as f:
            return rc, json.load(f)

    def test_the_goals_hold_when_the_figures_do(self):
        rc, r = self.run_compare()
        self.assertEqual(rc, 0, r["goals"])
        ops = {(x["ranks"], x["op"]): x for x in r["rows"]}
        self.assertAlmostEqual(ops[(1, "qft")]["ratio"], 2.4 / 2.49)
        # The wire held against QuEST is the quest wire, not nccl.
        self.assertAlmostEqual(ops[(2, "h:29")]["qbench_s"], 5.2)
        self.assertAlmostEqual(ops[(2, "qft")]["qbench_s"], 10.0)
        self.assertEqual(len(r["goals"]), 5)
        s = r["spreading"][0]
        self.assertAlmostEqual(s["quest_factor"], 9.95 / 2.49)
        self.assertAlmostEqual(s["qbench_factor"], 10.0 / 2.4)
        self.assertAlmostEqual(s["added_ratio"], (10.0 - 2.4) / (9.95 - 2.49))

    def test_each_goal_can_fail(self):
        for kwargs, missed in [({"one_qft": 2.8, "projected": 2.8}, "QFT(30) on one GPU: qbench / QuEST"),
                               ({"projected": 3.0}, "projection"),
                               ({"global_h": 6.0}, "global H"),
                               ({"spread_qft": 12.0}, "over 2 processes, QuEST's wire")]:
            rc, r = self.run_compare(**kwargs)
            self.assertEqual(rc, 1, kwargs)
            bad = [g["goal"] for g in r["goals"] if not g["held"]]
            self.assertEqual(len(bad), 1, (kwargs, bad))
            self.assertIn(missed, bad[0])

    def test_the_verdict_priced_at_quests_one_gpu_time_is_held_against_quest_spread(self):
        rc, r = self.run_compare(priced=(2.49, 10.5))
        self.assertEqual(rc, 0, r["goals"])
        s = r["spreading"][0]
        self.assertAlmostEqual(s["simulator_ratio"], 10.5 / 9.95)
        self.assertAlmostEqual(s["simulator_factor"], 10.5 / 2.49)
        self.assertEqual(len(r["goals"]), 6)
        for priced, why in [((2.49, 12.0), "too far from QuEST"), ((2.0, 9.95), "not QuEST's time given")]:
            rc, r = self.run_compare(priced=priced)
            self.assertEqual(rc, 1, why)
            bad = [g["goal"] for g in r["goals"] if not g["held"]]
            self.assertEqual(len(bad), 1, (why, bad))
            self.assertIn("priced from QuEST's one-GPU time", bad[0])

    def test_runs_of_a_tool_give_the_median_of_their_medians(self):
        quest = self.write("q.jsonl", "\n".join([quest_line(2, "h:29", 5.0), quest_line(2, "h:29", 5.7),
                                                 quest_line(2, "h:29", 5.6)]) + "\n")
        runs = [self.write(f"r{i}.json", json.dumps({"registers": [register(2, [cls("global_gate", [29], t, "quest")], [])]}))
                for i, t in enumerate([5.2, 5.4])]
        out = os.path.join(self.dir, "out.json")
        rc = qc.main(["--quest", quest, "--qbench", *runs, "--out", out])
        with open(out) as f:
            r = json.load(f)
        self.assertEqual(rc, 0, r["goals"])
        row = r["rows"][0]
        self.assertEqual(row["quest_runs_s"], [5.0, 5.7, 5.6])
        self.assertAlmostEqual(row["quest_s"], 5.6)
        self.assertEqual(row["qbench_runs_s"], [5.2, 5.4])
        self.assertAlmostEqual(row["qbench_s"], 5.3)
        self.assertAlmostEqual(row["ratio"], 5.3 / 5.6)

    def test_nothing_to_compare_is_an_error(self):
        quest = self.write("q.jsonl", quest_line(1, "qft", 2.49) + "\n")
        empty = self.write("e.json", json.dumps({"registers": []}))
        self.assertEqual(qc.main(["--quest", quest, "--qbench", empty]), 2)
        self.assertEqual(qc.main(["--quest", os.path.join(self.dir, "missing"), "--qbench", empty]), 2)


if __name__ == "__main__":
    unittest.main()
