#!/usr/bin/env bash
# The plan for GPUs a user does not have, held against measured runs on one
# H200, and the GPU paths the layering change moved (gpu/ below the
# workloads), each with its data checked. Three stages, one or several leases:
#   STAGE=verify   the GPU unit tests, copies (every test, a corrupted word caught), the
#                  collectives, the exchange wires under two processes, OSU
#                  on GPU buffers (where MPI is CUDA-aware) and host buffers, and probe run.
#   STAGE=wires    the exchange part of verify alone.
#   STAGE=source   the one-GPU sweep the plan is made from: 12..31 qubits,
#                  QFT and a random circuit.
#   STAGE=measure  the same circuits measured on NPS (default 2 4) MPI processes
#                  sharing the GPU (quest and mpi wires) at QUBITS (default
#                  26 28 30 31; 31 on two only); with QUEST=yes (the default)
#                  QuEST v4.1 built first and its own QFT at QUEST_QUBITS
#                  (default 30) run on one process and on four.
#   STAGE=ab       two binaries on the same machine, alternately, twice each:
#                  2 processes sharing the GPU at 28 qubits over mpi (OLD=the other
#                  binary), to tell a change of code from a change of machine.
# The plans are made off the GPU from these records (compare_plan.py).
# Usage (repository root, GPU machine): STAGE=… bash results/h200/plan/run-plan-h200.sh BIN_DIR OUT
#   BIN_DIR holds qbench (--features mpi,rdma) and qbench-unit-tests.
set -u
STAGE=${STAGE:?STAGE=verify, wires, source, measure or ab}
BIN=$(readlink -f "$1") OUT=$2 REPO=$(cd "$(dirname "$0")/../../.." && pwd)
Q=$BIN/qbench W=/tmp/plan
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT" "$W"
exec > >(tee "$OUT/log-$STAGE.txt") 2>&1
step() { echo; echo "=== $(date +%T) +${SECONDS}s $*"; }
want() { echo "rc=$1 (want $2)"; }
MPI="mpirun --allow-run-as-root --oversubscribe -x NCCL_NVLS_ENABLE -np"
circuits() { python3 - "$1" << 'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for g in r["registers"]:
    for c in g.get("circuits", []):
        print(f"  {g['qubits']}q x{g['ranks']}: {c['circuit']} {c['schedule']} over {c['transport']}: "
              f"{c['time']['median']:.4f} s, {c['wrong']} wrong")
    print(f"  {g['qubits']}q x{g['ranks']}: {len(g['classes'])} classes, {sum(c['wrong'] for c in g['classes'])} wrong")
PY
}

step "machine"
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv
nproc; free -g | head -2; mpirun --version | head -1

if [ "$STAGE" = verify ]; then
    step "GPU unit tests (the kernels against the host)"
    timeout 240 "$BIN/qbench-unit-tests" --ignored --test-threads 1 2>&1 | tail -4; want "${PIPESTATUS[0]}" 0

    step "copies: every test, every word checked"
    timeout 300 "$Q" copy -t all -J "$OUT/copy-all.json" > "$W/copy-all.txt" 2>&1; want $? 0
    grep -iE "wrong|unavailable|error" "$W/copy-all.txt" | head -12
    for t in h2d_pinned,d2h_wc,local_ce,latency_chase_local; do
        QBENCH_CORRUPT=copy timeout 120 "$Q" copy -t $t > "$W/copy-corrupt.txt" 2>&1; want $? 1
        grep -iE "wrong" "$W/copy-corrupt.txt" | head -3
    done

    step "collectives on the GPU, and a corrupted element caught"
    timeout 120 "$Q" allreduce -b 8 -e 128M -f 8 -g 1 | tail -5; want "${PIPESTATUS[0]}" 0
    timeout 120 "$Q" hypercube -b 1M -e 64M -f 4 -g 1 | tail -4; want "${PIPESTATUS[0]}" 0
    QBENCH_CORRUPT=0:7 timeout 120 "$Q" allreduce -b 1M -e 1M -g 1 | tail -3; want "${PIPESTATUS[0]}" 1
fi

if [ "$STAGE" = verify ] || [ "$STAGE" = wires ]; then
    step "exchange: one GPU, 30 qubits; two processes over every wire MPI drives, a corrupted half caught"
    timeout 200 "$Q" exchange --qubits 30 -g 1 -n 2 -J "$W/ex-1gpu-30.json" > "$W/ex-1gpu-30.txt"; want $? 0
    circuits "$W/ex-1gpu-30.json"
    timeout 300 $MPI 2 "$Q" exchange --qubits 26 -g 1 --transport quest,nccl,mpi,host --circuit qft,random:60 -n 2 \
        -J "$OUT/wires-mpi2-26q.json" > "$OUT/wires-mpi2-26q.txt" 2>&1; want $? 0
    tail -25 "$OUT/wires-mpi2-26q.txt"
    circuits "$OUT/wires-mpi2-26q.json"
    QBENCH_CORRUPT=half timeout 120 $MPI 2 -x QBENCH_CORRUPT "$Q" exchange --qubits 22 -g 1 --transport quest,mpi --circuit qft -n 1 -w 0 > "$W/corrupt.txt" 2>&1
    want $? 1; grep -E "wrong" "$W/corrupt.txt" | head -4
fi

if [ "$STAGE" = verify ]; then
    step "OSU on GPU buffers (MPI that is not CUDA-aware refuses them: exit 3), and on host buffers"
    D=3; ompi_info --parsable --all 2> /dev/null | grep -q "mpi_built_with_cuda_support:value:true" && D=0
    timeout 120 $MPI 2 "$Q" osu_bw -d cuda D D -c -m 1:16777216 2>&1 | tail -4; want "${PIPESTATUS[0]}" $D
    timeout 120 $MPI 2 "$Q" osu_latency -d cuda D D -c -m 1:65536 2>&1 | tail -3; want "${PIPESTATUS[0]}" $D
    timeout 120 $MPI 4 "$Q" osu_allreduce -d cuda -c -m 4:1048576 2>&1 | tail -3; want "${PIPESTATUS[0]}" $D
    timeout 120 $MPI 2 "$Q" osu_bw -c -m 1:16777216 | tail -4; want "${PIPESTATUS[0]}" 0
    timeout 120 $MPI 4 "$Q" osu_allreduce -c -m 4:1048576 | tail -3; want "${PIPESTATUS[0]}" 0
    QBENCH_CORRUPT=1:3 timeout 120 $MPI 2 -x QBENCH_CORRUPT "$Q" osu_bw -c -m 1:65536 2>&1 | tail -2; want "${PIPESTATUS[0]}" 1

    step "probe"
    timeout 60 "$Q" probe --json > "$OUT/probe.json"; want $? "0 or 1"
fi

if [ "$STAGE" = source ]; then
    step "the plan's source: one GPU, 12..31 qubits, QFT and a random circuit"
    timeout 400 "$Q" exchange --qubits 12..31 -g 1 --circuit qft,random:60 --schedule quest --rounds 3 -n 3 -w 1 \
        -J "$OUT/one-gpu-12-31q.json" > "$W/one.txt"; want $? 0
    tail -6 "$W/one.txt"
fi

if [ "$STAGE" = ab ]; then
    OLD=$(readlink -f "${OLD:?OLD=the other qbench binary}")
    for i in 1 2; do
        for b in old new; do
            bin=$Q; [ $b = old ] && bin=$OLD
            step "$b binary, round $i: 2 processes sharing the GPU, 28 qubits"
            timeout 200 $MPI 2 "$bin" exchange --qubits 28 -g 1 --transport mpi --circuit qft,random:60 --schedule quest \
                --pattern gate --rounds 3 -n 1 -w 1 -J "$OUT/ab-$b-$i.json" > "$W/ab-$b-$i.txt"; want $? 0
            circuits "$OUT/ab-$b-$i.json"
        done
    done
fi

if [ "$STAGE" = measure ]; then
    QUEST=${QUEST:-yes}
    if [ "$QUEST" = yes ]; then
        step "QuEST: building first, nothing else running"
        OUT=$W/quest STAGE=build bash "$REPO/results/h200/quest/run-quest-h200.sh" > "$W/quest-build.out" 2>&1; want $? 0
        step "QuEST v4.1: QFT(${QUEST_QUBITS:-30}) on one process, and on 4 sharing the GPU"
        (cd "$REPO" && OUT=$W/quest STAGE=run QUBITS="${QUEST_QUBITS:-30}" OPS=qft DIST_QUBITS="${QUEST_QUBITS:-30}" DIST_OPS=qft \
            NP=4 ROUNDS=3 DEADLINE=${QUEST_DEADLINE:-300} \
            bash results/h200/quest/run-quest-h200.sh); want $? 0
        cp "$W"/quest/*.jsonl "$OUT"/ 2> /dev/null
    fi
    # A run's gate classes are the plan's source where it is one (-w 1: a
    # class's one timed exchange after a warm one; without it the first
    # exchange's setup was read as latency); --pattern gate times half of them.
    for np in ${NPS:-2 4}; do
        for q in ${QUBITS:-26 28 30 31}; do
            [ "$np" = 4 ] && [ "$q" = 31 ] && continue
            step "measured: $np processes sharing the GPU, $q qubits"
            timeout 400 $MPI "$np" "$Q" exchange --qubits "$q" -g 1 --transport quest,mpi --circuit qft,random:60 --schedule quest \
                --pattern gate --rounds 3 -n 1 -w 1 -J "$OUT/mpi$np-${q}q.json" > "$W/mpi$np-$q.txt"; want $? 0
            circuits "$OUT/mpi$np-${q}q.json"
        done
    done
    ls "$OUT"
fi
