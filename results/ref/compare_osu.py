"""qbench's osu_* tables beside OSU Micro-Benchmarks' own, from the raw
output of results/ref/run-osu-compare.sh: per test, datatype and size the
median over rounds of each tool's figure and their ratio (qbench / OSU;
for latency tests a ratio above 1 is qbench slower, for bandwidth tests
qbench faster), and per test the median ratio over its sizes and the
ratio at its largest size.

    python3 results/ref/compare_osu.py RAW --out compare.json

RAW holds osu-<test>-rN.txt and qbench-<test>-rN.txt, each a run's stdout.
Standard library only. Exit status: 0 written, 2 a test had no rows of
one tool, 3 unreadable input.
"""
import argparse
import json
import os
import re
import statistics
import sys

LATENCY = {"osu_latency", "osu_allreduce"}


def rows(text):
    """{(datatype, size): first figure} of an OSU table."""
    out = {}
    datatype = "MPI_CHAR"
    for line in text.splitlines():
        m = re.match(r"# Datatype: (\S+)\.", line)
        if m:
            datatype = m.group(1)
            continue
        if line.startswith("#") or not line.strip():
            continue
        fields = line.split()
        try:
            out[(datatype, int(fields[0]))] = float(fields[1])
        except (ValueError, IndexError):
            continue
    return out


def read(raw):
    """{(tool, test): [rows of each round]}"""
    runs = {}
    for name in sorted(os.listdir(raw)):
        m = re.match(r"(osu|qbench)-(osu_\w+?)-r(\d+)\.txt$", name)
        if not m:
            continue
        with open(os.path.join(raw, name)) as f:
            runs.setdefault((m.group(1), m.group(2)), []).append(rows(f.read()))
    return runs


def compare(runs):
    tests = sorted({t for (_, t) in runs})
    out = {}
    for test in tests:
        osu, qb = runs.get(("osu", test), []), runs.get(("qbench", test), [])
        keys = sorted(set().union(*osu) & set().union(*qb)) if osu and qb else []
        if not keys:
            out[test] = {"error": "no rows of one tool"}
            continue
        cells = []
        for key in keys:
            o = statistics.median(r[key] for r in osu if key in r)
            q = statistics.median(r[key] for r in qb if key in r)
            cells.append({"datatype": key[0], "size": key[1], "osu": o, "qbench": q,
                          "ratio": q / o if o > 0 else None,
                          "rounds": [len([r for r in osu if key in r]), len([r for r in qb if key in r])]})
        ratios = [c["ratio"] for c in cells if c["ratio"] is not None]
        largest = max(cells, key=lambda c: c["size"])
        out[test] = {
            "figure": "latency (us)" if test in LATENCY else "bandwidth (MB/s)",
            "median_ratio": statistics.median(ratios),
            "largest_size": largest["size"],
            "largest_ratio": largest["ratio"],
            "cells": cells,
        }
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    try:
        runs = read(a.raw)
    except OSError as e:
        print(f"compare_osu: {e}", file=sys.stderr)
        return 3
    result = {"schema": "qbench.ref.osu-compare.v1", "tests": compare(runs)}
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    bad = False
    for test, r in result["tests"].items():
        if "error" in r:
            print(f"{test}: {r['error']}")
            bad = True
        else:
            print(f"{test}: qbench/OSU {r['figure']}: median over sizes {r['median_ratio']:.3f}, "
                  f"at {r['largest_size']} B {r['largest_ratio']:.3f}")
    return 2 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
