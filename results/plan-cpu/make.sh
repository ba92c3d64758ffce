#!/usr/bin/env bash
# The plan held against measurement on host ranks of this machine, as
# REPEATS (default 5) whole repetitions: in each, a record of one rank at
# every size from 10 to 20 qubits is the plan's only source; the same
# circuits (QFT and a mirrored random circuit of 60 gates, quest schedule)
# are then measured at 10, 14, 18 and 20 qubits on 2, 4 and 8 ranks
# (threads of one process) and on 2 MPI processes, and planned from that
# repetition's source. results/ref/compare_plan.py --repeated takes each
# cell's ratio within a repetition and judges the median of them (15%, 25%
# under 10 ms): this virtual machine's speed drifts by tens of percent over
# minutes, which a source and a run made apart read as the model's error.
# Every figure in a record is a median of rounds.
# Usage: bash results/plan-cpu/make.sh QBENCH   (built with --features mpi)
set -euo pipefail
q=$(realpath "${1:?usage: make.sh QBENCH}")
here=$(cd "$(dirname "$0")" && pwd)
w=$(mktemp -d /tmp/plan-cpu.XXXXXX)
common=(--transport cpu --circuit qft,random:60 --schedule quest --rounds 5 -n 5 -w 1)
plan=(--transport cpu --schedule quest --circuit qft,random:60)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{
    echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -sr), $(date -u +%F)"
    for rep in $(seq 1 "${REPEATS:-5}"); do
        r=$w/rep-$rep
        mkdir -p "$r/threads" "$r/mpi"
        echo "repetition $rep: $(date -u +%T)"
        "$q" exchange --qubits 10..20 -g 1 "${common[@]}" -J "$r/one-rank-10-20q.json" | tail -1
        for n in 10 14 18 20; do
            for g in 2 4 8; do
                "$q" exchange --qubits "$n" -g "$g" "${common[@]}" -J "$r/threads/threads-${g}-${n}q.json" >/dev/null
                "$q" exchange --plan --from "$r/one-rank-10-20q.json" --qubits "$n" -g "$g" "${plan[@]}" \
                    -J "$r/threads/plan-threads-${g}-${n}q.json" >/dev/null
            done
            mpirun --allow-run-as-root -np 2 "$q" exchange --qubits "$n" -g 1 "${common[@]}" \
                -J "$r/mpi/mpi-2-${n}q.json" >/dev/null
            "$q" exchange --plan --from "$r/one-rank-10-20q.json" --qubits "$n" -g 2 --gpus-per-node 2 "${plan[@]}" \
                -J "$r/mpi/plan-mpi-2-${n}q.json" >/dev/null
        done
    done
} >"$here/log.txt" 2>&1
# compare_plan.py exits 1 where a cell is beyond its tolerance: the tables are kept either way.
python3 "$here/../ref/compare_plan.py" --repeated "$w"/rep-*/threads >"$here/threads.md" || true
python3 "$here/../ref/compare_plan.py" --repeated "$w"/rep-*/mpi >"$here/mpi.md" || true
rm -rf "$here/runs"
tar -C "$w" -cJf "$here/runs.tar.xz" .
# The first repetition's source and a two-process run, which tests/plan_records.rs reads.
cp "$w/rep-1/one-rank-10-20q.json" "$w/rep-1/mpi/mpi-2-18q.json" "$here/"
rm -rf "$w"
cat "$here/threads.md" "$here/mpi.md"
