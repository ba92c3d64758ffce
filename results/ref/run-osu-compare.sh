#!/usr/bin/env bash
# qbench's osu_* subcommands beside OSU Micro-Benchmarks 7.4 itself, in one
# job on one machine: ROUNDS rounds, each running every test as OSU and as
# qbench (the order swapped from round to round) with OSU's default sizes
# and loops on host buffers, then results/ref/compare_osu.py's medians and
# ratios.
#
# Usage (from the repository root):
#   bash results/ref/run-osu-compare.sh BIN OSU OUTDIR
#     BIN     qbench built with --features mpi
#     OSU     a folder holding OSU's osu_latency, osu_bw, osu_bibw,
#             osu_mbw_mr and osu_allreduce (built from .ref/osu, which
#             results/ref/stage-osu.sh makes: ./configure CC=mpicc CXX=mpicxx && make)
#     OUTDIR  gets run.log, osu-raw/ (every run's table) and osu-compare.json
# Environment: ROUNDS (3), NP (processes of osu_mbw_mr and osu_allreduce; 4),
# MPIRUN (mpirun --allow-run-as-root --oversubscribe), EXTRA (arguments
# given to both tools, e.g. "-d cuda D D").
set -u
if [ $# -ne 3 ]; then
    echo "usage: bash results/ref/run-osu-compare.sh BIN OSU OUTDIR" >&2
    exit 2
fi
BIN=$(readlink -f "$1")
OSU=$(readlink -f "$2")
OUT=$3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${ROUNDS:-3}
NP=${NP:-4}
MPIRUN=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}
EXTRA=${EXTRA:-}
mkdir -p "$OUT/osu-raw"
RAW=$(cd "$OUT/osu-raw" && pwd)
exec > >(tee "$OUT/run.log") 2>&1

echo "# $(date -u '+%Y-%m-%d %H:%M:%S') UTC on $(hostname): $(nproc) cores"
echo "# $($MPIRUN --version 2>&1 | head -1)"
echo "# qbench: $($BIN --version)"
cat "$ROOT/.ref/osu/QBENCH_REF" 2>/dev/null | sed 's/^/# osu /'

run() { # NAME NP CMD...
    local name=$1 np=$2
    shift 2
    local t0=$SECONDS
    $MPIRUN -np "$np" "$@" > "$RAW/$name.txt" 2> "$RAW/$name.err"
    echo "$name rc=$? $((SECONDS - t0)) s: $*"
}

for r in $(seq 1 "$ROUNDS"); do
    for test in osu_latency:2 osu_bw:2 osu_bibw:2 osu_mbw_mr:$NP osu_allreduce:$NP; do
        name=${test%%:*}
        np=${test##*:}
        # shellcheck disable=SC2086
        if [ $((r % 2)) -eq 1 ]; then
            run "osu-$name-r$r" "$np" "$OSU/$name" $EXTRA
            run "qbench-$name-r$r" "$np" "$BIN" "$name" $EXTRA
        else
            run "qbench-$name-r$r" "$np" "$BIN" "$name" $EXTRA
            run "osu-$name-r$r" "$np" "$OSU/$name" $EXTRA
        fi
    done
done
python3 "$ROOT/results/ref/compare_osu.py" "$RAW" --out "$OUT/osu-compare.json"
echo "compare rc=$?"
