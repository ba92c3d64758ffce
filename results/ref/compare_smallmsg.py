"""qbench beside its small-message references, from the raw output of
results/h200/smallmsg/run-smallmsg-h200.sh: per collective, size and placement the
median over rounds of nccl-tests' time and of qbench's, their difference
and ratio; the same for copy latency per direction and size against
results/ref/copy_latency.cu; and a verdict for each goal.

    python3 results/ref/compare_smallmsg.py RAW --out compare.json

RAW is the folder of raw files or the smallmsg-raw.tgz that the run script
packs. Files it reads (N = round):
    nccl-<program>-rN.txt    nccl-tests' stdout (its table)
    nccl-<program>-rN.json   nccl-tests' -J file (optional: more digits)
    qbench-<sub>-rN.json     `qbench <sub> -J` (collectives and copy)
    copyref-rN.json          copy_latency's output
    control-<program>-rN.txt, control-copy-rN.json
                             the references run a second time in the same
                             round (optional): the control, the reference
                             judged against itself by the same rules
    steps.tsv                each step's exit status (optional)
Standard library only. Exit status: 0 every goal met, 1 a goal missed,
2 a goal could not be judged (missing data), 3 unreadable input.
"""
import argparse
import json
import os
import re
import statistics
import sys
import tarfile

# nccl-tests' program name -> qbench's subcommand, in the run script's order.
COLLECTIVES = {
    "all_reduce": "allreduce",
    "sendrecv": "sendrecv",
    "all_gather": "allgather",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "reduce_scatter": "reducescatter",
    "alltoall": "alltoall",
}
# copy_latency's direction -> qbench copy's test.
COPY_TESTS = {
    "h2d": "latency_h2d",
    "d2h": "latency_d2h",
    "peer": "latency_peer",
    "mapped_read": "latency_mapped_read",
    "mapped_write": "latency_mapped_write",
}
PLACEMENTS = ("out_of_place", "in_place")

# The goals: how close qbench must come to its references.
SMALL_SIZE = 8
SMALL_TOLERANCE_US = 0.3
COPY_SIZE = 1
COPY_TOLERANCE = 0.10
LARGE_FROM = 16 << 20
LARGE_TOLERANCE = 0.02
# Faster than this, size / time, nothing moved: a copy reads and writes
# each byte, and the H200's HBM3e moves 4.8 TB/s by its datasheet, so no
# operation that moves its bytes reaches 2.4 TB/s (the device copy measures
# 2.15). An in-place operation on one GPU is such a no-op for NCCL: its time
# is a launch overhead whatever the size, a ratio of two of them means
# nothing, and such a cell is held to the small-message goal's absolute
# tolerance instead.
NO_DATA_BYTES_PER_S = 2.4e12


class InputError(Exception):
    pass


# ---------------------------------------------------------------- parsers


def _number(text):
    """A table cell as a float, None for N/A."""
    if text == "N/A":
        return None
    return float(text)


def parse_nccl_table(text):
    """nccl-tests' stdout -> {program, version, nccl_headers, nccl_library,
    per_iter, rows: [{size, count, type, redop, root, out_of_place, in_place}],
    out_of_bounds, avg_busbw}. A placement is {time_us, algbw_gbps,
    busbw_gbps, wrong} (wrong None when unchecked), or None where nccl-tests
    printed no figures for it. Rows with -I (per-iteration columns) keep
    i_min_us, i_max_us, i_p99_us, i_cv_pct too."""
    doc = {
        "program": None,
        "version": None,
        "nccl_headers": None,
        "nccl_library": None,
        "per_iter": False,
        "rows": [],
        "out_of_bounds": None,
        "avg_busbw": None,
    }
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            m = re.match(r"#\s*nccl-tests version (\S+) nccl-headers=(\d+) nccl-library=(\d+)", s)
            if m:
                doc["version"], doc["nccl_headers"], doc["nccl_library"] = m.group(1), int(m.group(2)), int(m.group(3))
            m = re.match(r"#\s*Collective test starting: (\S+)", s)
            if m:
                doc["program"] = m.group(1)
            if re.match(r"#\s+size\s+count\s+type", s) and "i_min" in s:
                doc["per_iter"] = True
            m = re.match(r"#\s*Out of bounds values\s*:\s*(\d+)", s)
            if m:
                doc["out_of_bounds"] = int(m.group(1))
            m = re.match(r"#\s*Avg bus bandwidth\s*:\s*(\S+)", s)
            if m:
                doc["avg_busbw"] = float(m.group(1))
            continue
        f = s.split()
        if not f[0].isdigit() or len(f) < 9:
            continue  # a message between rows (warnings, NCCL's INFO lines)
        try:
            row = {"size": int(f[0]), "count": int(f[1]), "type": f[2], "redop": f[3], "root": int(f[4])}
            width = 8 if doc["per_iter"] or len(f) >= 21 else 4
            body = f[5:]
            if len(body) < 2 * width:
                # Out of place left blank (nccl-tests' trace replay): only in-place figures.
                row["out_of_place"], row["in_place"] = None, _placement(body[:width])
            else:
                row["out_of_place"], row["in_place"] = _placement(body[:width]), _placement(body[width : 2 * width])
        except (ValueError, IndexError):
            continue  # not a result row
        doc["rows"].append(row)
    return doc


def _placement(cells):
    p = {"time_us": float(cells[0]), "algbw_gbps": _number(cells[1]), "busbw_gbps": _number(cells[2])}
    wrong = _number(cells[3])
    p["wrong"] = None if wrong is None else int(wrong)
    if len(cells) >= 8:
        p["i_min_us"], p["i_max_us"], p["i_p99_us"], p["i_cv_pct"] = (float(c) for c in cells[4:8])
    return p


def _loads(text):
    """JSON that may hold C's bare inf / nan (nccl-tests prints doubles with %lf)."""
    text = re.sub(r"(?<=[:\[,\s])-?(inf|nan)(?=[,\]\}\s])", "null", text)
    return json.loads(text)


def nccl_json_times(doc):
    """nccl-tests' -J file -> {size: {placement: time_us}} (full precision)."""
    out = {}
    for r in doc.get("results") or []:
        times = {}
        for p in PLACEMENTS:
            v = r.get(p)
            if isinstance(v, dict):
                t = v.get("time", v.get("cpu_time"))
                if isinstance(t, (int, float)):
                    times[p] = float(t)
        out.setdefault(int(r["size"]), times)
    return out


def qbench_collective(doc):
    """`qbench <collective> -J` -> {size: {placement: {time_us, busbw_gbps, wrong}}} (cycle 0, first type/op)."""
    out = {}
    for r in doc.get("results") or []:
        if r.get("cycle", 0) != 0:
            continue
        size = int(r["size"])
        if size in out:
            continue
        out[size] = {}
        for p in PLACEMENTS:
            v = r.get(p)
            if isinstance(v, dict) and v.get("time_us") is not None:
                out[size][p] = {"time_us": float(v["time_us"]), "busbw_gbps": v.get("busbw_gbps"), "wrong": v.get("wrong")}
    return out


def _qbench_median(stats):
    """A qbench summary's median: `median` from schema v2 on, `p50_us` before."""
    if not stats:
        return None
    return stats.get("median", stats.get("p50_us"))


def qbench_copy_latency(doc):
    """`qbench copy -J` -> {test: {size: {host_p50_us, device_p50_us, wrong}}} for latency tests that ran."""
    out = {}
    for t in doc.get("tests") or []:
        if not t.get("name", "").startswith("latency") or t.get("status") != "ran":
            continue
        for series in t.get("latency") or []:
            rows = out.setdefault(t["name"], {})
            for r in series.get("rows") or []:
                dev = r.get("device") or {}
                rows.setdefault(
                    int(r["size"]),
                    {
                        "host_p50_us": _qbench_median(r["host"]),
                        "device_p50_us": _qbench_median(dev),
                        "wrong": r.get("wrong_words"),
                    },
                )
            break  # one series per latency test
    return out


def copyref_latency(doc):
    """copy_latency's JSON -> {direction: {size: {host_p50_us, device_p50_us, wrong}}}."""
    out = {}
    for r in doc.get("results") or []:
        out.setdefault(r["direction"], {})[int(r["size"])] = {
            "host_p50_us": r["host"]["p50_us"],
            "device_p50_us": (r.get("device") or {}).get("p50_us"),
            "wrong": r.get("wrong_bytes"),
        }
    return out


# ---------------------------------------------------------------- input


class Raw:
    """The files of one run, from a folder or a .tgz (names without folders)."""

    def __init__(self, path):
        self.path = path
        self.files = {}
        if os.path.isdir(path):
            for name in os.listdir(path):
                full = os.path.join(path, name)
                if os.path.isfile(full):
                    with open(full, "rb") as f:
                        self.files[name] = f.read()
        elif tarfile.is_tarfile(path):
            with tarfile.open(path) as tar:
                for m in tar.getmembers():
                    if m.isfile():
                        self.files[os.path.basename(m.name)] = tar.extractfile(m).read()
        else:
            raise InputError(f"{path}: neither a folder nor a tar file")

    def text(self, name):
        b = self.files.get(name)
        return None if b is None else b.decode("utf-8", "replace")

    def json(self, name):
        t = self.text(name)
        if t is None:
            return None
        try:
            return _loads(t)
        except json.JSONDecodeError as e:
            raise InputError(f"{name}: not JSON ({e})")

    def rounds(self):
        found = set()
        for name in self.files:
            m = re.search(r"-r(\d+)\.(txt|json)$", name)
            if m:
                found.add(int(m.group(1)))
        return sorted(found)

    def steps(self):
        t = self.text("steps.tsv")
        if not t:
            return []
        lines = [l.split("\t") for l in t.splitlines() if l.strip()]
        head, rows = lines[0], lines[1:]
        return [dict(zip(head, r)) for r in rows if len(r) == len(head)]


# ---------------------------------------------------------------- comparison


def _median(values):
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else None


def _pair(ref, q):
    """Medians, difference (qbench - reference, µs) and ratio (qbench / reference)."""
    mr, mq = _median(ref), _median(q)
    out = {"reference_median_us": mr, "qbench_median_us": mq, "diff_us": None, "ratio": None}
    if mr is not None and mq is not None:
        out["diff_us"] = mq - mr
        out["ratio"] = mq / mr if mr > 0 else None
    return out


def _table_times(text):
    """nccl-tests' table -> {(size, placement): time_us}."""
    out = {}
    for row in parse_nccl_table(text)["rows"]:
        for p in PLACEMENTS:
            if row[p] is not None:
                out[(row["size"], p)] = row[p]["time_us"]
    return out


def compare_collectives(raw, rounds):
    out, meta = {}, {"nccl_tests": None, "nccl_library": None, "qbench_version": None, "qbench_library": None}
    for prog, sub in COLLECTIVES.items():
        ref = {}  # (size, placement) -> {round: time}
        qb = {}
        ctl = {}
        sources = []
        for r in rounds:
            again = raw.text(f"control-{prog}-r{r}.txt")
            if again is not None:
                for key, v in _table_times(again).items():
                    ctl.setdefault(key, {})[r] = v
            table = raw.text(f"nccl-{prog}-r{r}.txt")
            if table is not None:
                t = parse_nccl_table(table)
                meta["nccl_tests"] = meta["nccl_tests"] or t["version"]
                meta["nccl_library"] = meta["nccl_library"] or t["nccl_library"]
                precise = {}
                j = raw.json(f"nccl-{prog}-r{r}.json")
                if j is not None:
                    precise = nccl_json_times(j)
                sources.append("json" if precise else "table")
                for row in t["rows"]:
                    for p in PLACEMENTS:
                        if row[p] is None:
                            continue
                        v = precise.get(row["size"], {}).get(p, row[p]["time_us"])
                        ref.setdefault((row["size"], p), {})[r] = v
            q = raw.json(f"qbench-{sub}-r{r}.json")
            if q is not None:
                meta["qbench_version"] = meta["qbench_version"] or q.get("qbench_version")
                meta["qbench_library"] = meta["qbench_library"] or (q.get("library") or {}).get("version")
                for size, places in qbench_collective(q).items():
                    for p, v in places.items():
                        qb.setdefault((size, p), {})[r] = v["time_us"]
        rows = []
        for size, p in sorted(set(ref) | set(qb), key=lambda k: (k[0], PLACEMENTS.index(k[1]))):
            rr, qq = ref.get((size, p), {}), qb.get((size, p), {})
            row = {"size": size, "placement": p}
            row.update(_pair(list(rr.values()), list(qq.values())))
            row["reference_us"] = [rr.get(r) for r in rounds]
            row["qbench_us"] = [qq.get(r) for r in rounds]
            if (size, p) in ctl:
                row["control_us"] = [ctl[(size, p)].get(r) for r in rounds]
            rows.append(row)
        out[prog] = {"qbench": sub, "reference_source": sorted(set(sources)), "rows": rows}
    return out, meta


def _keep(into, direction, sizes, r):
    """Files round r's {size: {host_p50_us, device_p50_us, ...}} of one
    direction as into[direction][size][key][r]."""
    for size, v in sizes.items():
        for k in ("host_p50_us", "device_p50_us"):
            into.setdefault(direction, {}).setdefault(size, {}).setdefault(k, {})[r] = v[k]


def compare_copy(raw, rounds):
    out = {}
    ref, qb, ctl = {}, {}, {}  # direction -> size -> key -> {round: value}
    skipped = {}
    for r in rounds:
        c = raw.json(f"copyref-r{r}.json")
        if c is not None:
            for s in c.get("skipped") or []:
                skipped[s["direction"]] = s.get("reason")
            for d, sizes in copyref_latency(c).items():
                _keep(ref, d, sizes, r)
        c = raw.json(f"control-copy-r{r}.json")
        if c is not None:
            for d, sizes in copyref_latency(c).items():
                _keep(ctl, d, sizes, r)
        q = raw.json(f"qbench-copy-r{r}.json")
        if q is not None:
            lat = qbench_copy_latency(q)
            for d, test in COPY_TESTS.items():
                _keep(qb, d, lat.get(test, {}), r)
    for d, test in COPY_TESTS.items():
        if d not in ref and d not in qb:
            if d in skipped:
                out[d] = {"qbench": test, "skipped": skipped[d], "rows": []}
            continue
        rows = []
        for size in sorted(set(ref.get(d, {})) | set(qb.get(d, {}))):
            row = {"size": size}
            for k, label in (("host_p50_us", "host"), ("device_p50_us", "device")):
                rr = ref.get(d, {}).get(size, {}).get(k, {})
                qq = qb.get(d, {}).get(size, {}).get(k, {})
                pair = _pair(list(rr.values()), list(qq.values()))
                pair["reference_us"] = [rr.get(r) for r in rounds]
                pair["qbench_us"] = [qq.get(r) for r in rounds]
                cc = ctl.get(d, {}).get(size, {}).get(k)
                if cc:
                    pair["control_us"] = [cc.get(r) for r in rounds]
                row[label] = pair
            rows.append(row)
        out[d] = {"qbench": test, "figure": "median over rounds of each round's p50 of one copy", "rows": rows}
    return out


def _find(rows, size, placement=None):
    for r in rows:
        if r["size"] == size and (placement is None or r.get("placement") == placement):
            return r
    return None


CONTROL_WHAT = (
    "the reference run a second time in the same rounds, qbench between its two runs, and judged "
    "against its first run by the goal's own rule (median over those rounds): how far the machine "
    "moves the reference from itself, whatever qbench does"
)


def control_pair(entry):
    """The reference's first and second runs over the rounds that have both:
    {rounds, reference_us, control_us, diff_us, ratio} (medians), or None."""
    ctl = entry.get("control_us")
    if not ctl:
        return None
    idx = [i for i, v in enumerate(ctl) if v is not None and entry["reference_us"][i] is not None]
    if not idx:
        return None
    mr = _median([entry["reference_us"][i] for i in idx])
    mc = _median([ctl[i] for i in idx])
    return {"rounds": len(idx), "reference_us": mr, "control_us": mc, "diff_us": mc - mr, "ratio": mc / mr if mr > 0 else None}


def _control(goal, checks):
    """Adds the control's checks to a goal (no effect on its verdict)."""
    if checks:
        goal["control"] = {"what": CONTROL_WHAT, "checks": checks, "misses": sum(1 for c in checks if c["pass"] is False)}
    return goal


def goal_small(coll, prog):
    """8 B time within 0.3 µs of nccl-tests in both placements."""
    goal = {
        "goal": f"{prog} at {SMALL_SIZE} B within {SMALL_TOLERANCE_US} µs of nccl-tests, both placements",
        "checks": [],
    }
    rows = (coll.get(prog) or {}).get("rows", [])
    control = []
    for p in PLACEMENTS:
        r = _find(rows, SMALL_SIZE, p)
        c = control_pair(r) if r else None
        if c:
            control.append(dict(placement=p, **c, **{"pass": abs(c["diff_us"]) <= SMALL_TOLERANCE_US}))
        if r is None or r["diff_us"] is None:
            goal["checks"].append({"placement": p, "pass": None, "why": "no figures from both"})
            continue
        goal["checks"].append(
            {
                "placement": p,
                "reference_us": r["reference_median_us"],
                "qbench_us": r["qbench_median_us"],
                "diff_us": r["diff_us"],
                "pass": abs(r["diff_us"]) <= SMALL_TOLERANCE_US,
            }
        )
    return _control(_settle(goal), control)


def goal_copy(copy):
    goal = {"goal": f"copy latency at {COPY_SIZE} B (host clock, median) within {COPY_TOLERANCE:.0%} of copy_latency, every direction", "checks": []}
    control = []
    for d, entry in copy.items():
        if entry.get("skipped"):
            goal["checks"].append({"direction": d, "pass": "n/a", "why": entry["skipped"]})
            continue
        r = _find(entry["rows"], COPY_SIZE)
        h = r["host"] if r else None
        c = control_pair(h) if h else None
        if c:
            control.append(dict(direction=d, **c, **{"pass": abs(c["ratio"] - 1) <= COPY_TOLERANCE}))
        if h is None or h["ratio"] is None:
            goal["checks"].append({"direction": d, "pass": None, "why": "no figures from both"})
            continue
        goal["checks"].append(
            {
                "direction": d,
                "reference_us": h["reference_median_us"],
                "qbench_us": h["qbench_median_us"],
                "ratio": h["ratio"],
                "pass": abs(h["ratio"] - 1) <= COPY_TOLERANCE,
            }
        )
    if not goal["checks"]:
        goal["checks"].append({"pass": None, "why": "no copy latency figures"})
    return _control(_settle(goal), control)


def moved_nothing(size, time_us):
    """Whether `size` bytes in `time_us` is faster than any copy of them."""
    return time_us > 0 and size / (time_us * 1e-6) > NO_DATA_BYTES_PER_S


def goal_large(coll):
    goal = {
        "goal": f"every collective within ±{LARGE_TOLERANCE:.0%} of nccl-tests' time at {LARGE_FROM >> 20}M and above, both placements",
        "checks": [],
    }
    for prog in COLLECTIVES:
        rows = [r for r in (coll.get(prog) or {}).get("rows", []) if r["size"] >= LARGE_FROM]
        if not rows:
            goal["checks"].append({"collective": prog, "pass": None, "why": "no sizes from 16M"})
            continue
        for r in rows:
            c = {"collective": prog, "size": r["size"], "placement": r["placement"], "ratio": r["ratio"]}
            mr, mq = r["reference_median_us"], r["qbench_median_us"]
            if r["ratio"] is None:
                c["pass"] = None
            elif moved_nothing(r["size"], mr) and moved_nothing(r["size"], mq):
                c["judged_by"] = (
                    f"both faster than {NO_DATA_BYTES_PER_S / 1e12:g} TB/s (no data moved): |diff| <= {SMALL_TOLERANCE_US} us"
                )
                c["pass"] = abs(r["diff_us"]) <= SMALL_TOLERANCE_US
            else:
                c["pass"] = abs(r["ratio"] - 1) <= LARGE_TOLERANCE
            goal["checks"].append(c)
    return _settle(goal)


def _settle(goal):
    marks = [c["pass"] for c in goal["checks"] if c["pass"] != "n/a"]
    if any(m is False for m in marks):
        goal["verdict"] = "fail"
    elif not marks or any(m is None for m in marks):
        goal["verdict"] = "incomplete"
    else:
        goal["verdict"] = "pass"
    goal["failed"] = [c for c in goal["checks"] if c["pass"] is False]
    return goal


def compare(raw):
    rounds = raw.rounds()
    coll, meta = compare_collectives(raw, rounds)
    copy = compare_copy(raw, rounds)
    goals = [goal_small(coll, "all_reduce"), goal_small(coll, "sendrecv"), goal_copy(copy), goal_large(coll)]
    verdicts = [g["verdict"] for g in goals]
    overall = "fail" if "fail" in verdicts else "incomplete" if "incomplete" in verdicts else "pass"
    steps = raw.steps()
    return {
        "schema": "qbench.ref.smallmsg-compare.v1",
        "source": os.path.basename(os.path.normpath(raw.path)),
        "rounds": rounds,
        "method": (
            "each figure is the median over rounds of one run's value; collectives: the time column "
            "(µs per iteration) of nccl-tests (its -J file where present, else its table) and of qbench -J; "
            "copies: each run's p50 of one copy timed by the host clock (and, as 'device', by events); "
            "diff_us = qbench - reference, ratio = qbench / reference; a goal's 'control' (where the "
            "references ran twice a round) judges the reference's second run against its first by the same rule"
        ),
        "versions": meta,
        "collectives": coll,
        "copy_latency": copy,
        "goals": goals,
        "verdict": overall,
        "failed_steps": [s for s in steps if s.get("rc") not in ("0", None)],
    }


def summary(doc):
    lines = [f"rounds {doc['rounds']}; nccl-tests {doc['versions']['nccl_tests']}, qbench {doc['versions']['qbench_version']}"]
    lines.append(f"{'collective':>15} {'size':>11} {'placement':>12} {'nccl-tests':>10} {'qbench':>10} {'diff us':>8} {'ratio':>6}")
    for prog, c in doc["collectives"].items():
        largest = max((r["size"] for r in c["rows"]), default=None)
        for r in c["rows"]:
            if r["size"] not in (SMALL_SIZE, LARGE_FROM, largest):
                continue
            lines.append(
                f"{prog:>15} {r['size']:>11} {r['placement']:>12} {_f(r['reference_median_us']):>10} "
                f"{_f(r['qbench_median_us']):>10} {_f(r['diff_us']):>8} {_f(r['ratio'], 3):>6}"
            )
    for d, c in doc["copy_latency"].items():
        if c.get("skipped"):
            lines.append(f"copy {d}: skipped ({c['skipped']})")
            continue
        r = _find(c["rows"], COPY_SIZE)
        if r:
            h = r["host"]
            lines.append(f"copy {d:>12} 1 B host p50: ref {_f(h['reference_median_us'])} qbench {_f(h['qbench_median_us'])} ratio {_f(h['ratio'], 3)}")
    for g in doc["goals"]:
        lines.append(f"{g['verdict'].upper():>10}  {g['goal']}" + (f" ({len(g['failed'])} misses)" if g["failed"] else ""))
        if "control" in g:
            c = g["control"]
            lines.append(f"{'':>10}  control, the reference against itself: {c['misses']} misses of {len(c['checks'])}")
    lines.append(f"verdict: {doc['verdict']}")
    return "\n".join(lines)


def _f(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("raw", help="the raw folder or smallmsg-raw.tgz")
    ap.add_argument("--out", required=True, help="comparison JSON to write")
    a = ap.parse_args(argv)
    try:
        doc = compare(Raw(a.raw))
    except (InputError, OSError, tarfile.TarError) as e:
        print(f"compare_smallmsg: {e}", file=sys.stderr)
        return 3
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(summary(doc))
    return {"pass": 0, "fail": 1, "incomplete": 2}[doc["verdict"]]


if __name__ == "__main__":
    sys.exit(main())
