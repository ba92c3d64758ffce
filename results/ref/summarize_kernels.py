"""The closing table of results/h200/kernels/run-kernels-h200.sh: each kernel against the
copy engine's device copy, from the harness (results/ref/kernels_bench.cu),
PyTorch (results/ref/torch_elementwise.py) and qbench's own records.

    python3 results/ref/summarize_kernels.py DIR [--bench-json ALL.json] > summary.txt

DIR holds bench-*.json, torch-elementwise.json, exchange-*.json and
copy-local.json; missing ones are skipped. --bench-json writes the rows of
every bench-*.json into one file (those of a harness run cut off too).
"""
import glob
import json
import os
import statistics
import sys

GOAL = 0.97


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"({os.path.basename(path)}: {e})")
        return None


def bench_rows(d):
    """Every harness row; a file a run was cut off in lacks its closing ']'."""
    rows = []
    for p in sorted(glob.glob(os.path.join(d, "bench-*.json"))):
        with open(p) as f:
            text = f.read().strip()
        for attempt in (text, text[: text.rfind("}") + 1] + "\n]"):
            try:
                rows += json.loads(attempt)
                break
            except ValueError:
                continue
        else:
            print(f"({os.path.basename(p)}: no rows)")
    return rows


def by_round(rows):
    """Median over rounds of of_copy, with min and max."""
    v = sorted(r["of_copy"] for r in rows)
    return statistics.median(v), v[0], v[-1]


def harness(rows):
    if not rows:
        return
    keys = {}
    for r in rows:
        keys.setdefault((r["build"], r["precision"], r["log2_amplitudes"], r["grid"], r["kernel"], r["qubit"]), []).append(r)
    sizes = sorted({(k[1], k[2]) for k in keys})
    print("== The harness: qbench's kernel files built by nvcc -arch=sm_90, against cudaMemcpyAsync on the same bytes")
    print("   (of the copy engine: median of 3 rounds, each the median of 5 launches; worst qubit for H)")
    print(f"{'build':>9} {'grid':>8} {'precision':>9} {'2^n':>4} {'H worst q':>16} {'H median':>8} "
          f"{'combine':>7} {'place':>6} {'qb_copy':>7} {'copy16':>7}  goal {GOAL}")
    for build in ("qbench", "streaming", "wide", "baseline"):
        for grid in ("tiles", "tiles256", "wave", "sm16", "old"):
            for prec, L in sizes:
                def fig(kernel, q=-1):
                    rs = keys.get((build, prec, L, grid, kernel, q))
                    return by_round(rs)[0] if rs else None
                hs = {q: fig("h", q) for (b, p, l, g, k, q) in keys if (b, p, l, g, k) == (build, prec, L, grid, "h")}
                if not hs:
                    continue
                wq = min(hs, key=hs.get)
                others = [fig(k) for k in ("combine", "place_sv_copy16", "qb_copy", "sv_copy16")]
                ok = min([hs[wq]] + [o for o in others if o is not None]) >= GOAL
                cells = " ".join(f"{o:>7.3f}" if o is not None else f"{'-':>7}" for o in others)
                print(f"{build:>9} {grid:>8} {prec:>9} {L:>4} {hs[wq]:>9.3f} (q={wq:>2}) "
                      f"{statistics.median(hs.values()):>8.3f} {cells}  {'meets' if ok else 'MISSES'}")
    ce = [r for r in rows if r["kernel"] == "ce_copy"]
    if ce:
        g = sorted(r["gbps"] for r in ce)
        print(f"   copy engine, all sizes and rounds: {g[0]:.0f}..{g[-1]:.0f} GB/s (read + write)")
    print()


def torch_table(d):
    t = load(os.path.join(d, "torch-elementwise.json")) if os.path.exists(os.path.join(d, "torch-elementwise.json")) else None
    if not t:
        return
    print(f"== PyTorch {t['torch']}, {t['buffer_bytes'] / (1 << 30):.0f} GiB buffers (of its copy_: median of rounds [min, max])")
    for s in t["summary"]:
        print(f"{s['dtype']:>11} {s['op']:>17} {s['gbps']:>7.0f} GB/s  {s['of_copy']:.3f} [{s['of_copy_min']:.3f}, {s['of_copy_max']:.3f}]")
    print()


def exchange(d):
    paths = sorted(glob.glob(os.path.join(d, "exchange-*.json")))
    if not paths:
        return
    print("== qbench exchange -g 1: local H gate against its own local copy (cuMemcpyDtoD), median of -n 5")
    print(f"{'file':>28} {'prec':>6} {'qubits':>6} {'copy GB/s':>9}  gates: qubit GB/s of_copy ...   kernels")
    for p in paths:
        doc = load(p)
        if not doc:
            continue
        # What the kernels were built as (kernels::built, once the records carry it).
        kb = doc.get("kernels") or doc.get("kernel_build") or ""
        if isinstance(kb, dict):
            kb = f"{kb.get('arch')} {kb.get('code')} (NVRTC {kb.get('nvrtc')})"
        for r in doc.get("registers", []):
            if r.get("memory") != "gpu":
                continue
            gates = "  ".join(f"q{g['qubit']}: {g['gbps']:.0f} {g['of_copy']:.3f}" for g in r["local_gates"])
            worst = min((g["of_copy"] for g in r["local_gates"]), default=0)
            print(f"{os.path.basename(p):>28} {r['precision']:>6} {r['qubits']:>6} {r['references']['local_copy_gbps']:>9.0f}  "
                  f"{gates}  {'meets' if worst >= GOAL else 'MISSES'} {kb}")
    print()


def copy_table(d):
    p = os.path.join(d, "copy-local.json")
    doc = load(p) if os.path.exists(p) else None
    if not doc:
        return
    tests = {t["name"]: {r["size"]: r["total_gbps"]["median"] for r in t["rows"]} for t in doc["tests"]}
    ce, sm = tests.get("local_ce", {}), tests.get("local_sm", {})
    print("== qbench copy: local_sm (qb_copy) against local_ce (cuMemcpyDtoDAsync), read + write GB/s")
    for size in sorted(set(ce) & set(sm)):
        print(f"{size / (1 << 20):>8.0f} MiB  ce {ce[size]:>7.0f}  sm {sm[size]:>7.0f}  sm/ce {sm[size] / ce[size]:.3f}")
    print()


def main():
    d = sys.argv[1]
    rows = bench_rows(d)
    if "--bench-json" in sys.argv:
        with open(sys.argv[sys.argv.index("--bench-json") + 1], "w") as f:
            json.dump(rows, f, indent=0)
    harness(rows)
    torch_table(d)
    exchange(d)
    copy_table(d)


if __name__ == "__main__":
    main()
