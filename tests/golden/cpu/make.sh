#!/usr/bin/env bash
# Writes each cpu-transport fixture: the records a run wrote with -J and the
# text it printed. Usage: bash make.sh QBENCH_BINARY (from this folder).
set -euo pipefail
Q=$1
run() { name=$1; shift; "$Q" "$@" -J "$name.json" > "$name.txt"; }
run allreduce-4ranks allreduce --transport cpu -g 4 -b 1K -e 64K -f 4
run broadcast-every-root broadcast --transport cpu -g 3 -b 1K -e 4K -f 2 -r -1 -d int8
run sendrecv-every-op sendrecv --transport cpu -g 2 -b 8 -e 64 -f 8 -o all
run alltoall-types alltoall --transport cpu -g 4 -b 256 -e 4K -f 4 -d all
run reducescatter-avg reducescatter --transport cpu -g 3 -b 1K -e 16K -f 4 -o avg -d half
run exchange-host-ranks exchange --transport cpu -g 4 --qubits 12..13 -n 2
run exchange-one-rank exchange --transport cpu -g 1 --qubits 12 -n 2
