#!/usr/bin/env bash
# qbench check on one H200, as an admin runs it before a job: the profile
# chosen by GPU model and count (h200x1) at the quick and standard levels,
# a baseline saved and held against, --init and its profile, --quiet with a
# profile that cannot pass, a profile for another machine (h200x2-nvlink),
# the GPU hidden (CUDA_VISIBLE_DEVICES=), the cpu profile, and two MPI
# ranks sharing the one GPU (each GPU step measured once, by one rank).
# The baseline is held against five times: a healthy node must stay READY
# in every one. Every command's exit status and wall time is logged.
# Usage: bash results/h200/check/run-check-h200.sh QBENCH_BINARY [OUT_DIR]
#   OUT_DIR (default $OUT) receives run.log, h200-check-quick.json,
#   h200-check-standard.json, h200-check-mpi2-{quick,standard}.json,
#   h200-check-baseline-{1..5}.json and raw.tgz (every file of the run).
set -u
Q=$(realpath "${1:?usage: run-check-h200.sh QBENCH_BINARY [OUT_DIR]}")
OUT=${2:-${OUT:?give OUT_DIR or set OUT}}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
W=$(mktemp -d /tmp/check-h200.XXXXXX)
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
# NVLink multicast stays off (the machine's rule), as in every run here.
export NCCL_NVLS_ENABLE=0

# run NAME CMD...: the command, its exit status and its wall time.
run() {
    local name=$1 t0 rc
    shift
    echo "== $name: $*"
    t0=$(date +%s.%N)
    timeout 300 "$@"
    rc=$?
    echo "== $name: exit $rc in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
cd "$W"
run quick "$Q" check -J "$OUT/h200-check-quick.json"
run standard "$Q" check --level standard -J "$OUT/h200-check-standard.json"
run save-baseline "$Q" check --save-baseline base.json --quiet
for i in 1 2 3 4 5; do
    run against-baseline-$i "$Q" check --baseline base.json -J "$OUT/h200-check-baseline-$i.json"
done
run init "$Q" check --init mine.toml --quiet
cat mine.toml
run init-profile "$Q" check --profile mine.toml
sed 's/^expected = .*/floor = 1e9/' "$REPO/profiles/h200x1.toml" > impossible.toml
run quiet-impossible "$Q" check --profile impossible.toml --quiet
run other-machine "$Q" check --profile h200x2-nvlink
run no-gpu-visible env CUDA_VISIBLE_DEVICES= "$Q" check --profile h200x1
run cpu "$Q" check --profile cpu --level standard
MPI=(mpirun --allow-run-as-root --oversubscribe -x NCCL_NVLS_ENABLE -np 2)
run mpi2-quick "${MPI[@]}" "$Q" check -J "$OUT/h200-check-mpi2-quick.json"
run mpi2-standard "${MPI[@]}" "$Q" check --level standard -J "$OUT/h200-check-mpi2-standard.json"
tar czf "$OUT/raw.tgz" -C "$W" .
