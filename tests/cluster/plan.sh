#!/usr/bin/env bash
# The plan across nodes held against a run across nodes: four emulated
# nodes (nodes.sh), every link shaped to 400 Mbit/s (tc tbf on both ends);
# a record of the register over two nodes (16 to 20 qubits, one process
# each) is the plan's only source, so the fabric's α and β are the cpu
# wire's across those two; the plan for four nodes (`--gpus-per-node 1`)
# is then held against the same circuits measured over four. REPEATS
# (default 3) repetitions of the whole, each planned from its own source;
# results/ref/compare_plan.py --repeated judges each cell's median ratio.
# Not part of CI: it times, and the four nodes' processes share this
# machine's cores, which a plan for nodes of their own does not price (see
# the README of the results).
# Usage: tests/cluster/plan.sh QBENCH [OUT]   (qbench built with --features
#   mpi; OUT receives rep-N/ with the records and the plans, and
#   compare.md). Root, iproute2, Open MPI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
nodes=$here/nodes.sh
q=$(realpath "${1:?usage: plan.sh QBENCH [OUT]}")
dir=$(mktemp -d /tmp/qbench-plan.XXXXXX)
out=${2:-$dir/out}
chmod 0755 "$dir"
trap '"$nodes" down "$dir"' EXIT
mkdir -p "$out"
"$nodes" up "$dir" 4
for i in 1 2 3 4; do
    pid=$("$nodes" pid "$dir" "qn$i")
    nsenter -t "$pid" -n tc qdisc replace dev eth0 root tbf rate 400mbit burst 64kb latency 400ms
    tc qdisc replace dev "qb-qn$i" root tbf rate 400mbit burst 64kb latency 400ms
done
mpi=(mpirun --allow-run-as-root --mca plm_rsh_agent "$dir/rsh" --mca oob_tcp_if_include 10.77.0.0/24
    --mca btl self,tcp --mca btl_tcp_if_include 10.77.0.0/24 --hostfile "$dir/hostfile")
common=(--transport cpu --circuit qft,random:40 --schedule quest --rounds 3 -n 3 -w 1)
for rep in $(seq 1 "${REPEATS:-3}"); do
    r=$out/rep-$rep
    mkdir -p "$r"
    "${mpi[@]}" -np 2 "$q" exchange --qubits 16..20 -g 1 "${common[@]}" -J "$r/two-nodes-16-20q.json" >"$r/two-nodes.txt"
    for n in 18 20; do
        "${mpi[@]}" -np 4 "$q" exchange --qubits "$n" -g 1 "${common[@]}" -J "$r/four-nodes-${n}q.json" >"$r/four-nodes-${n}q.txt"
        "$q" exchange --plan --from "$r/two-nodes-16-20q.json" --qubits "$n" -g 4 --gpus-per-node 1 --transport cpu \
            --schedule quest --circuit qft,random:40 -J "$r/plan-four-nodes-${n}q.json" >"$r/plan-four-nodes-${n}q.txt"
    done
done
python3 "$repo/results/ref/compare_plan.py" --repeated "$out"/rep-* | tee "$out/compare.md" || true
