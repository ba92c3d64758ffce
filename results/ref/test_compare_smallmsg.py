"""Tests of compare_smallmsg.py on nccl-tests tables laid out as nccl-tests
2.19.6 prints them (util.cu's formats) and on qbench's committed JSON.

    python3 -m unittest discover -s results/ref -p 'test_*.py'
"""
import copy
import json
import os
import sys
import tarfile
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import compare_smallmsg as cs  # noqa: E402

# all_reduce_perf -b 8 -e 1G -f 2 -g 1 on one GPU, rows cut; the row layout
# is "%12li  %12li  %8s  %6s  %6s" then "  %7s  %6s  %6s  %6g" per placement.
TABLE = """\
# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 20 iters: 200 agg iters: 1 validation: 1 graph: 0 unalign: 0
#
# Using devices
#  Rank  0 Group  0 Pid   4242 on         vm device  0 [0000:00:06] NVIDIA H200
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong 
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         
           8             2     float     sum      -1     6.52    0.00    0.00       0     0.33    0.02    0.00       0
          16             4     float     sum      -1     6.61    0.00    0.00       0     0.34    0.05    0.00       0
    16777216       4194304     float     sum      -1    10.95  1532.1    0.00       0     0.35   47934    0.00       0
  1073741824     268435456     float     sum      -1   512.31  2095.9    0.00       0     0.36   3e+06    0.00       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0 
#
# Collective test concluded: all_reduce_perf
"""

# sendrecv_perf -c 0 (no check: #wrong is N/A), with an NCCL warning between rows.
TABLE_NOCHECK = """\
# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803
# Collective test starting: sendrecv_perf
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong 
           8             2     float     sum      -1    10.21    0.00    0.00     N/A     2.41    0.00    0.00     N/A
vm:4242:4242 [0] NCCL INFO 8 coll channels, 8 collnet channels
        1024           256     float     sum      -1    10.30    0.10    0.10     N/A     2.45    0.42    0.42     N/A
# Out of bounds values : 0 OK
"""

# -I 1: four per-iteration columns after each placement.
TABLE_PER_ITER = """\
# Collective test starting: alltoall_perf
#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv% 
           8             2     float    none      -1     7.01    0.00    0.00       0     5.12    20.31     9.87    12.50     7.11    0.00    0.00     N/A     5.20    19.11     9.01    11.00
"""


class TableTest(unittest.TestCase):
    def test_standard_table(self):
        t = cs.parse_nccl_table(TABLE)
        self.assertEqual(t["program"], "all_reduce_perf")
        self.assertEqual((t["version"], t["nccl_headers"], t["nccl_library"]), ("2.19.6", 22803, 22803))
        self.assertEqual(t["out_of_bounds"], 0)
        self.assertEqual([r["size"] for r in t["rows"]], [8, 16, 16777216, 1073741824])
        r = t["rows"][0]
        self.assertEqual((r["count"], r["type"], r["redop"], r["root"]), (2, "float", "sum", -1))
        self.assertEqual(r["out_of_place"]["time_us"], 6.52)
        self.assertEqual(r["in_place"]["time_us"], 0.33)
        self.assertEqual(r["out_of_place"]["wrong"], 0)
        self.assertEqual(t["rows"][3]["in_place"]["algbw_gbps"], 3e6)
        self.assertEqual(t["rows"][2]["out_of_place"]["algbw_gbps"], 1532.1)

    def test_unchecked_and_noise(self):
        t = cs.parse_nccl_table(TABLE_NOCHECK)
        self.assertEqual([r["size"] for r in t["rows"]], [8, 1024])
        self.assertIsNone(t["rows"][0]["out_of_place"]["wrong"])
        self.assertEqual(t["rows"][1]["in_place"]["time_us"], 2.45)

    def test_per_iteration_columns(self):
        t = cs.parse_nccl_table(TABLE_PER_ITER)
        self.assertTrue(t["per_iter"])
        r = t["rows"][0]
        self.assertEqual(r["redop"], "none")
        self.assertEqual(r["out_of_place"]["time_us"], 7.01)
        self.assertEqual(r["out_of_place"]["i_p99_us"], 9.87)
        self.assertEqual(r["in_place"]["time_us"], 7.11)
        self.assertIsNone(r["in_place"]["wrong"])

    def test_bare_inf_in_json(self):
        d = cs._loads('{"results": [{"size": 8, "out_of_place": {"time": 0.000000, "alg_bw": inf}, "in_place": {"time": 0.5}}]}')
        self.assertIsNone(d["results"][0]["out_of_place"]["alg_bw"])
        self.assertEqual(cs.nccl_json_times(d), {8: {"out_of_place": 0.0, "in_place": 0.5}})


class QbenchJsonTest(unittest.TestCase):
    def test_collective(self):
        with open(os.path.join(RESULTS, "h200x2", "h200x2-allreduce-16M-1G.json")) as f:
            q = cs.qbench_collective(json.load(f))
        self.assertEqual(sorted(q)[0], 16 << 20)
        self.assertEqual(sorted(q)[-1], 1 << 30)
        self.assertAlmostEqual(q[16 << 20]["out_of_place"]["time_us"], 80.6927997618914)
        self.assertAlmostEqual(q[16 << 20]["in_place"]["time_us"], 77.48800069093704)

    def test_copy_latency(self):
        with open(os.path.join(RESULTS, "h200x2", "h200x2-copy-latency.json")) as f:
            q = cs.qbench_copy_latency(json.load(f))
        self.assertEqual(sorted(q), sorted(cs.COPY_TESTS.values()))
        self.assertEqual(len(q["latency_h2d"]), 25)
        self.assertEqual(q["latency_h2d"][1]["host_p50_us"], 11.303)
        self.assertEqual(q["latency_h2d"][1]["device_p50_us"], 5.507)


def nccl_table(program, rows):
    """A table in nccl-tests' layout; rows: (size, oop_us, ip_us)."""
    out = [
        "# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803",
        f"# Collective test starting: {program}_perf",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ",
    ]
    for size, oop, ip in rows:
        line = "%12li  %12li  %8s  %6s  %6s" % (size, size // 4, "float", "sum", "%6i" % -1)
        for t in (oop, ip):
            line += "  %7s  %6s  %6s  %6g" % ("%7.2f" % t, "%6.2f" % 0, "%6.2f" % 0, 0)
        out.append(line)
    out.append("# Out of bounds values : 0 OK")
    return "\n".join(out) + "\n"


def qbench_doc(program, rows):
    """A `qbench <collective> -J` document; rows: (size, oop_us, ip_us)."""
    res = []
    for size, oop, ip in rows:
        res.append(
            {
                "cycle": 0,
                "size": size,
                "out_of_place": {"time_us": oop, "busbw_gbps": 0.0, "wrong": 0},
                "in_place": {"time_us": ip, "busbw_gbps": 0.0, "wrong": 0},
            }
        )
    return {"schema": "qbench.collective.v1", "qbench_version": "0.1.0", "collective": program, "library": {"version": "2.28.3"}, "results": res}


class EndToEndTest(unittest.TestCase):
    """Three rounds of made-up figures, laid out as the run script leaves them."""

    def make(self, folder, small_q=(6.6, 0.5), large_ratio=1.01, copy_ratio=1.05, drop=(), control=None):
        with open(os.path.join(RESULTS, "h200x2", "h200x2-copy-latency.json")) as f:
            qcopy_template = json.load(f)
        for r in (1, 2, 3):
            jitter = 0.01 * r
            for prog, sub in cs.COLLECTIVES.items():
                ref = [(8, 6.5 + jitter, 0.33), (1 << 20, 20.0, 1.0), (16 << 20, 11.0, 0.35), (256 << 20, 120.0, 0.4)]
                q = [(8, small_q[0] + jitter, small_q[1]), (1 << 20, 25.0, 2.0)]
                q += [(s, o * large_ratio, i * large_ratio) for s, o, i in ref[2:]]
                if (prog, r) not in drop:
                    with open(os.path.join(folder, f"nccl-{prog}-r{r}.txt"), "w") as f:
                        f.write(nccl_table(prog, ref))
                with open(os.path.join(folder, f"qbench-{sub}-r{r}.json"), "w") as f:
                    json.dump(qbench_doc(prog, q), f)
            results = []
            for d in ("h2d", "d2h", "mapped_read", "mapped_write"):
                for size in (1, 2):
                    results.append(
                        {"direction": d, "size": size, "host": {"p50_us": 5.9 + jitter}, "device": {"p50_us": 4.9}, "wrong_bytes": 0}
                    )
            with open(os.path.join(folder, f"copyref-r{r}.json"), "w") as f:
                json.dump({"skipped": [{"direction": "peer", "reason": "needs two GPUs, 1 visible"}], "results": results}, f)
            if control and r in control["rounds"]:
                # The references again, `shift` µs (collectives) or `scale` x (copies) off their first run.
                for prog in ("all_reduce", "sendrecv"):
                    again = [(8, 6.5 + jitter + control["shift"], 0.33 + control["shift"]), (1 << 20, 20.0, 1.0)]
                    with open(os.path.join(folder, f"control-{prog}-r{r}.txt"), "w") as f:
                        f.write(nccl_table(prog, again))
                again = [dict(x, host={"p50_us": x["host"]["p50_us"] * control["scale"]}) for x in results]
                with open(os.path.join(folder, f"control-copy-r{r}.json"), "w") as f:
                    json.dump({"results": again}, f)
            qc = copy.deepcopy(qcopy_template)
            for t in qc["tests"]:
                for series in t["latency"]:
                    for row in series["rows"]:
                        row["host"]["p50_us"] = (5.9 + jitter) * copy_ratio
            qc["tests"] = [t for t in qc["tests"] if t["name"] != "latency_peer"]
            with open(os.path.join(folder, f"qbench-copy-r{r}.json"), "w") as f:
                json.dump(qc, f)
        with open(os.path.join(folder, "steps.tsv"), "w") as f:
            f.write("round\ttool\tname\trc\tseconds\n1\tnccl\tall_reduce\t0\t3\n")

    def run_compare(self, **kw):
        with tempfile.TemporaryDirectory() as d:
            raw = os.path.join(d, "smallmsg-raw")
            os.mkdir(raw)
            self.make(raw, **kw)
            out = os.path.join(d, "c.json")
            with open(os.devnull, "w") as null:
                saved, sys.stdout = sys.stdout, null
                try:
                    rc = cs.main([raw, "--out", out])
                finally:
                    sys.stdout = saved
            with open(out) as f:
                doc = json.load(f)
            # The packed form reads the same.
            tgz = os.path.join(d, "smallmsg-raw.tgz")
            with tarfile.open(tgz, "w:gz") as tar:
                tar.add(raw, arcname="smallmsg-raw")
            again = cs.compare(cs.Raw(tgz))
            self.assertEqual(again["goals"], doc["goals"])
            return rc, doc

    def test_all_goals_met(self):
        rc, doc = self.run_compare()
        self.assertEqual(doc["rounds"], [1, 2, 3])
        self.assertEqual(doc["versions"]["nccl_tests"], "2.19.6")
        self.assertEqual([g["verdict"] for g in doc["goals"]], ["pass"] * 4)
        self.assertEqual(doc["verdict"], "pass")
        self.assertEqual(rc, 0)
        r = cs._find(doc["collectives"]["all_reduce"]["rows"], 8, "out_of_place")
        self.assertAlmostEqual(r["reference_median_us"], 6.52)
        self.assertAlmostEqual(r["qbench_median_us"], 6.62)
        self.assertAlmostEqual(r["diff_us"], 0.1)
        self.assertEqual(r["reference_us"], [6.51, 6.52, 6.53])
        peer = [c for c in doc["goals"][2]["checks"] if c["direction"] == "peer"]
        self.assertEqual(peer[0]["pass"], "n/a")
        h2d = cs._find(doc["copy_latency"]["h2d"]["rows"], 1)["host"]
        self.assertAlmostEqual(h2d["ratio"], 1.05)

    def test_misses_are_named(self):
        rc, doc = self.run_compare(small_q=(6.6, 2.0), large_ratio=1.05, copy_ratio=1.7)
        self.assertEqual([g["verdict"] for g in doc["goals"]], ["fail"] * 4)
        self.assertEqual(rc, 1)
        self.assertEqual([c["placement"] for c in doc["goals"][0]["failed"]], ["in_place"])
        # 7 collectives x 2 sizes off by 5% out of place; the in-place cells
        # of the sample are faster than any copy (nothing moved), so 5% of
        # them is within the absolute tolerance.
        self.assertEqual(len(doc["goals"][3]["failed"]), 14)
        self.assertTrue(all(c["placement"] == "out_of_place" for c in doc["goals"][3]["failed"]))
        judged = [c for c in doc["goals"][3]["checks"] if "judged_by" in c]
        self.assertEqual(len(judged), 14)
        self.assertEqual(sorted(c["direction"] for c in doc["goals"][2]["failed"]), ["d2h", "h2d", "mapped_read", "mapped_write"])

    def test_control_judges_the_reference_against_itself(self):
        # The second runs, in rounds 2 and 3 only, sit 0.4 µs and 15% off the
        # first: the control misses, qbench's verdicts do not change.
        rc, doc = self.run_compare(control={"rounds": (2, 3), "shift": 0.4, "scale": 1.15})
        self.assertEqual([g["verdict"] for g in doc["goals"]], ["pass"] * 4)
        self.assertEqual(rc, 0)
        small = doc["goals"][0]["control"]
        self.assertEqual([c["placement"] for c in small["checks"]], ["out_of_place", "in_place"])
        self.assertEqual(small["misses"], 2)
        c = small["checks"][0]
        self.assertEqual(c["rounds"], 2)
        self.assertAlmostEqual(c["reference_us"], 6.525)
        self.assertAlmostEqual(c["control_us"], 6.925)
        copyc = doc["goals"][2]["control"]
        self.assertEqual(sorted(c["direction"] for c in copyc["checks"]), ["d2h", "h2d", "mapped_read", "mapped_write"])
        self.assertTrue(all(abs(c["ratio"] - 1.15) < 1e-9 for c in copyc["checks"]))
        self.assertEqual(copyc["misses"], 4)
        self.assertNotIn("control", doc["goals"][3])
        row = cs._find(doc["collectives"]["all_reduce"]["rows"], 8, "out_of_place")
        self.assertEqual(row["control_us"][0], None)
        # Within the rules, the control passes.
        rc, doc = self.run_compare(control={"rounds": (1, 2, 3), "shift": 0.1, "scale": 1.05})
        self.assertEqual(doc["goals"][0]["control"]["misses"], 0)
        self.assertEqual(doc["goals"][2]["control"]["misses"], 0)

    def test_no_control_no_control_block(self):
        rc, doc = self.run_compare()
        self.assertTrue(all("control" not in g for g in doc["goals"]))

    def test_no_data_is_what_no_copy_could_do(self):
        # 128 MiB in 2.5 us is 54 TB/s: nothing moved. 16 MiB in 11 us, 1.5 TB/s: a copy.
        self.assertTrue(cs.moved_nothing(128 << 20, 2.5))
        self.assertTrue(cs.moved_nothing(16 << 20, 2.6))
        self.assertFalse(cs.moved_nothing(16 << 20, 11.0))
        self.assertFalse(cs.moved_nothing(8, 0.3))

    def test_missing_reference_is_incomplete(self):
        rc, doc = self.run_compare(drop=[("sendrecv", 1), ("sendrecv", 2), ("sendrecv", 3)])
        self.assertEqual(doc["goals"][1]["verdict"], "incomplete")
        self.assertEqual(doc["verdict"], "incomplete")
        self.assertEqual(rc, 2)

    def test_median_of_rounds_that_ran(self):
        # all_reduce's table missing in round 2: the median of rounds 1 and 3.
        rc, doc = self.run_compare(drop=[("all_reduce", 2)])
        r = cs._find(doc["collectives"]["all_reduce"]["rows"], 8, "out_of_place")
        self.assertEqual(r["reference_us"], [6.51, None, 6.53])
        self.assertAlmostEqual(r["reference_median_us"], 6.52)


if __name__ == "__main__":
    unittest.main()
