#!/usr/bin/env bash
# The plan held against measurement on host ranks of this machine: a record
# of one rank at every size from 10 to 20 qubits is the plan's only source;
# the same circuits (QFT and a mirrored random circuit of 60 gates, quest
# schedule) are then measured at 10, 14, 18 and 20 qubits on 2, 4 and 8
# ranks (threads of one process) and on 2 MPI processes, and each plan row
# is held against its run by results/ref/compare_plan.py (15%, 25% under
# 10 ms). Every figure is a median of rounds.
# Usage: bash results/plan-cpu/make.sh QBENCH   (built with --features mpi)
set -euo pipefail
q=$(realpath "${1:?usage: make.sh QBENCH}")
here=$(cd "$(dirname "$0")" && pwd)
w=$(mktemp -d /tmp/plan-cpu.XXXXXX)
common=(--transport cpu --circuit qft,random:60 --schedule quest --rounds 5 -n 5 -w 1)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{
    echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -sr), $(date -u +%F)"
    "$q" exchange --qubits 10..20 -g 1 "${common[@]}" -J "$here/one-rank-10-20q.json" | tail -3
    for n in 10 14 18 20; do
        for g in 2 4 8; do
            "$q" exchange --qubits "$n" -g "$g" "${common[@]}" -J "$w/threads-${g}-${n}q.json" >/dev/null
            "$q" exchange --plan --from "$here/one-rank-10-20q.json" --qubits "$n" -g "$g" --transport cpu \
                --schedule quest --circuit qft,random:60 -J "$w/plan-threads-${g}-${n}q.json" >/dev/null
        done
        mpirun --allow-run-as-root -np 2 "$q" exchange --qubits "$n" -g 1 "${common[@]}" -J "$w/mpi-2-${n}q.json" >/dev/null
        "$q" exchange --plan --from "$here/one-rank-10-20q.json" --qubits "$n" -g 2 --gpus-per-node 2 --transport cpu \
            --schedule quest --circuit qft,random:60 -J "$w/plan-mpi-2-${n}q.json" >/dev/null
    done
} >"$here/log.txt" 2>&1
# compare_plan.py exits 1 where a cell is beyond its tolerance: the tables are kept either way.
python3 "$here/../ref/compare_plan.py" --plan "$w"/plan-threads-*.json --measured "$w"/threads-*.json >"$here/threads.md" || true
python3 "$here/../ref/compare_plan.py" --plan "$w"/plan-mpi-*.json --measured "$w"/mpi-*.json >"$here/mpi.md" || true
mkdir -p "$here/runs"
cp "$w"/*.json "$here/runs/"
rm -rf "$w"
cat "$here/threads.md" "$here/mpi.md"
