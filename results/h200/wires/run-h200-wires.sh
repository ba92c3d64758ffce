#!/usr/bin/env bash
# The exchange's MPI wires on one H200: two MPI processes share the GPU (one
# rank each), so that mpi, mpi-unpipelined and mpi-cuda-aware move every
# amplitude through MPI as between two nodes' GPUs; nccl, which needs a GPU
# per rank, and rdma / rdma-staged, which need an adapter, say why they cannot
# run. Then compare under mpirun, the wrong partner caught across processes,
# and the wires refused in one line where they cannot run.
#
# Usage (repository root, on the GPU machine, as root):
#   OUT=DIR bash results/h200/wires/run-h200-wires.sh
#     .dev/qbench  the qbench binary, built with --features mpi (and rdma, for
#                  the rdma rows' reasons) on the Rust machine
#     OUT          gets log.txt (everything printed), machine.txt and the JSON
#                  of each run: h200-wires-exchange-28q-double.json,
#                  h200-wires-exchange-26q-single.json, h200-mpi-host-sendrecv.json,
#                  h200-wires-compare-256M.json
# About two minutes; every step runs under `timeout`.
set -u
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
Q=$ROOT/.dev/qbench
: "${OUT:?set OUT to the output folder}"
[ -x "$Q" ] || { echo "run-h200-wires: no executable $Q" >&2; exit 2; }
export NCCL_NVLS_ENABLE=0
# Open MPI runs with the environment's settings. MPI's own host sendrecv
# between two processes of this machine: 3.1 GB/s with
# OMPI_MCA_btl_vader_single_copy_mechanism=none, 4.7 with it unset
# (results/h200/wires/h200-mpi-host-sendrecv-{nocma,cma}.json).
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
exec > >(tee "$OUT/log.txt") 2>&1
step() { echo; echo "=== $(date +%T) +${SECONDS}s $*"; }
want() { echo "rc=$1 (want $2)"; }
MPI="timeout 180 mpirun --allow-run-as-root --oversubscribe -np 2"
WIRES=mpi,mpi-unpipelined,mpi-cuda-aware,nccl,rdma,rdma-staged

step machine
{
    nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv
    nproc; free -g | head -2
    mpirun --allow-run-as-root --version | head -1
    echo "ompi_info: $(ompi_info --parsable --all 2> /dev/null | grep -E 'mpi_built_with_cuda_support:value|^mca:opal:base:param:opal_cuda_support' | tr '\n' ' ')"
    "$Q" --version
} | tee "$OUT/machine.txt"

step "exchange under mpirun -np 2 (both ranks on GPU 0): 28 qubits, double precision, 2 GiB per rank"
$MPI "$Q" exchange -g 1 --transport $WIRES --qubits 28 -n 5 -w 2 \
    -J "$OUT/h200-wires-exchange-28q-double.json"
want $? 0

step "exchange under mpirun -np 2: 26 qubits, single precision, 256 MiB per rank"
$MPI "$Q" exchange -g 1 --transport mpi,mpi-unpipelined,mpi-cuda-aware --qubits 26 --precision single -n 3 -w 1 \
    -J "$OUT/h200-wires-exchange-26q-single.json" | grep -E '^ mpi|^check|^unavailable'
want "${PIPESTATUS[0]}" 0

step "the yardstick: MPI's own sendrecv of host memory between the two processes (the cpu transport)"
$MPI "$Q" sendrecv --transport cpu -b 64M -e 1G -f 4 -n 5 -w 1 -J "$OUT/h200-mpi-host-sendrecv.json" | grep -vE '^#\s*$' | tail -5
want "${PIPESTATUS[0]}" 0

step "compare under mpirun -np 2: 256M per rank over every GPU wire"
$MPI "$Q" compare -g 1 -b 256M -n 5 -w 2 -J "$OUT/h200-wires-compare-256M.json"
want $? 0

step "the wrong partner caught across processes (QBENCH_CORRUPT=partner: each rank with itself)"
$MPI -x QBENCH_CORRUPT=partner "$Q" exchange -g 1 --transport mpi,mpi-unpipelined --qubits 24 -n 1 -w 0 \
    | grep -E '^check'
want "${PIPESTATUS[0]}" 1
$MPI -x QBENCH_CORRUPT=partner "$Q" compare -g 1 -b 64M -n 1 -w 0 | grep -E '^ mpi'
want "${PIPESTATUS[0]}" 1

step "where they cannot run: one line each"
timeout 60 "$Q" exchange -g 1 --transport mpi,mpi-cuda-aware --qubits 24 -n 1 -w 0 | grep '^unavailable'
want "${PIPESTATUS[0]}" 0
$MPI "$Q" exchange -g 1 --transport mpi --memory host --qubits 24 2>&1 | grep -m1 '^qbench: '
want "${PIPESTATUS[0]}" 2
step done
