#!/usr/bin/env python3
"""A plan held against measured runs: every (circuit, qubits, ranks, schedule,
wire) a plan priced and a record measured, with the ratio projected/measured
and whether it is within the tolerance (15%, or 25% where the measured circuit
takes under 10 ms). Usage: compare_plan.py --plan P.json [...] --measured M.json [...]
[--json OUT.json]; exit 1 when a cell misses its tolerance."""
import argparse
import json
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", nargs="+", required=True)
    ap.add_argument("--measured", nargs="+", required=True)
    ap.add_argument("--json")
    a = ap.parse_args()
    plan, meas = planned(a.plan), measured_circuits(a.measured)
    rows = []
    for key in sorted(set(plan) & set(meas), key=lambda k: (k[0], k[1], k[2], str(k[3]), str(k[4]))):
        p, m = plan[key][0], meas[key][0]
        tol = tolerance(m)
        rows.append(dict(circuit=key[0], qubits=key[1], ranks=key[2], schedule=key[3], wire=key[4],
                         projected_s=p, measured_s=m, ratio=p / m, tolerance=tol, within=abs(p / m - 1) <= tol))
    if not rows:
        print("compare_plan: no circuit both planned and measured", file=sys.stderr)
        return 2
    print("| circuit | qubits | ranks | schedule | wire | projected s | measured s | ratio | within |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['circuit']} | {r['qubits']} | {r['ranks']} | {r['schedule'] or '-'} | {r['wire'] or '-'} | "
              f"{r['projected_s']:.5f} | {r['measured_s']:.5f} | {r['ratio']:.3f} | "
              f"{'yes' if r['within'] else 'NO'} (±{r['tolerance']:.0%}) |")
    missed = sum(not r["within"] for r in rows)
    print(f"\n{len(rows)} cells, {missed} beyond their tolerance")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
