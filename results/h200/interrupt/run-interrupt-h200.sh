#!/usr/bin/env bash
# Signals inside one long measurement on the H200: each run gets SIGINT
# (or SIGTERM) a few seconds in (in its warm-up or its timed loop) and must end within 2 s with exit 130 (143), its -J
# record valid JSON marked incomplete; then a short run of the same kind
# must start clean and pass.
# Usage (repository root, GPU machine): bash results/h200/interrupt/run-interrupt-h200.sh BIN_DIR OUT
set -u
Q=$(readlink -f "$1")/qbench OUT=$2 W=/tmp/interrupt
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT" "$W"
exec > >(tee "$OUT/log.txt") 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
signal_at() { # name seconds signal want args...
    local name=$1 at=$2 sig=$3 want=$4; shift 4
    rm -f "$W/$name.json"
    "$Q" "$@" -J "$W/$name.json" > "$W/$name.txt" 2> "$W/$name.err" & local pid=$!
    sleep "$at"
    local t0; t0=$(date +%s%N)
    kill "-$sig" $pid
    wait $pid; local rc=$?
    local took; took=$(( ($(date +%s%N) - t0) / 1000000 ))
    local json; json=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('complete', r.get('complete'))" "$W/$name.json" 2>&1)
    echo "$name: $* -> SIG$sig at $at s: rc=$rc (want $want), ended ${took} ms after the signal, record: $json"
    sed 's/^/    /' "$W/$name.err" | tail -2
}
signal_at allreduce 3 INT 130 allreduce -b 256M -e 256M -g 1 -n 100000
signal_at allreduce-timed 10 INT 130 allreduce -b 256M -e 256M -g 1 -n 100000
"$Q" allreduce -b 256M -e 256M -g 1 -n 20 | tail -4; echo "the next run: rc=${PIPESTATUS[0]} (want 0)"
signal_at allreduce-warmup 3 TERM 143 allreduce -b 256M -e 256M -g 1 -w 100000 -n 1
signal_at sendrecv 8 INT 130 sendrecv -b 1G -e 1G -g 1 -n 100000
signal_at copy 8 INT 130 copy --test h2d_pinned -b 1G -e 1G -n 20 --samples 100000
"$Q" copy --test h2d_pinned -b 64M -e 64M -n 20 > "$W/copy-next.txt"; echo "the next copy run: rc=$? (want 0)"
tar -C "$W" -czf "$OUT/files.tgz" .
