"""compare_plan.py pairs a plan's rows with measured circuits and judges each
ratio against its tolerance."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def record(path, **fields):
    with open(path, "w") as f:
        json.dump(fields, f)


class ComparePlan(unittest.TestCase):
    def run_it(self, plan, measured):
        with tempfile.TemporaryDirectory() as d:
            p, m, out = (os.path.join(d, n) for n in ("p.json", "m.json", "out.json"))
            record(p, forecasts=plan)
            record(m, registers=measured)
            r = subprocess.run([sys.executable, os.path.join(HERE, "compare_plan.py"), "--plan", p,
                                "--measured", m, "--json", out], capture_output=True, text=True)
            rows = json.load(open(out)) if os.path.exists(out) else []
            return r.returncode, rows

    def test_cells_pair_by_circuit_size_ranks_schedule_and_wire(self):
        plan = [dict(circuit="qft", qubits=20, gpus=1, schedule=None, transport=None, projected_s=0.110, source="s"),
                dict(circuit="qft", qubits=20, gpus=2, schedule="quest", transport="cpu", projected_s=0.050,
                     source="s"),
                dict(circuit="qft", qubits=20, gpus=2, schedule="swap", transport="cpu", projected_s=None,
                     source="s")]
        measured = [dict(qubits=20, ranks=1, circuits=[dict(circuit="qft", schedule="quest", transport=None,
                                                            time=dict(median=0.100))]),
                    dict(qubits=20, ranks=2, circuits=[dict(circuit="qft", schedule="quest", transport="cpu",
                                                            time=dict(median=0.080))])]
        code, rows = self.run_it(plan, measured)
        self.assertEqual(len(rows), 2)
        self.assertTrue(rows[0]["within"])
        self.assertAlmostEqual(rows[1]["ratio"], 0.625)
        self.assertFalse(rows[1]["within"])
        self.assertEqual(code, 1)

    def test_a_circuit_under_10_ms_has_25_percent(self):
        plan = [dict(circuit="qft", qubits=12, gpus=1, schedule=None, transport=None, projected_s=0.0012, source="s")]
        measured = [dict(qubits=12, ranks=1, circuits=[dict(circuit="qft", schedule=None, transport=None,
                                                            time=dict(median=0.0010))])]
        code, rows = self.run_it(plan, measured)
        self.assertEqual((code, rows[0]["tolerance"], rows[0]["within"]), (0, 0.25, True))

    def test_repetitions_pair_within_each_and_judge_the_median_ratio(self):
        cell = dict(circuit="qft", qubits=20, gpus=2, schedule="quest", transport="cpu", source="s")
        with tempfile.TemporaryDirectory() as d:
            dirs = []
            # The machine drifts: each repetition's plan follows its own run
            # but for one outlier; the median ratio stands.
            for i, (p, m) in enumerate([(0.10, 0.10), (0.20, 0.21), (0.05, 0.11), (0.15, 0.16), (0.12, 0.11)]):
                rep = os.path.join(d, f"rep{i}")
                os.mkdir(rep)
                record(os.path.join(rep, "plan-x.json"), forecasts=[dict(cell, projected_s=p)])
                record(os.path.join(rep, "x.json"), registers=[dict(
                    qubits=20, ranks=2, circuits=[dict(circuit="qft", schedule="quest", transport="cpu",
                                                       time=dict(median=m))])])
                dirs.append(rep)
            out = os.path.join(d, "out.json")
            r = subprocess.run([sys.executable, os.path.join(HERE, "compare_plan.py"), "--repeated", *dirs,
                                "--json", out], capture_output=True, text=True)
            rows = json.load(open(out))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(len(rows), 1)
        self.assertEqual(len(rows[0]["ratios"]), 5)
        self.assertAlmostEqual(rows[0]["ratio"], 0.20 / 0.21)
        self.assertIn("0.45 to 1.09 (5) | ×2.10", r.stdout)


if __name__ == "__main__":
    unittest.main()
