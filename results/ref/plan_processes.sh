#!/usr/bin/env bash
# The plan for MPI processes sharing one GPU, held against their measured
# runs. DIR holds the records of results/h200/plan/run-plan-h200.sh
# (STAGE=source: one-gpu-12-31q.json; STAGE=measure: mpiN-Qq.json and
# QuEST's quest-1gpu-Nq.jsonl, quest-mpi4-Nq.jsonl). The plan's sources
# (SOURCES, files of DIR): the one-GPU sweep and the two-process records at
# 26 and 28 qubits, by default one-gpu-12-31q.json mpi2-26q.json
# mpi2-28q.json; it prices every measured run of DIR (QFT and a random
# circuit of 60 gates, quest schedule, quest and mpi wires) at its qubits
# and processes, QuEST v4.1's QFT on 4 processes from QuEST's own
# one-GPU time at each size both ran (--simulator-time, where DIR holds
# QuEST's times), and the one-GPU record's own circuits from it alone.
# compare_plan.py holds each against its measurement (15%, 25% under 10 ms);
# DIR/plans/ holds the plans, DIR/compare.md the tables.
# Usage: [SOURCES="F..."] bash results/ref/plan_processes.sh DIR QBENCH
set -euo pipefail
q=$(realpath "${2:?usage: plan_processes.sh DIR QBENCH}")
ref=$(cd "$(dirname "$0")" && pwd)
cd "${1:?usage: plan_processes.sh DIR QBENCH}"
read -ra src <<< "${SOURCES:-one-gpu-12-31q.json mpi2-26q.json mpi2-28q.json}"
mkdir -p plans
measured=(mpi*q.json)
for f in "${measured[@]}"; do
    [[ $f =~ ^mpi([0-9]+)-([0-9]+)q\.json$ ]] || continue
    np=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]}
    "$q" exchange --plan --from "${src[@]}" --qubits "$n" -g "$np" --ranks-per-gpu "$np" --transport quest,mpi \
        --schedule quest --circuit qft,random:60 -J "plans/plan-mpi$np-${n}q.json" > "plans/plan-mpi$np-${n}q.txt"
done
for n in 20 24 26 28 30 31; do
    "$q" exchange --plan --from one-gpu-12-31q.json --qubits "$n" -g 1 --circuit qft,random:60 \
        -J "plans/plan-one-${n}q.json" > "plans/plan-one-${n}q.txt"
done
median() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["median_s"])' "$1"; }
# QuEST's own QFT on 4 processes, from its one-GPU time, at every size both were run.
quest=()
for f in quest-mpi4-*q.jsonl; do
    [[ $f =~ ^quest-mpi4-([0-9]+)q\.jsonl$ ]] && [ -f "quest-1gpu-${BASH_REMATCH[1]}q.jsonl" ] || continue
    n=${BASH_REMATCH[1]}; quest+=("$n")
    "$q" exchange --plan --from "${src[@]}" --qubits "$n" -g 1,4 --ranks-per-gpu 4 --transport quest --schedule quest \
        --circuit qft --simulator-time "$(median "quest-1gpu-${n}q.jsonl")" -J "plans/plan-quest-mpi4-${n}q.json" \
        > "plans/plan-quest-mpi4-${n}q.txt"
done
{
    echo "The one-GPU record's own count, planned from it alone:"
    echo
    # compare_plan.py exits 1 where a cell is beyond its tolerance: the table is kept either way.
    python3 "$ref/compare_plan.py" --plan plans/plan-one-*.json --measured one-gpu-12-31q.json || true
    echo
    echo "Processes sharing the GPU, from ${src[*]}:"
    echo
    python3 "$ref/compare_plan.py" --plan plans/plan-mpi*.json --measured "${measured[@]}" || true
    if [ ${#quest[@]} -gt 0 ]; then
        echo
        python3 - "${quest[@]}" << 'PY'
import json, sys
print("| QuEST v4.1 | qubits | processes | projected s | measured s | ratio | within |")
print("|---|---|---|---|---|---|---|")
for n in sys.argv[1:]:
    plan = json.load(open(f"plans/plan-quest-mpi4-{n}q.json"))
    p = next(f for f in plan["forecasts"] if f["gpus"] == 4)["simulator_s"]
    measured = json.loads(open(f"quest-mpi4-{n}q.jsonl").readline())["median_s"]
    within = "yes" if abs(p / measured - 1) <= 0.15 else "NO"
    print(f"| qft, from its one-GPU time | {n} | 4 | {p:.3f} | {measured:.3f} | {p / measured:.3f} | {within} (±15%) |")
PY
    fi
} > compare.md
cat compare.md
