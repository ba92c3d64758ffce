#!/usr/bin/env bash
# Time to verdict on one H200: qbench check at the prolog and quick levels
# of h200x1, each run's wall time from outside and each step's seconds from
# its record, on a node idle, under a 16-thread CPU load and under a
# competing GPU load (a device copy looping on the same GPU). Wanted:
# prolog <= 5 s and quick <= 15 s once the kernel cache is warm, READY idle
# and under the CPU load in every run, NOT READY under the GPU load. The
# first run starts from an empty kernel cache (NVRTC compiles), the rest
# reuse it. Every run appends to one history, shown at the end.
# RUNS (default 5) runs of each level idle and under the CPU load, at most
# 3 under the GPU load. On a GPU other than an H200 the runs hold the node
# to a profile of itself: h200x1's steps with this GPU's model and no
# expected values, measured once at the quick level by check --init
# (node-init.toml in OUT_DIR), so that the times are this node's and the
# verdicts judge it against its own figures.
# Usage: [RUNS=N] bash results/h200/check/run-verdict-time-h200.sh QBENCH_BINARY [OUT_DIR]
#   OUT_DIR (default $OUT) receives run.log, verdict-<case>-<level>-<i>.json
#   and history/ (one JSON line per run).
set -u
Q=$(realpath "${1:?usage: run-verdict-time-h200.sh QBENCH_BINARY [OUT_DIR]}")
OUT=${2:-${OUT:?give OUT_DIR or set OUT}}
W=$(mktemp -d /tmp/verdict-h200.XXXXXX)
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
# NVLink multicast stays off (the machine's rule), as in every run here.
export NCCL_NVLS_ENABLE=0
export QBENCH_KERNEL_CACHE=$W/kernels
LOADS=()
RUNS=${RUNS:-5}

# run CASE LEVEL I: one check, its exit status and wall time, then where its seconds went.
run() {
    local json=$OUT/verdict-$1-$2-$3.json t0 rc
    t0=$(date +%s.%N)
    timeout 300 "$Q" check "${PROFILE[@]}" --level "$2" --quiet --history "$OUT/history" -J "$json"
    rc=$?
    echo "== $1 $2 $3: exit $rc in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
    "$Q" show "$json" | sed -n '/ where the time went /,$p'
}

stop_loads() {
    for p in "${LOADS[@]}"; do kill "$p" 2>/dev/null; done
    # The loads only: a bare wait would wait for the log's tee too.
    [ ${#LOADS[@]} -gt 0 ] && wait "${LOADS[@]}" 2>/dev/null
    LOADS=()
}
trap stop_loads EXIT

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
PROFILE=()
MODEL=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{ print $2 }')
if [ "$MODEL" != H200 ]; then
    sed -e "s/^gpu_model = \"H200\"/gpu_model = \"$MODEL\"/" -e 's/^expected = .*/floor = 0.000001/' \
        "$(dirname "$0")/../../../profiles/h200x1.toml" > "$W/template.toml"
    echo "== a $MODEL, not an H200: a profile of this node first"
    "$Q" check --profile "$W/template.toml" --level quick --quiet --init "$OUT/node-init.toml"
    echo "   check --init: exit $?"
    PROFILE=(--profile "$OUT/node-init.toml")
    rm -rf "$QBENCH_KERNEL_CACHE"
fi
cd "$W"
run cold prolog 1
for i in $(seq "$RUNS"); do run idle prolog "$i"; done
for i in $(seq "$RUNS"); do run idle quick "$i"; done

for _ in $(seq 16); do
    sh -c 'while :; do :; done' &
    LOADS+=($!)
done
for i in $(seq "$RUNS"); do run cpu-load prolog "$i"; done
for i in $(seq "$RUNS"); do run cpu-load quick "$i"; done
stop_loads

# A competing job on the GPU: device copies of 4 GiB by the copy engine and
# by kernels, back to back.
sh -c "while :; do '$Q' copy --test local_ce,local_sm -b 4G -e 4G -n 200 >/dev/null 2>&1; done" &
LOADS+=($!)
sleep 5
for i in $(seq $((RUNS < 3 ? RUNS : 3))); do run gpu-load prolog "$i"; done
for i in $(seq $((RUNS < 3 ? RUNS : 3))); do run gpu-load quick "$i"; done
stop_loads

"$Q" show --history "$OUT/history" --last 30
