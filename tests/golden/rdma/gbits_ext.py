#!/usr/bin/env python3
"""Rewrites, in place, the bandwidth rows of NAME.txt that perftest 6.29
prints with six decimals: with --report_gbits, a BW average below 0.1 Gb/s
(print_full_bw_report's inc_accuracy, REPORT_FMT_EXT). The figures come from
NAME.json, formatted with Python's %, which formats as C's printf; qbench's
#wrong column follows as in every row. Rows are matched in order."""
import json
import sys

# perftest_parameters.h, REPORT_FMT_EXT.
REPORT_FMT_EXT = " %-7lu    %lu           %-7.6lf            %-7.6lf            %-7.6lf"

name = sys.argv[1]
record = json.load(open(name + ".json"))
lines = open(name + ".txt").read().split("\n")
gbits = lambda bytes_per_s: bytes_per_s * 8 / 1e9
at = 0
for row in record["rows"]:
    while not lines[at].startswith(" %d " % row["bytes"]):
        at += 1
    if row["kind"] == "bw" and record["report_gbits"] and gbits(row["bw_avg_bytes_per_s"]) < 0.1:
        peak = gbits(row["bw_peak_bytes_per_s"] or 0.0)
        text = REPORT_FMT_EXT % (row["bytes"], row["iterations"], peak, gbits(row["bw_avg_bytes_per_s"]), row["msg_rate_mpps"])
        lines[at] = text + "      %d" % row["data"]["wrong_bytes"]
    at += 1
open(name + ".txt", "w").write("\n".join(lines))
