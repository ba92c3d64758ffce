#!/usr/bin/env python3
"""Sets qbench's exchange records beside QuEST v4's own times (quest_time's
JSON lines) taken in the same job, and judges the goals of qbench's
simulator verdict: one GPU, QFT measured by qbench at most 1.10x QuEST's
and qbench's projection from its gate classes within 10% of its own
measured QFT; two processes sharing the GPU, the quest wire's global H and
global swap within 10% of QuEST's and QFT with QuEST's wire and schedule
within 15%; and, where a spread run was given QuEST's one-GPU QFT time
(`--simulator-time`), the spread time its verdict priced from it within
15% of QuEST's measured one. Every figure is read from a file; nothing is
estimated.
Each tool may be run more than once in the job (interleaved, so that a
machine's drift between runs falls on both): its figure for an op is then
the median of its runs' medians, and the row keeps every run's figure.

    quest_compare.py --quest quest-*.jsonl --qbench qbench-*.json [--out OUT.json]

Prints a table and writes OUT.json (the rows, each goal and whether it
held); exits 1 when a goal failed, 2 on bad input.
"""
import argparse
import json
import statistics
import sys

ONE_GPU_QFT_MAX = 1.10
PROJECTION_TOLERANCE = 0.10
WIRE_TOLERANCE = 0.10
SPREAD_QFT_TOLERANCE = 0.15
SIMULATOR_VERDICT_TOLERANCE = 0.15


def read_quest(paths):
    """QuEST's ops by (ranks, qubits, op name): the JSON line of each run, in order."""
    out = {}
    for p in paths:
        with open(p) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                out.setdefault((r["ranks"], r["qubits"], r["op"]), []).append(r)
    return out


def read_qbench(paths):
    """qbench's registers by (processes x ranks, qubits): (register, run, path) of each run."""
    out = {}
    for p in paths:
        with open(p) as f:
            run = json.load(f)
        for reg in run.get("registers", []):
            if reg.get("classes"):
                out.setdefault((reg["ranks"], reg["qubits"]), []).append((reg, run, p))
    return out


def class_time(reg, kind, qubits, transport=None):
    """The time of qbench's class `kind` on exactly `qubits` (as a set), and
    the qubits it was measured on; else the nearest measured one of the
    kind: as many qubits, as many of them global, then by its lowest qubit
    (what a memory-bound kernel's traffic follows)."""
    local = reg["local_qubits"]
    same = [c for c in reg["classes"] if c["class"] == kind and c.get("transport") == transport]
    exact = [c for c in same if set(c["qubits"]) == set(qubits)]
    if exact:
        return exact[0]["time_s"], exact[0]["qubits"]
    if not same:
        return None, None
    globals_of = lambda qs: sum(q >= local for q in qs)  # noqa: E731
    near = min(same, key=lambda c: (len(c["qubits"]) != len(qubits), globals_of(c["qubits"]) != globals_of(qubits),
                                    abs(min(c["qubits"]) - min(qubits))))
    return near["time_s"], near["qubits"]


def qft_run(reg, schedule, transport):
    for c in reg.get("circuits", []):
        if c["circuit"] == "qft" and c.get("schedule") == schedule and c.get("transport") == transport and c["wrong"] == 0:
            return c
    return None


def op_class(op, local_qubits):
    """qbench's class for one of quest_time's ops, and its qubits."""
    kind, _, args = op.partition(":")
    q = [int(a) for a in args.split(",")] if args else []
    glob = [x >= local_qubits for x in q]
    if kind == "h":
        return ("global_gate" if glob[0] else "h"), q
    if kind == "cphase":
        return "phase", q
    if kind == "swap":
        if all(glob):
            return "global_swap2", q
        return ("global_swap" if any(glob) else "swap"), q
    return None, q


def compare(quest, qbench, wire="quest"):
    rows, goals = [], []
    for (ranks, n, op), qruns in sorted(quest.items()):
        entries = qbench.get((ranks, n))
        if not entries:
            continue
        local = entries[0][0]["local_qubits"]
        quest_runs = [r["median_s"] for r in qruns]
        row = {"ranks": ranks, "qubits": n, "op": op, "quest_s": statistics.median(quest_runs),
               "quest_runs_s": quest_runs}
        transport = None if ranks == 1 else wire
        if op == "qft":
            found = [(c, path) for reg, _, path in entries for c in [qft_run(reg, "quest", transport)] if c]
            if not found:
                continue
            row.update(qbench="qft circuit, quest schedule" + (f" over {wire}" if transport else ""),
                       qbench_runs_s=[c["time"]["median"] for c, _ in found],
                       qbench_files=[path for _, path in found],
                       qbench_projected_s=statistics.median(c["projected_s"] for c, _ in found)
                       if all(c.get("projected_s") is not None for c, _ in found) else None,
                       qbench_rounds=[c["time"]["samples"] for c, _ in found],
                       quest_rounds=[len(r["times_s"]) for r in qruns],
                       quest_max_err=max((r.get("max_err") or 0.0) for r in qruns))
        else:
            kind, q = op_class(op, local)
            if kind is None:
                continue
            over = transport if kind.startswith("global") else None
            found = [(t, on, path) for reg, _, path in entries for t, on in [class_time(reg, kind, q, over)]
                     if t is not None]
            if not found:
                continue
            row.update(qbench=f"{kind} on qubits {found[0][1]}" + (f" over {wire}" if over else ""),
                       qbench_runs_s=[t for t, _, _ in found], qbench_files=[path for _, _, path in found])
        row["qbench_s"] = statistics.median(row["qbench_runs_s"])
        row["ratio"] = row["qbench_s"] / row["quest_s"]
        rows.append(row)
        if op == "qft" and ranks == 1:
            goals.append(goal(f"QFT({n}) on one GPU: qbench / QuEST <= {ONE_GPU_QFT_MAX}", row["ratio"],
                              row["ratio"] <= ONE_GPU_QFT_MAX))
            p = row.get("qbench_projected_s")
            if p is not None:
                r = p / row["qbench_s"]
                goals.append(goal(f"QFT({n}) on one GPU: qbench's projection / its measured time within "
                                  f"{PROJECTION_TOLERANCE:.0%}", r, abs(r - 1) <= PROJECTION_TOLERANCE))
        elif op == "qft":
            goals.append(goal(f"QFT({n}) over {ranks} processes, QuEST's wire and schedule: qbench / QuEST within "
                              f"{SPREAD_QFT_TOLERANCE:.0%}", row["ratio"], abs(row["ratio"] - 1) <= SPREAD_QFT_TOLERANCE))
        elif ranks > 1 and row["qbench"].startswith(("global_gate", "global_swap ")):
            what = "global H" if op.startswith("h") else "global-local swap"
            goals.append(goal(f"{what} ({op}) over {ranks} processes: the {wire} wire / QuEST within "
                              f"{WIRE_TOLERANCE:.0%}", row["ratio"], abs(row["ratio"] - 1) <= WIRE_TOLERANCE))
    spread = spreading(rows)
    for sp in spread:
        # What the spread runs' own verdicts said, from their one-GPU figure.
        priced = []
        for _, run, _ in qbench[(sp["ranks"], sp["qubits"])]:
            for d in run.get("decisions", []):
                if d["circuit"] == "qft" and d["qubits"] == sp["qubits"] and d.get("one_gpu_s"):
                    sp.update(verdict_factor=d["spread_s"] / d["one_gpu_s"], verdict_one_gpu_s=d["one_gpu_s"],
                              verdict_one_gpu_from=d["one_gpu_from"], verdict=d["verdict"])
                    if d.get("simulator"):
                        priced.append(d["simulator"])
        if priced:
            # The verdict priced at QuEST's own one-GPU time, against QuEST spread.
            p = min(priced, key=lambda x: x["spread_s"])
            ratio = p["spread_s"] / sp["quest_s"]
            sp.update(simulator_one_gpu_s=p["one_gpu_s"], simulator_spread_s=p["spread_s"],
                      simulator_factor=p["spread_s"] / p["one_gpu_s"], simulator_ratio=ratio)
            given = abs(p["one_gpu_s"] / sp["quest_one_s"] - 1) <= 1e-6
            goals.append(goal(f"QFT({sp['qubits']}) over {sp['ranks']} processes priced from QuEST's one-GPU time "
                              f"(given: {'QuEST' if given else 'NOT QuEST'}'s {p['one_gpu_s']:.4g} s): qbench's verdict / "
                              f"QuEST measured within {SIMULATOR_VERDICT_TOLERANCE:.0%}", ratio,
                              given and abs(ratio - 1) <= SIMULATOR_VERDICT_TOLERANCE))
    return {"rows": rows, "goals": goals, "spreading": spread}


def goal(what, value, held):
    return {"goal": what, "value": value, "held": bool(held)}


def spreading(rows):
    """QFT over several processes against one GPU, as each tool measured it:
    the factor, and the seconds spreading adds (the exchange's cost, which
    does not depend on how fast either tool's local gates are)."""
    out = []
    one = {r["qubits"]: r for r in rows if r["op"] == "qft" and r["ranks"] == 1}
    for r in rows:
        if r["op"] == "qft" and r["ranks"] > 1 and r["qubits"] in one:
            o = one[r["qubits"]]
            q, b = r["quest_s"] / o["quest_s"], r["qbench_s"] / o["qbench_s"]
            qa, ba = r["quest_s"] - o["quest_s"], r["qbench_s"] - o["qbench_s"]
            out.append({"qubits": r["qubits"], "ranks": r["ranks"], "quest_s": r["quest_s"], "quest_one_s": o["quest_s"],
                        "quest_factor": q, "qbench_factor": b,
                        "ratio": b / q, "quest_added_s": qa, "qbench_added_s": ba, "added_ratio": ba / qa})
    return out


def table(result):
    runs = lambda xs: "/".join(f"{x:.4g}" for x in xs)  # noqa: E731
    lines = [f"{'ranks':>5} {'qubits':>6} {'op':<14} {'QuEST s':>10} {'qbench s':>10} {'ratio':>6}  qbench  (each run)"]
    for r in result["rows"]:
        each = ""
        if len(r["quest_runs_s"]) > 1 or len(r["qbench_runs_s"]) > 1:
            each = f"  (QuEST {runs(r['quest_runs_s'])}, qbench {runs(r['qbench_runs_s'])})"
        lines.append(f"{r['ranks']:>5} {r['qubits']:>6} {r['op']:<14} {r['quest_s']:>10.4f} {r['qbench_s']:>10.4f} "
                     f"{r['ratio']:>6.3f}  {r['qbench']}{each}")
    for s in result["spreading"]:
        lines.append(f"QFT({s['qubits']}) over {s['ranks']} processes against one GPU: QuEST x{s['quest_factor']:.2f}, "
                     f"qbench x{s['qbench_factor']:.2f} (ratio {s['ratio']:.3f}); it adds QuEST {s['quest_added_s']:.3f} s, "
                     f"qbench {s['qbench_added_s']:.3f} s (ratio {s['added_ratio']:.3f})")
        if "verdict" in s:
            lines.append(f"  qbench's verdict on the spread run: x{s['verdict_factor']:.2f} from one GPU at "
                         f"{s['verdict_one_gpu_s']:.3f} s ({s['verdict_one_gpu_from']})")
        if "simulator_spread_s" in s:
            lines.append(f"  priced from {s['simulator_one_gpu_s']:.3f} s on one GPU: {s['simulator_spread_s']:.3f} s spread, "
                         f"x{s['simulator_factor']:.2f} (QuEST measured {s['quest_s']:.3f} s, x{s['quest_factor']:.2f}; "
                         f"ratio {s['simulator_ratio']:.3f})")
    for g in result["goals"]:
        lines.append(f"{'held' if g['held'] else 'MISSED':<6} {g['goal']}: {g['value']:.3f}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quest", nargs="+", required=True, help="quest_time's JSON lines")
    ap.add_argument("--qbench", nargs="+", required=True, help="qbench exchange -J records")
    ap.add_argument("--wire", default="quest", help="the wire held against QuEST's exchange")
    ap.add_argument("--out", help="the comparison as JSON")
    a = ap.parse_args(argv)
    try:
        result = compare(read_quest(a.quest), read_qbench(a.qbench), a.wire)
    except (OSError, ValueError, KeyError) as e:
        print(f"quest_compare: {e}", file=sys.stderr)
        return 2
    if not result["rows"]:
        print("quest_compare: no op of QuEST's has a qbench figure beside it", file=sys.stderr)
        return 2
    print(table(result))
    if a.out:
        result["inputs"] = {"quest": a.quest, "qbench": a.qbench}
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0 if all(g["held"] for g in result["goals"]) else 1


if __name__ == "__main__":
    sys.exit(main())
