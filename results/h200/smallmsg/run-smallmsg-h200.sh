#!/usr/bin/env bash
# Side by side on one H200: qbench's collectives against
# nccl-tests and qbench's copy latency against results/ref/copy_latency.cu,
# in one job: three alternating rounds of whole sweeps (8 B to 1 GiB), then
# SMALL_ROUNDS more of the small messages only (all_reduce and sendrecv,
# 8 B to 1 KiB) and the copy latency, each round running the reference,
# qbench and the reference again (the control), the references' order
# swapped from round to round, then the comparison JSON. The small figures
# swing by up to 1.5x from one process to the next, for nccl-tests as for
# qbench (one run's sizes all at about 4.7 us, the next run's all at 6.3),
# so their medians need more rounds than the large ones, and the control
# shows how far that moves the reference from itself under the goals' rules.
#
# Usage (from the repository root, on the GPU machine):
#   bash results/h200/smallmsg/run-smallmsg-h200.sh BIN OUTDIR
#     BIN     the qbench binary (built on the Rust machine, no MPI needed)
#     OUTDIR  a flat folder; at most 5 files land there:
#               run.log                   everything this script printed
#               machine.txt               nvidia-smi, driver, CUDA, NCCL, qbench and nccl-tests versions
#               build.log                 the nccl-tests and copy_latency builds
#               smallmsg-raw.tgz          every round's raw output (repacked after each round):
#                                         nccl-<coll>-rN.txt (nccl-tests' table), nccl-<coll>-rN.json
#                                         (its -J file, environment removed), qbench-<subcommand>-rN.{json,txt},
#                                         copyref-rN.json, copyref-latency-rN.txt, qbench-copy-rN.{json,txt},
#                                         control-<coll>-rN.txt, control-copy-rN.{json,txt} (the control),
#                                         steps.tsv (each step's exit status and seconds)
#               smallmsg-compare.json     results/ref/compare_smallmsg.py's medians, ratios and verdicts
# Needs .ref/nccl-tests in the work tree (results/ref/stage-nccl-tests.sh
# puts it there; carry `.ref` to the GPU machine). Builds in /tmp only.
#
# Environment knobs: ROUNDS (3), SMALL_ROUNDS (6), DEADLINE (seconds from the
# start after which no new step starts; 480), GPUS (GPUs per collective run, -g; 1),
# CUDA_HOME (/usr/local/cuda), NCCL_HOME (/usr: include/nccl.h).
# Every step runs under `timeout` so that one hang cannot eat the lease.
set -u
if [ $# -ne 2 ]; then
    echo "usage: bash results/h200/smallmsg/run-smallmsg-h200.sh BIN OUTDIR" >&2
    exit 2
fi
BIN=$(readlink -f "$1")
OUT=$2
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
ROUNDS=${ROUNDS:-3}
SMALL_ROUNDS=${SMALL_ROUNDS:-6}
DEADLINE=${DEADLINE:-480}
GPUS=${GPUS:-1}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NCCL_HOME=${NCCL_HOME:-/usr}
ITERS="-n 1000 -w 100"
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SCR=$(mktemp -d /tmp/qbench-smallmsg.XXXXXX)
RAW=$SCR/smallmsg-raw
mkdir -p "$RAW"

# nccl-tests' program, qbench's subcommand, largest size.
COLLECTIVES="all_reduce:allreduce:256M sendrecv:sendrecv:1G all_gather:allgather:1G broadcast:broadcast:1G
reduce:reduce:1G reduce_scatter:reducescatter:1G alltoall:alltoall:1G"

step() { echo; echo "=== $(date +%T) +${SECONDS}s $*"; }
late() {
    if (( SECONDS >= DEADLINE )); then
        echo "skipped (${SECONDS}s past the start, deadline ${DEADLINE}s): $*"
        printf '%s\t%s\t%s\tskipped\t0\n' "$ROUND" "$1" "$2" >> "$RAW/steps.tsv"
        return 0
    fi
    return 1
}
# run ROUND TOOL NAME TIMEOUT CMD...: stdout to RAW/TOOL-NAME-rROUND.txt, rc and seconds to steps.tsv.
run() {
    local round=$1 tool=$2 name=$3 limit=$4
    shift 4
    local txt="$RAW/$tool-$name-r$round.txt" t0=$SECONDS rc
    timeout "$limit" "$@" > "$txt" 2> "$txt.err"
    rc=$?
    # Keep stderr only where it said something.
    if [ -s "$txt.err" ]; then { echo "# --- stderr"; cat "$txt.err"; } >> "$txt"; fi
    rm -f "$txt.err"
    printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$tool" "$name" "$rc" "$((SECONDS - t0))" >> "$RAW/steps.tsv"
    echo "$tool $name round $round: rc=$rc $((SECONDS - t0))s"
    return $rc
}
pack() { tar czf "$OUT/smallmsg-raw.tgz" -C "$SCR" smallmsg-raw; }

main() {
ROUND=0
printf 'round\ttool\tname\trc\tseconds\n' > "$RAW/steps.tsv"

step "machine"
{
    nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total,compute_cap --format=csv
    nvidia-smi topo -m
    echo "kernel $(uname -r)"
    "$CUDA_HOME/bin/nvcc" --version | tail -2
    ls -l /usr/lib/x86_64-linux-gnu/libnccl.so* 2>&1
    grep -h '^#define NCCL_\(MAJOR\|MINOR\|PATCH\) ' "$NCCL_HOME/include/nccl.h" 2>&1
    echo "qbench: $BIN ($("$BIN" --version 2>&1))"
    echo "nccl-tests source:"; cat "$ROOT/.ref/nccl-tests/QBENCH_REF" 2>&1
    echo "NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE ROUNDS=$ROUNDS GPUS=$GPUS iterations: $ITERS"
} 2>&1 | tee "$OUT/machine.txt"
NG=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
CC=${CC:-90}
GENCODE="-gencode=arch=compute_$CC,code=sm_$CC"
echo "GPUs: $NG, building for sm_$CC"

step "build nccl-tests (.ref/nccl-tests, in $SCR) and copy_latency"
if [ ! -f "$ROOT/.ref/nccl-tests/src/common.cu" ]; then
    echo "no nccl-tests source in $ROOT/.ref/nccl-tests: run results/ref/stage-nccl-tests.sh and carry .ref" >&2
    exit 2
fi
cp -r "$ROOT/.ref/nccl-tests" "$SCR/nccl-tests"
NT=$SCR/nccl-tests/build
targets=""
for c in $COLLECTIVES; do targets="$targets $NT/${c%%:*}_perf"; done
t0=$SECONDS
timeout 300 make -C "$SCR/nccl-tests/src" -j"$(nproc)" MPI=0 NCCL_HOME="$NCCL_HOME" CUDA_HOME="$CUDA_HOME" \
    NVCC_GENCODE="$GENCODE" BUILDDIR="$NT" $targets > "$OUT/build.log" 2>&1
echo "nccl-tests build rc=$? $((SECONDS - t0))s"
timeout 120 "$CUDA_HOME/bin/nvcc" -O2 -std=c++17 $GENCODE -L"$CUDA_HOME/lib64" -o "$SCR/copy_latency" \
    "$ROOT/results/ref/copy_latency.cu" -lcuda >> "$OUT/build.log" 2>&1
echo "copy_latency build rc=$?"
for c in $COLLECTIVES; do
    [ -x "$NT/${c%%:*}_perf" ] || { echo "missing $NT/${c%%:*}_perf; see build.log"; tail -20 "$OUT/build.log"; exit 3; }
done
[ -x "$SCR/copy_latency" ] || { echo "copy_latency did not build; see build.log"; tail -20 "$OUT/build.log"; exit 3; }
# nccl-tests links libcudart (and libnccl) dynamically; they may not be on the
# loader's path. qbench's environment is left as it is.
NTLIB=$CUDA_HOME/lib64
[ "$NCCL_HOME" != /usr ] && NTLIB=$NTLIB:$NCCL_HOME/lib
NTENV="env LD_LIBRARY_PATH=$NTLIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

LAT_TESTS=latency_h2d,latency_d2h,latency_mapped_read,latency_mapped_write
[ "$NG" -ge 2 ] && LAT_TESTS=$LAT_TESTS,latency_peer

# One round's copy latency table by one side: TOOL is nccl for the
# references' side (as in the rounds' order), control for the references
# again, qbench for qbench.
latency() {  # ROUND TOOL
    if [ "$2" = nccl ]; then
        late copyref latency && return 0
        run "$1" copyref latency 150 "$SCR/copy_latency" "$RAW/copyref-r$1.json" -n 1000 -w 10
        grep -E '^ +[a-z_]+ +1 ' "$RAW/copyref-latency-r$1.txt"
    elif [ "$2" = control ]; then
        late control copy && return 0
        run "$1" control copy 150 "$SCR/copy_latency" "$RAW/control-copy-r$1.json" -n 1000 -w 10
        grep -E '^ +[a-z_]+ +1 ' "$RAW/control-copy-r$1.txt"
    else
        late qbench copy && return 0
        run "$1" qbench copy 150 "$BIN" copy --test "$LAT_TESTS" --lat_iters 1000 -w 10 -J "$RAW/qbench-copy-r$1.json"
    fi
}

for ROUND in $(seq 1 "$ROUNDS"); do
    step "round $ROUND of $ROUNDS: each collective, nccl-tests then qbench (-g $GPUS $ITERS)"
    for c in $COLLECTIVES; do
        IFS=: read -r nt qb maxb <<< "$c"
        late nccl "$nt" && continue
        run "$ROUND" nccl "$nt" 120 $NTENV "$NT/${nt}_perf" -b 8 -e "$maxb" -f 2 -g "$GPUS" $ITERS \
            -J "$RAW/nccl-$nt-r$ROUND.full.json"
        grep -E '^ +(8|16777216|268435456) ' "$RAW/nccl-$nt-r$ROUND.txt"
        # nccl-tests' JSON carries the whole environment: keep the rest.
        [ -f "$RAW/nccl-$nt-r$ROUND.full.json" ] &&
        python3 - "$RAW/nccl-$nt-r$ROUND.full.json" "$RAW/nccl-$nt-r$ROUND.json" <<'EOF' || echo "nccl-tests JSON not kept"
import json, sys
try:
    with open(sys.argv[1]) as f:
        d = json.load(f)
except Exception as e:  # the table is what counts; the JSON only adds digits
    sys.exit(f"unreadable: {e}")
d.pop("env", None)
with open(sys.argv[2], "w") as f:
    json.dump(d, f, indent=1)
EOF
        rm -f "$RAW/nccl-$nt-r$ROUND.full.json"*
        late qbench "$qb" && continue
        run "$ROUND" qbench "$qb" 120 "$BIN" "$qb" -b 8 -e "$maxb" -f 2 -g "$GPUS" $ITERS \
            -J "$RAW/qbench-$qb-r$ROUND.json"
        grep -E '^ +(8|16777216|268435456) ' "$RAW/qbench-$qb-r$ROUND.txt"
    done

    step "round $ROUND of $ROUNDS: copy latency, copy_latency then qbench (1 B..16 MiB, 1000 copies, 10 warm-up)"
    latency "$ROUND" nccl
    latency "$ROUND" qbench
    pack
done

# The small messages again, in turn: the reference, qbench, and the
# reference once more (the control, the reference judged against itself),
# the references' order swapped from round to round so that qbench always
# runs between them.
SMALL_ITERS="-n 2000 -w 200"
small() {  # ROUND TOOL PROGRAM SUBCOMMAND
    local nt=$3 qb=$4
    if [ "$2" = nccl ] || [ "$2" = control ]; then
        late "$2" "$nt" && return 0
        run "$1" "$2" "$nt" 60 $NTENV "$NT/${nt}_perf" -b 8 -e 1K -f 4 -g "$GPUS" $SMALL_ITERS
        grep -E '^ +8 ' "$RAW/$2-$nt-r$1.txt"
    else
        late qbench "$qb" && return 0
        run "$1" qbench "$qb" 60 "$BIN" "$qb" -b 8 -e 1K -f 4 -g "$GPUS" $SMALL_ITERS -J "$RAW/qbench-$qb-r$1.json"
        grep -E '^ +8 ' "$RAW/qbench-$qb-r$1.txt"
    fi
}
for ROUND in $(seq $((ROUNDS + 1)) $((ROUNDS + SMALL_ROUNDS))); do
    if (( ROUND % 2 )); then order="nccl qbench control"; else order="control qbench nccl"; fi
    step "round $ROUND: all_reduce and sendrecv 8 B..1 KiB ($SMALL_ITERS), copy latency; in the order $order"
    for tool in $order; do small "$ROUND" "$tool" all_reduce allreduce; done
    for tool in $order; do small "$ROUND" "$tool" sendrecv sendrecv; done
    for tool in $order; do latency "$ROUND" "$tool"; done
    pack
done

step "compare"
python3 "$ROOT/results/ref/compare_smallmsg.py" "$RAW" --out "$OUT/smallmsg-compare.json"
echo "compare rc=$?"
pack
rm -rf "$SCR/nccl-tests"
step "done in ${SECONDS}s; files in $OUT:"
ls -l "$OUT"
}

main 2>&1 | tee "$OUT/run.log"
exit "${PIPESTATUS[0]}"
