#!/usr/bin/env bash
# Where the 1 B copy latency's two levels come from, on one H200: each
# process's copies settle at about 5.6-5.9 or 6.3-6.8 us host to GPU
# (results/h200/smallmsg/h200-copy-latency-api.txt), for results/ref/copy_latency.cu as
# for qbench copy. Four parts, one job:
#   cpus    copy_latency --tests h2d,d2h --max 1 pinned to each CPU in turn
#           (taskset -c C), three rounds, then four unpinned runs a round:
#           does the level follow the CPU the process runs on?
#   clocks  copy_latency, then qbench copy --test latency_h2d, six times
#           each, with nvidia-smi sampling the SM clock every 20 ms: does
#           it follow the GPU's clock?
#   paths   results/ref/h2d_paths.cu eight times: the runtime's and the
#           driver's ways of making the copy (qbench's), interleaved in one
#           process, where the process's level moves every way alike
#   ab      copy_latency and qbench copy (latency_h2d, latency_d2h, 1 B to
#           16 MiB, 1000 copies, 10 warm-up) in turn, eight pairs
#
# Usage (from the repository root, on the GPU machine):
#   bash results/h200/smallmsg/run-latency-levels-h200.sh BIN OUTDIR
#     BIN     the qbench binary
#     OUTDIR  gets levels.txt (every part's figures) and levels-raw.tgz
#             (cpus/, clocks/, ab/: each run's JSON, each clock log)
set -u
if [ $# -ne 2 ]; then
    echo "usage: bash results/h200/smallmsg/run-latency-levels-h200.sh BIN OUTDIR" >&2
    exit 2
fi
BIN=$(readlink -f "$1")
OUT=$2
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SCR=$(mktemp -d /tmp/qbench-levels.XXXXXX)
RAW=$SCR/levels-raw
mkdir -p "$RAW/cpus" "$RAW/clocks" "$RAW/ab"
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
CC=${CC:-90}
NVCC="$CUDA_HOME/bin/nvcc -O2 -std=c++17 -gencode=arch=compute_$CC,code=sm_$CC -L$CUDA_HOME/lib64"
REF=$SCR/copy_latency
PATHS=$SCR/h2d_paths
$NVCC -o "$REF" "$ROOT/results/ref/copy_latency.cu" -lcuda || exit 3
$NVCC -o "$PATHS" "$ROOT/results/ref/h2d_paths.cu" -lcuda || exit 3

main() {
nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader
echo "qbench: $BIN ($("$BIN" --version 2>&1)); CPUs: $(nproc)"

echo "== cpus: copy_latency --tests h2d,d2h --max 1 -n 2000 -w 20, pinned to each CPU, 3 rounds"
for rep in 1 2 3; do
    for c in $(seq 0 $(($(nproc) - 1))); do
        taskset -c "$c" timeout 30 "$REF" "$RAW/cpus/c$c-r$rep.json" --tests h2d,d2h --max 1 -n 2000 -w 20 > /dev/null ||
            echo "cpu $c round $rep: rc=$?"
    done
    for k in 1 2 3 4; do
        timeout 30 "$REF" "$RAW/cpus/free$k-r$rep.json" --tests h2d,d2h --max 1 -n 2000 -w 20 > /dev/null ||
            echo "unpinned $k round $rep: rc=$?"
    done
done

echo "== clocks: copy_latency, then qbench copy --test latency_h2d, the SM clock sampled every 20 ms"
mon() { nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,pstate,clocks_event_reasons.active --format=csv,noheader -lms 20 > "$RAW/clocks/$1.clk" & MON=$!; }
for i in $(seq 1 6); do
    mon ref$i; sleep 0.3
    timeout 30 "$REF" "$RAW/clocks/ref$i.json" --tests h2d,d2h --max 1 -n 3000 -w 20 > /dev/null || echo "ref $i: rc=$?"
    kill $MON
    mon qb$i; sleep 0.3
    timeout 60 "$BIN" copy --test latency_h2d --lat_iters 1000 -w 20 -J "$RAW/clocks/qb$i.json" > /dev/null 2>&1 || echo "qbench $i: rc=$?"
    kill $MON
done

echo "== paths: results/ref/h2d_paths.cu, 8 processes (median us of each way, H2D | D2H)"
for i in $(seq 1 8); do timeout 60 "$PATHS" || echo "h2d_paths rc=$?"; done

echo "== ab: copy_latency and qbench copy in turn, latency_h2d and latency_d2h, 1000 copies, 10 warm-up"
for i in $(seq 1 8); do
    timeout 60 "$REF" "$RAW/ab/ref$i.json" --tests h2d,d2h -n 1000 -w 10 > /dev/null || echo "ref $i: rc=$?"
    timeout 120 "$BIN" copy --test latency_h2d,latency_d2h --lat_iters 1000 -w 10 -J "$RAW/ab/qb$i.json" > /dev/null 2>&1 ||
        echo "qbench $i: rc=$?"
done

python3 - "$RAW" <<'EOF'
import glob, json, os, re, statistics, sys
raw = sys.argv[1]

def ref_1b(path):
    j = json.load(open(path))
    return {r["direction"]: r["host"]["p50_us"] for r in j["results"] if r["size"] == 1}

def qb_1b(path):
    j = json.load(open(path))
    out = {}
    for t in j["tests"]:
        for row in t["latency"][0]["rows"]:
            if row["size"] == 1:
                out[t["name"].replace("latency_", "")] = row["host"]["median"]
    return out

print("== cpus: 1 B host p50 (us), h2d / d2h, round by round")
for f in sorted(glob.glob(f"{raw}/cpus/*-r1.json"), key=lambda p: (len(p), p)):
    name = os.path.basename(f)[: -len("-r1.json")]
    cells = []
    for rep in (1, 2, 3):
        p = f"{raw}/cpus/{name}-r{rep}.json"
        if os.path.exists(p):
            v = ref_1b(p)
            cells.append(f"{v['h2d']:.2f}/{v['d2h']:.2f}")
    print(f"  {name:>6}  " + "  ".join(cells))

def clock(name):
    sm = []
    for line in open(f"{raw}/clocks/{name}.clk"):
        f = [x.strip() for x in line.split(",")]
        try:
            sm.append(int(f[1].split()[0]))
        except (IndexError, ValueError):
            pass
    return f"SM clock min/median/max {min(sm)}/{int(statistics.median(sm))}/{max(sm)} MHz" if sm else "no clock samples"

print("== clocks: 1 B host p50 (us) and the SM clock during the run")
for i in range(1, 7):
    for kind, read in (("ref", ref_1b), ("qb", qb_1b)):
        p = f"{raw}/clocks/{kind}{i}.json"
        if os.path.exists(p):
            v = read(p)
            print(f"  {kind}{i}  h2d {v['h2d']:.2f}  {clock(kind + str(i))}")

print("== ab: 1 B host p50 (us), copy_latency / qbench")
rows = {"h2d": ([], []), "d2h": ([], [])}
for i in range(1, 9):
    pr, pq = f"{raw}/ab/ref{i}.json", f"{raw}/ab/qb{i}.json"
    if not (os.path.exists(pr) and os.path.exists(pq)):
        continue
    r, q = ref_1b(pr), qb_1b(pq)
    for d in rows:
        rows[d][0].append(r[d])
        rows[d][1].append(q[d])
    print(f"  pair {i}  h2d {r['h2d']:.2f} / {q['h2d']:.2f}   d2h {r['d2h']:.2f} / {q['d2h']:.2f}")
for d, (r, q) in rows.items():
    if r:
        mr, mq = statistics.median(r), statistics.median(q)
        print(f"  {d}: medians {mr:.2f} / {mq:.2f}, qbench / copy_latency {mq / mr:.3f}")
EOF
}

main 2>&1 | tee "$OUT/levels.txt"
tar czf "$OUT/levels-raw.tgz" -C "$SCR" levels-raw
rm -rf "$SCR"
