#!/usr/bin/env python3
"""A plan held against measured runs: every (circuit, qubits, ranks, schedule,
wire) a plan priced and a record measured, with the ratio projected/measured
and whether it is within the tolerance (15%, or 25% where the measured circuit
takes under 10 ms). Usage: compare_plan.py --plan P.json [...] --measured M.json [...]
[--json OUT.json]; exit 1 when a cell misses its tolerance.

--repeated DIR [DIR ...] instead: each DIR one repetition of a whole
experiment (its plan-*.json made from its own source, its other *.json
measured beside), a cell's ratio taken within each DIR and judged on the
median of the repetitions' ratios; the range of them is shown beside, so
that a machine whose speed drifts between a source and a run is seen."""
import argparse
import glob
import json
import os
import statistics
import sys


def key_of(circuit, qubits, ranks, schedule, wire):
    """One rank has no schedule or wire to tell apart."""
    return (circuit, qubits, ranks) + ((None, None) if ranks == 1 else (schedule, wire))


def measured_circuits(paths):
    out = {}
    for p in paths:
        r = json.load(open(p))
        for g in r.get("registers", []):
            for c in g.get("circuits", []):
                key = key_of(c["circuit"], g["qubits"], g["ranks"], c.get("schedule"), c.get("transport"))
                out[key] = (c["time"]["median"], p)
    return out


def planned(paths):
    out = {}
    for p in paths:
        r = json.load(open(p))
        for f in r.get("forecasts", []):
            if f.get("projected_s") is None:
                continue
            key = key_of(f["circuit"], f["qubits"], f["gpus"], f.get("schedule"), f.get("transport"))
            out[key] = (f["projected_s"], f["source"])
    return out


def tolerance(measured_s):
    return 0.25 if measured_s < 0.010 else 0.15


def cells(plan_paths, measured_paths):
    """(key, projected s, measured s) of every cell both planned and measured."""
    plan, meas = planned(plan_paths), measured_circuits(measured_paths)
    return {key: (plan[key][0], meas[key][0]) for key in set(plan) & set(meas)}


def repeated(dirs):
    """Every cell's (projected, measured) pairs, one from each repetition."""
    out = {}
    for d in dirs:
        files = sorted(glob.glob(os.path.join(d, "*.json")))
        plans = [f for f in files if os.path.basename(f).startswith("plan-")]
        for key, pm in cells(plans, [f for f in files if f not in plans]).items():
            out.setdefault(key, []).append(pm)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", nargs="+")
    ap.add_argument("--measured", nargs="+")
    ap.add_argument("--repeated", nargs="+", metavar="DIR")
    ap.add_argument("--json")
    a = ap.parse_args()
    if bool(a.repeated) == bool(a.plan and a.measured):
        ap.error("give --plan and --measured, or --repeated")
    by_key = repeated(a.repeated) if a.repeated else {k: [pm] for k, pm in cells(a.plan, a.measured).items()}
    rows = []
    for key in sorted(by_key, key=lambda k: (k[0], k[1], k[2], str(k[3]), str(k[4]))):
        pairs = by_key[key]
        ratios = [p / m for p, m in pairs]
        ratio = statistics.median(ratios)
        m = statistics.median(m for _, m in pairs)
        tol = tolerance(m)
        rows.append(dict(circuit=key[0], qubits=key[1], ranks=key[2], schedule=key[3], wire=key[4],
                         projected_s=statistics.median(p for p, _ in pairs), measured_s=m, ratio=ratio,
                         ratios=ratios, measured=[m for _, m in pairs], tolerance=tol, within=abs(ratio - 1) <= tol))
    if not rows:
        print("compare_plan: no circuit both planned and measured", file=sys.stderr)
        return 2
    many = a.repeated is not None
    span = " | ratios of the repetitions | measured, slowest / fastest" if many else ""
    print(f"| circuit | qubits | ranks | schedule | wire | projected s | measured s | ratio{span} | within |")
    print("|---|---|---|---|---|---|---|---|---|" + ("---|---|" if many else ""))
    for r in rows:
        seen = (f" | {min(r['ratios']):.2f} to {max(r['ratios']):.2f} ({len(r['ratios'])}) | "
                f"×{max(r['measured']) / min(r['measured']):.2f}") if many else ""
        print(f"| {r['circuit']} | {r['qubits']} | {r['ranks']} | {r['schedule'] or '-'} | {r['wire'] or '-'} | "
              f"{r['projected_s']:.5f} | {r['measured_s']:.5f} | {r['ratio']:.3f}{seen} | "
              f"{'yes' if r['within'] else 'NO'} (±{r['tolerance']:.0%}) |")
    if many:
        print("\n(projected s and measured s: medians of the repetitions; ratio: the median of theirs, "
              "each repetition planned from its own source; slowest / fastest: how far the same run's "
              "measured time moved between repetitions)")
    missed = sum(not r["within"] for r in rows)
    print(f"\n{len(rows)} cells, {missed} beyond their tolerance")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
