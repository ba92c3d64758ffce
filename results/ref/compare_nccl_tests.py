"""qbench's collective runs beside nccl-tests' in one job, from the JSON
files of results/h200/dialects/run-dialects-h200.sh: for every run stem (a mode, a
registration, a collective) and every size and placement, the median over
rounds of each tool's time column (µs), and qbench's ratio and difference
against nccl-tests; per stem and placement, the median ratio over sizes
of 1 MiB and more (where the launch's microseconds no longer dominate) and
the median difference over the smaller sizes, and the median ratio at the
largest size. Cells are told apart by size, type, op and root (a `-d all`
run compares every type).

    python3 results/ref/compare_nccl_tests.py RAW --out compare.json

RAW holds <stem>[-r<N>]-<tool>.json, tool one of nccl (nccl-tests' -J file),
qbench (qbench -J) and any other qbench build named qbench-<label>.
Standard library only. Exit status: 0 written, 3 unreadable input.
"""
import argparse
import json
import os
import re
import statistics
import sys

LARGE = 1 << 20


def times(path):
    """{(size, type, redop, root, placement): µs} of one run's JSON,
    nccl-tests' or qbench's: the time column (cputime under -C)."""
    with open(path) as f:
        d = json.load(f)
    qbench = str(d.get("schema", "")).startswith("qbench.")
    out = {}
    for r in d.get("results", []):
        for placement in ("out_of_place", "in_place"):
            cell = r.get(placement) or {}
            # -C: both tools' cputime where the run reported it.
            t = cell.get("cpu_time_us", cell.get("time_us")) if qbench else cell.get("time", cell.get("cpu_time"))
            if t is not None:
                # nccl-tests writes the root padded ("    -1") and "none"
                # where qbench writes -1 and null.
                redop = r.get("redop") or "none"
                out[(r["size"], str(r.get("type")), redop, int(str(r.get("root", -1)).strip()), placement)] = t
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    runs = {}
    try:
        for name in sorted(os.listdir(a.raw)):
            m = re.match(r"(.+?)(?:-r(\d+))?-(nccl|qbench(?:-[\w.]+)?)\.json$", name)
            if m:
                runs.setdefault(m.group(1), {}).setdefault(m.group(3), []).append(times(os.path.join(a.raw, name)))
    except (OSError, ValueError) as e:
        print(f"compare_nccl_tests: {e}", file=sys.stderr)
        return 3
    result = {"schema": "qbench.ref.nccl-tests-compare.v1", "stems": {}}
    for stem, tools in sorted(runs.items()):
        if "nccl" not in tools:
            continue
        keys = sorted(set().union(*tools["nccl"]), key=str)
        cells = []
        for key in keys:
            ref = [r[key] for r in tools["nccl"] if key in r]
            cell = {
                "size": key[0],
                "type": key[1],
                "redop": key[2],
                "root": key[3],
                "placement": key[4],
                "nccl_tests_us": statistics.median(ref),
                "rounds": len(ref),
            }
            for tool, rs in tools.items():
                if tool == "nccl":
                    continue
                mine = [r[key] for r in rs if key in r]
                if mine:
                    med = statistics.median(mine)
                    cell[f"{tool}_us"] = med
                    cell[f"{tool}_ratio"] = med / cell["nccl_tests_us"] if cell["nccl_tests_us"] > 0 else None
                    cell[f"{tool}_diff_us"] = med - cell["nccl_tests_us"]
            cells.append(cell)
        summary = {}
        for tool in tools:
            if tool == "nccl":
                continue
            for placement in ("out_of_place", "in_place"):
                for label, large in (("large", True), ("small", False)):
                    picked = [c for c in cells if c["placement"] == placement and (c["size"] >= LARGE) == large]
                    rs = [c[f"{tool}_ratio"] for c in picked if c.get(f"{tool}_ratio")]
                    ds = [c[f"{tool}_diff_us"] for c in picked if f"{tool}_diff_us" in c]
                    if rs:
                        summary[f"{tool}_{placement}_{label}_median_ratio"] = statistics.median(rs)
                        summary[f"{tool}_{placement}_{label}_median_diff_us"] = statistics.median(ds)
                top = [c for c in cells if c["placement"] == placement and c["size"] == max(x["size"] for x in cells)]
                rs = [c[f"{tool}_ratio"] for c in top if c.get(f"{tool}_ratio")]
                if rs:
                    summary[f"{tool}_{placement}_largest_median_ratio"] = statistics.median(rs)
        result["stems"][stem] = {"summary": summary, "cells": cells}
        shown = {k: v for k, v in summary.items() if ("larg" in k and "ratio" in k) or ("small" in k and "diff" in k)}
        print(stem, " ".join(f"{k.replace('qbench_', '')}={v:.3f}" for k, v in shown.items()))
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
