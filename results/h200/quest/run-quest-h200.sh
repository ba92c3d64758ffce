#!/usr/bin/env bash
# Times QuEST v4.1 (QuEST-Kit/QuEST, source in .dev/quest, commit in .dev/quest/QUEST_COMMIT)
# on the H200 machine beside qbench, with our results/ref/quest_time.cpp: one CUDA process
# (QUBITS) and NP MPI processes sharing the GPU (DIST_QUBITS; PERMIT_NODES_TO_SHARE_GPU=ON).
#
# Usage (repository root, on the GPU machine, as root; no network needed):
#   OUT=DIR bash results/h200/quest/run-quest-h200.sh
# Env: OUT (./out)  DEADLINE (400: seconds from start, builds included)  ROUNDS (3)
#   QUBITS ("30 32")  OPS (per-size defaults)  DIST_QUBITS (30)  DIST_OPS (default below)  NP (2)
#   (QUBITS or DIST_QUBITS set empty: no run of that kind)
#   STAGE (all|build|run: builds are kept in BUILD_ROOT, /tmp/quest-h200, and reused)
#   CUDA (/usr/local/cuda)  CPU_ONLY=1 (build without CUDA: to test this script off the GPU)
#   DRY_RUN=1 (print the commands, run nothing)
# Writes $OUT/quest-build.log, $OUT/quest-run.log and $OUT/quest-{1gpu,mpiNP}-Nq.jsonl
# (one JSON line per op). An op whose estimated time would pass DEADLINE is skipped, and
# every run is under `timeout` for what is left of it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=${OUT:-./out}; DEADLINE=${DEADLINE:-400}; ROUNDS=${ROUNDS:-3}; NP=${NP:-2}
QUBITS=${QUBITS-30 32}; DIST_QUBITS=${DIST_QUBITS-30}; STAGE=${STAGE:-all}
CUDA=${CUDA:-/usr/local/cuda}; CPU_ONLY=${CPU_ONLY:-}; DRY_RUN=${DRY_RUN:-}
BUILD_ROOT=${BUILD_ROOT:-/tmp/quest-h200}
case $BUILD_ROOT in /*quest*) ;; *) echo "run-quest-h200: BUILD_ROOT must be an absolute path naming quest" >&2; exit 2 ;; esac
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
BLOG=$OUT/quest-build.log; RLOG=$OUT/quest-run.log
SRC=$ROOT/.dev/quest; PROG=$ROOT/results/ref/quest_time.cpp
[ -f "$SRC/CMakeLists.txt" ] || { echo "run-quest-h200: no QuEST source in $SRC" >&2; exit 2; }
export QUEST_SOURCE="QuEST-Kit/QuEST $(cat "$SRC/QUEST_COMMIT" 2> /dev/null || echo unknown)"
say() { echo "=== +${SECONDS}s $*" | tee -a "$RLOG"; }
x() { if [ -n "$DRY_RUN" ]; then echo "+ $*"; else echo "+ $*" >> "$BLOG"; "$@"; fi; }

CMAKE_COMMON=(-DCMAKE_BUILD_TYPE=Release -DFLOAT_PRECISION=2 "-DUSER_SOURCE=$PROG" -DOUTPUT_EXE=quest_time)
[ -n "$CPU_ONLY" ] || CMAKE_COMMON+=(-DENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 "-DCMAKE_CUDA_COMPILER=$CUDA/bin/nvcc")
CMAKE_DIST=(-DENABLE_DISTRIBUTION=ON -DPERMIT_NODES_TO_SHARE_GPU=ON)

build_one() { # name cmake-args...: configure and build $BUILD_ROOT/$name from $BUILD_ROOT/src
    local b=$BUILD_ROOT/$1; shift
    x cmake -S "$BUILD_ROOT/src" -B "$b" "${CMAKE_COMMON[@]}" "$@" && x make -C "$b" -j16
}

if [ "$STAGE" != run ]; then
    : > "$BLOG"
    { date; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
      "$CUDA/bin/nvcc" --version | tail -2 || true; cmake --version | head -1 || true; mpirun --version | head -1 || true
      ompi_info --parsable --all 2> /dev/null | grep -E 'mpi_built_with_cuda_support:value' || true
      echo "QUEST_SOURCE=$QUEST_SOURCE"; } >> "$BLOG" 2>&1
    STAMP=$( { cat "$SRC/QUEST_COMMIT" "$PROG"; echo "${CMAKE_COMMON[*]}"; } | md5sum | cut -c1-12)
    if [ -z "$DRY_RUN" ] && [ "$(cat "$BUILD_ROOT/stamp" 2> /dev/null)" = "$STAMP" ] &&
       [ -x "$BUILD_ROOT/single/quest_time" ] && [ -x "$BUILD_ROOT/dist/quest_time" ]; then
        say "builds in $BUILD_ROOT are current ($STAMP): not rebuilt"
    else
        say "building QuEST twice in $BUILD_ROOT (log: $BLOG)"
        x rm -rf "$BUILD_ROOT"; x mkdir -p "$BUILD_ROOT"; x cp -a "$SRC" "$BUILD_ROOT/src"
        # CUDA 13's Thrust (CCCL 3) removed thrust::unary_function/binary_function: drop the bases
        x sed -E -i 's/[[:space:]]*:[[:space:]]*public[[:space:]]+thrust::(unary|binary)_function<[^>]*>//' \
            "$BUILD_ROOT/src/quest/src/gpu/gpu_thrust.cuh"
        [ -n "$DRY_RUN" ] || ! grep -q '_function<' "$BUILD_ROOT/src/quest/src/gpu/gpu_thrust.cuh" ||
            { echo "run-quest-h200: the thrust fix did not apply" >&2; exit 1; }
        build_one single > "$BLOG.single" 2>&1 & P1=$!
        build_one dist "${CMAKE_DIST[@]}" > "$BLOG.dist" 2>&1 & P2=$!
        RC1=0; RC2=0; wait $P1 || RC1=$?; wait $P2 || RC2=$?
        cat "$BLOG.single" "$BLOG.dist" >> "$BLOG"; rm -f "$BLOG.single" "$BLOG.dist"
        say "builds done: single rc=$RC1, dist rc=$RC2"
        [ $RC1 = 0 ] && [ $RC2 = 0 ] || { tail -30 "$BLOG" >&2; exit 1; }
        [ -n "$DRY_RUN" ] || echo "$STAMP" > "$BUILD_ROOT/stamp"
    fi
fi
[ "$STAGE" != build ] || exit 0

est() { # op qubits ranks -> seconds one application may take at most (from QuEST's runs on the H200, double)
    awk -v op="$1" -v n="$2" -v r="$3" 'BEGIN { s = 2^(n-30); L = n - log(r)/log(2)
        k = split(op, a, /[:,]/); g1 = (k > 1 && a[2] >= L); g2 = (k > 2 && a[3] >= L)
        if (a[1] == "qft") t = 2.6 + (r > 1 ? 14 : 0)
        else if (r > 1 && (a[1] == "h" && g1 || a[1] == "cnot" && g1 && g2 || a[1] == "swap" && g1 && g2)) t = 9
        else if (r > 1 && (a[1] == "swap" && (g1 || g2) || a[1] == "cnot" && g2)) t = 4.5
        else t = 0.012
        printf "%.3f", 1.3 * t * s }'
}

run_set() { # label qubits ranks binary ops...: run the ops that fit before DEADLINE
    local label=$1 n=$2 r=$3 bin=$4; shift 4
    local f=$OUT/quest-$label-${n}q.jsonl left=$((DEADLINE - SECONDS)) keep=() total=5 op e
    for op in "$@"; do
        e=$(est "$op" "$n" "$r")
        if awk -v t="$total" -v e="$e" -v k=$((ROUNDS + 2)) -v l="$left" 'BEGIN { exit !(t + k*e < l) }'; then
            keep+=("$op"); total=$(awk -v t="$total" -v e="$e" -v k=$((ROUNDS + 2)) 'BEGIN { print t + k*e }')
        else say "skip $label ${n}q $op: about $e s a run, $((ROUNDS + 2)) runs, ${left}s left"; fi
    done
    [ ${#keep[@]} -gt 0 ] || return 0
    local cmd=("$bin" "$n" "$ROUNDS" "${keep[@]}")
    [ "$r" = 1 ] || cmd=(mpirun --allow-run-as-root --oversubscribe -np "$r" -x OMP_NUM_THREADS -x QUEST_SOURCE "${cmd[@]}")
    say "$label ${n}q: ${cmd[*]} (estimate ${total}s) -> $f"
    [ -z "$DRY_RUN" ] || return 0
    local rc=0; timeout -k 10 "$left" "${cmd[@]}" >> "$f" 2>> "$RLOG" || rc=$?
    say "rc=$rc, $(wc -l < "$f") lines in $f"; tail -n ${#keep[@]} "$f" | cut -c1-220 >> "$RLOG"
    [ -n "$CPU_ONLY" ] || ! grep -q '"gpu":false' "$f" || say "WARNING: $f has runs without the GPU"
}

[ -n "$DRY_RUN" ] || [ -x "$BUILD_ROOT/single/quest_time" ] || { echo "run-quest-h200: no build in $BUILD_ROOT" >&2; exit 1; }
for n in $QUBITS; do
    m=$((n > 15 ? 15 : n / 2)); t=$((n > 30 ? 29 : n - 1))
    OMP_NUM_THREADS=16 run_set 1gpu "$n" 1 "$BUILD_ROOT/single/quest_time" \
        ${OPS:-h:0 h:$((n / 2)) h:$((n - 1)) cphase:1,0 cphase:$m,$((m - 1)) cphase:$t,$((t - 1)) swap:0,$t qft}
done
for n in $DIST_QUBITS; do
    OMP_NUM_THREADS=$((16 / NP)) run_set "mpi$NP" "$n" "$NP" "$BUILD_ROOT/dist/quest_time" \
        ${DIST_OPS:-h:0 h:$((n - 2)) h:$((n - 1)) cphase:1,0 cphase:$((n - 1)),$((n - 2)) swap:0,$((n - 1)) qft}
done
say "done"
