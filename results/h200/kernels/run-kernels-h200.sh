#!/usr/bin/env bash
# The state-vector kernels against the copy engine on one H200, in one job
# of about 4 minutes (docs/kernels-roofline.md says what each
# figure should be and why):
#   1. the harness results/ref/kernels_bench.cu, built here with nvcc from
#      kernels/*.cu (the files qbench's NVRTC compiles): H at every qubit,
#      combine, placement, qb_copy and sv_copy16 against cudaMemcpyAsync on
#      the same bytes, every result first checked bit for bit; qbench's
#      kernels on four grid shapes, with evict-first hints, with 4
#      vectors a thread, and the kernels before (results/ref/baseline/);
#      and results/ref/copy_shapes.cu: copies of every shape against the
#      copy engine;
#   2. PyTorch's copy_ and elementwise kernels on the same bytes
#      (results/ref/torch_elementwise.py);
#   3. qbench itself: copy --test local_ce,local_sm, and exchange -g 1 at
#      2^30..2^32 amplitudes (double) and 2^31..2^33 (single).
# Usage: bash results/h200/kernels/run-kernels-h200.sh QBENCH_BINARY [OUT_DIR]
#   OUT_DIR defaults to $OUT. It receives: run.log, summary.txt (the closing
#   table, also printed last), bench.json (every harness figure),
#   torch-elementwise.json, sass.txt (ptxas's report and the loads and
#   stores in the SASS of this machine's build), raw.tgz (every file of the
#   run: qbench's JSON and text too). They are refreshed after each step, so
#   a job cut off still returns what it measured.
# Every step runs under `timeout`; the optional ones are skipped once the
# job has run BUDGET seconds (default 240), so that the whole stays under
# about 5 minutes.
set -u
Q=$(realpath "${1:?usage: run-kernels-h200.sh QBENCH_BINARY [OUT_DIR]}")
OUT=${2:-${OUT:?give OUT_DIR or set OUT}}
BUDGET=${BUDGET:-240}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
W=$(mktemp -d /tmp/kernels-h200.XXXXXX)
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
# NVLink multicast stays off (the machine's rule), as in every run here.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
NVCC=/usr/local/cuda/bin/nvcc
[ -x "$NVCC" ] || NVCC=nvcc
CUOBJDUMP=$(dirname "$(command -v "$NVCC")")/cuobjdump
[ -x "$CUOBJDUMP" ] || CUOBJDUMP=cuobjdump

# What goes back, from what the work folder holds so far.
checkpoint() {
    python3 "$REPO/results/ref/summarize_kernels.py" "$W" --bench-json "$OUT/bench.json" > "$OUT/summary.txt" 2>&1
    for f in torch-elementwise.json sass.txt copy-shapes.json; do
        if [ -f "$W/$f" ]; then cp "$W/$f" "$OUT/"; fi
    done
    tar czf "$OUT/raw.tgz" -C "$W" --exclude='bench-qbench' --exclude='bench-streaming' --exclude='bench-wide' --exclude='copy_shapes' \
        --exclude='bench-baseline' .
}
step() {
    if [ -n "${STARTED:-}" ]; then checkpoint; fi
    STARTED=1
    echo
    echo "=== $(date +%T) +${SECONDS}s $*"
}
# True (and says so) once the budget is spent: `late || { optional step; }`.
late() {
    if [ "$SECONDS" -ge "$BUDGET" ]; then
        echo "(skipped: ${SECONDS}s of the ${BUDGET}s budget used)"
        return 0
    fi
    return 1
}

step "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv | tee "$W/machine.txt"
"$NVCC" --version | tail -2 | tee -a "$W/machine.txt"
"$Q" --version 2>&1 | head -1 | tee -a "$W/machine.txt"

step "build the harness: qbench's kernels, with evict-first hints, 4 vectors a thread, and the kernels before"
VARIANTS="qbench streaming wide baseline"
builds=""
for v in $VARIANTS; do
    flags=-DQB_VECTORS=1
    if [ $v = streaming ]; then flags="$flags -DQB_STREAMING"; fi
    if [ $v = wide ]; then flags=-DQB_VECTORS=4; fi
    if [ $v = baseline ]; then flags=-DQB_BASELINE; fi
    timeout 150 "$NVCC" -O3 -std=c++17 -arch=sm_90 $flags -Xptxas -v -o "$W/bench-$v" \
        "$REPO/results/ref/kernels_bench.cu" > "$W/ptxas-$v.txt" 2>&1 &
    builds="$builds $!"
done
# The builds only: a bare `wait` would also wait for the tee of the log.
wait $builds
for v in $VARIANTS; do
    if [ ! -x "$W/bench-$v" ]; then echo "build $v failed:"; tail -20 "$W/ptxas-$v.txt"; fi
done
for v in $VARIANTS; do
    echo "## $v: ptxas -v (sv_*, qb_copy)"
    python3 -c 'import re, sys
name, frame = None, ("?", "?", "?")
for l in open(sys.argv[1]):
    m = re.search(r"entry function .(\w+).", l)
    if m:
        name = m.group(1)
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", l)
    if m:
        frame = m.groups()
    m = re.search(r"Used (\d+) registers", l)
    if m and name and (name.startswith("sv_") or name == "qb_copy"):
        print(f"{name:22} {m.group(1):>3} registers, stack {frame[0]}, spills {frame[1]}/{frame[2]}")' "$W/ptxas-$v.txt"
    echo "## $v: SASS loads and stores"
    if [ -x "$W/bench-$v" ]; then
        python3 "$REPO/results/ref/sass_summary.py" "$W/bench-$v" "$CUOBJDUMP" | grep -A3 -E "^(sv_|qb_copy)"
    fi
done > "$W/sass.txt" 2>&1
grep -A2 -E "^(sv_h_double|sv_h_warp_single|sv_combine_double|qb_copy):" "$W/sass.txt" | head -24

step "harness: qbench's kernels, 16 GiB chunks, four grid shapes, every qubit, checked"
timeout 150 "$W/bench-qbench" -o "$W/bench-qbench-16g.json" double:30 single:31
echo "rc=$?"

step "copy shapes: 1 to 8 vectors a thread, blocks of 128 to 512, against the copy engine (8 GiB)"
timeout 120 "$NVCC" -O3 -std=c++17 -arch=sm_90 -DQB_VECTORS=1 -o "$W/copy_shapes" "$REPO/results/ref/copy_shapes.cu" \
    && timeout 60 "$W/copy_shapes" 8 > "$W/copy-shapes.json"
echo "rc=$?"

step "harness: the kernels before, same sizes, their own grid"
late || {
    timeout 90 "$W/bench-baseline" -o "$W/bench-baseline-16g.json" double:30 single:31
    echo "rc=$?"
}

step "PyTorch: copy_, out-of-place and in-place elementwise on 16 GiB"
late || {
    timeout 90 python3 "$REPO/results/ref/torch_elementwise.py" --gib 16 --out "$W/torch-elementwise.json" 2>&1 | grep -v Warning
    echo "rc=${PIPESTATUS[0]}"
}

step "qbench copy: local_ce and local_sm, 256 MiB .. 8 GiB"
late || {
    timeout 60 "$Q" copy --test local_ce,local_sm -g 1 -b 256M -e 8G -f 2 -J "$W/copy-local.json" > "$W/copy-local.txt" 2>&1
    echo "rc=$?"
    tail -20 "$W/copy-local.txt"
}

# qbench exchange on one GPU (no global gates: local gates and the local copy).
exchange() {  # precision, qubits, tag
    local f="$W/exchange-$1-$3.json" t="$W/exchange-$1-$3.txt"
    timeout 120 "$Q" exchange --qubits "$2" -g 1 --precision "$1" --transport nccl -n 5 -J "$f" > "$t" 2>&1
    local rc=$?
    if [ $rc -ne 0 ] && [ ! -s "$f" ]; then
        echo "nccl run rc=$rc; again with --transport host:"
        tail -3 "$t"
        timeout 120 "$Q" exchange --qubits "$2" -g 1 --precision "$1" --transport host -n 5 -J "$f" > "$t" 2>&1
        rc=$?
    fi
    echo "exchange $1 $2 ($3) rc=$rc"
    grep -iE "local|copy|check|wrong|kernel" "$t" | head -16
}

step "qbench exchange -g 1, round 1: double 2^30..2^32, single 2^31..2^33"
late || exchange double 30..32 r1
late || exchange single 31..33 r1

step "harness: the same kernels with evict-first hints (16 GiB)"
late || {
    timeout 60 "$W/bench-streaming" --grids tiles -o "$W/bench-streaming-16g.json" double:30 single:31
    echo "rc=$?"
}

step "harness: 4 vectors a thread (16 GiB), one tile a block"
late || {
    timeout 60 "$W/bench-wide" --grids tiles -o "$W/bench-wide-16g.json" double:30 single:31
    echo "rc=$?"
}

step "harness: qbench's kernels at 32 GiB chunks, their own grid"
late || {
    timeout 90 "$W/bench-qbench" --grids tiles -o "$W/bench-qbench-32g.json" double:31 single:32
    echo "rc=$?"
}

step "qbench exchange -g 1, rounds 2 and 3 at the two smaller sizes of each precision"
for r in r2 r3; do
    late || exchange double 30..31 $r
    late || exchange single 31..32 $r
done

nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee -a "$W/machine.txt"
step "done in ${SECONDS}s"
checkpoint
cat "$OUT/summary.txt"
