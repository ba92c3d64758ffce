#!/usr/bin/env bash
# Remakes this folder from the committed one-H200 records of ../../quest/:
# each plan as qbench prints and records it, and compare.md, each plan held
# against a measured record that was not among its sources.
# Usage (repository root or anywhere): bash results/h200/plan/from-records/make.sh QBENCH
set -euo pipefail
q=$(realpath "${1:?usage: make.sh QBENCH}")
here=$(cd "$(dirname "$0")" && pwd)
cmp=$here/../../../ref/compare_plan.py
cd "$here/../../quest"
# plan NAME TITLE MEASURED ARGS...: one plan, then its rows against MEASURED.
plan() {
    local name=$1 title=$2 measured=$3
    shift 3
    "$q" exchange --plan "$@" -J "$here/$name.json" >"$here/$name.txt"
    echo "## $title"
    python3 "$cmp" --plan "$here/$name.json" --measured "$measured"
    echo
}
{
    plan plan-32q-from-30q "qft(32), one H200, planned from the 30-qubit record" h200-exchange-qft-32q.json \
        --from h200-exchange-qft-30q.json --qubits 32 -g 1
    plan plan-30q-from-32q "qft(30), one H200, planned from the 32-qubit record" h200-exchange-qft-30q.json \
        --from h200-exchange-qft-32q.json --qubits 30 -g 1
    plan plan-mpi2-30q "qft(30), two MPI processes sharing the H200, planned from the one-GPU record and the first two-process run, held against the second" \
        h200-exchange-mpi2-quest-30q-again.json \
        --from h200-exchange-qft-30q.json h200-exchange-mpi2-quest-30q.json --qubits 30 -g 2 --ranks-per-gpu 2
} >"$here/compare.md"
sed -i '$ d' "$here/compare.md"
cat "$here/compare.md"
