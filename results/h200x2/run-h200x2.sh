#!/usr/bin/env bash
# The runs behind results/h200x2/h200x2-*.json, on the 2xH200 machine.
# Usage: bash results/h200x2/run-h200x2.sh BIN_DIR OUT_DIR [PART...]
#   BIN_DIR holds qbench (no MPI) and qbench-mpi (built with --features mpi);
#   PART is any of probe, collectives, graphs, exchange, sweep, compare, copy,
#   copysmall (default: all).
# Every step runs under `timeout` so that one hang cannot eat the lease.
set -u
BIN=$1 OUT=$2
shift 2
PARTS=${*:-probe collectives graphs exchange sweep compare copy copysmall}
mkdir -p "$OUT"
Q="$BIN/qbench" QM="$BIN/qbench-mpi"
export NCCL_NVLS_ENABLE=0
MPI="mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0"
step() { echo; echo "=== $(date +%T) $*"; }

step "machine"
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv | tee "$OUT/machine.txt"
nvidia-smi topo -m | tee -a "$OUT/machine.txt"
uname -r >> "$OUT/machine.txt"

part_probe() {
step "probe"
$Q probe; echo "rc=$?"
$Q probe --json > "$OUT/h200x2-probe.json"
}

part_collectives() {
step "all_reduce 16M..1G, then PyTorch on the same sizes"
timeout 150 $Q allreduce -b 16M -e 1G -f 2 -g 2 -J "$OUT/h200x2-allreduce-16M-1G.json"; echo "rc=$?"
timeout 150 python3 results/ref/torch_allreduce.py --gpus 2 -b 16M -e 1G -f 2 --out "$OUT/h200x2-torch-allreduce-16M-1G.json" \
    --qbench "$OUT/h200x2-allreduce-16M-1G.json" 2>&1 | grep -v Warning; echo "rc=$?"

step "sendrecv 16M..1G"
timeout 150 $Q sendrecv -b 16M -e 1G -f 2 -g 2 -J "$OUT/h200x2-sendrecv-16M-1G.json"; echo "rc=$?"

step "every collective, -d all -o all, small sizes"
for c in allreduce allgather reducescatter broadcast reduce alltoall sendrecv; do
    timeout 150 $Q $c -b 1K -e 4M -f 8 -g 2 -d all -o all -r -1 -J "$OUT/h200x2-$c-all-types-ops.json" > "$OUT/$c-all.txt"
    echo "$c rc=$? rows=$(grep -vc '^#' "$OUT/$c-all.txt") $(grep 'Out of bounds' "$OUT/$c-all.txt")"
done

step "mpirun -np 2 -g 1 against -g 2 in one process"
timeout 150 $MPI $QM allreduce -g 1 -b 16M -e 1G -f 2 -J "$OUT/h200x2-mpi-np2-allreduce-16M-1G.json"; echo "rc=$?"

step "threads: -t 2 -g 1, and CUDA graphs -G 5"
timeout 150 $Q allreduce -t 2 -g 1 -b 16M -e 256M -f 4; echo "rc=$?"
timeout 60 $Q allreduce -g 2 -b 1K -e 16M -f 16 -G 5 -n 10; echo "rc=$? (want 2: one GPU per thread with -G)"

step "a corrupted element on the GPU"
QBENCH_CORRUPT=1:12345 timeout 60 $Q allreduce -g 2 -b 16M -e 16M; echo "rc=$? (want 1)"

step "bad requests"
timeout 150 $Q allreduce -g 3 -b 1M -e 1M; echo "rc=$? (want 2)"
CUDA_VISIBLE_DEVICES= timeout 60 $Q allreduce -g 1 -b 1M -e 1M; echo "rc=$? (want 3)"
timeout 150 $Q allreduce -g 2 -b 200G -e 200G -n 2 | grep -E "Reducing|^ +[0-9]"; echo "rc=$?"

step "-T: mismatched collectives hang; the timeout aborts the communicator"
timeout 120 mpirun --allow-run-as-root -x NCCL_NVLS_ENABLE=0 -np 1 $QM allreduce -T 5 -b 1M -e 1M : \
    -np 1 $QM allgather -T 5 -b 1M -e 1M 2>&1 | grep -E "qbench|MPI_ABORT|errorcode" | head -5; echo "rc=${PIPESTATUS[0]} (want 4)"

step "NCCL found where cudarc does not look (libnccl.so.2 only), then pip's"
D=/lib/x86_64-linux-gnu H=/root/nccl-hidden
mkdir -p $H && mv $D/libnccl.so $H/ && ldconfig
timeout 150 $Q allreduce -g 2 -b 1M -e 1M --json | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['library'], d['results'][0]['out_of_place']['wrong'])"
mv $D/libnccl.so.2* $H/ && ldconfig
timeout 150 $Q allreduce -g 2 -b 1M -e 1M --json | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['library'], d['results'][0]['out_of_place']['wrong'])"
mv $H/* $D/ && ldconfig
}

part_exchange() {
step "exchange: a first look, 24 qubits, every transport"
timeout 120 $Q exchange --qubits 24 -g 2 --transport all -n 2; echo "rc=$?"

step "exchange: 33 qubits double over 2 GPUs, every transport, both patterns"
timeout 300 $Q exchange --qubits 33 -g 2 --transport all --pattern both -n 3 -J "$OUT/h200x2-exchange-33q-double.json"; echo "rc=$?"

step "exchange under mpirun, one GPU per process"
timeout 120 $MPI $QM exchange --qubits 30 -g 1 --transport nccl,host -n 3; echo "rc=$?"
}

part_sweep() {
step "exchange: a wrong partner and a wrong half are caught on the GPUs"
QBENCH_CORRUPT=partner timeout 60 $Q exchange --qubits 24 -g 2 --transport all -n 1 | grep -E "^check"; echo "rc=${PIPESTATUS[0]} (want 1)"
QBENCH_CORRUPT=half timeout 60 $Q exchange --qubits 24 -g 2 --transport all --pattern swap -n 1 | grep -E "^check"; echo "rc=${PIPESTATUS[0]} (want 1)"

step "exchange: every size 20..33, both precisions, both patterns, one repetition each, checked"
for p in single double; do
    timeout 270 $Q exchange --qubits 20..33 -g 2 --precision $p --pattern both --transport all -n 1 -w 0 \
        -J "$OUT/h200x2-exchange-20-33q-$p.json" | tee "$OUT/exchange-20-33q-$p.txt" \
        | grep --line-buffered -E "^check|^unavailable|^==" | while IFS= read -r l; do echo "$(date +%T) $l"; done
    echo "rc=${PIPESTATUS[0]}"
done
}

part_compare() {
step "compare: 1G per rank over every transport"
timeout 120 $Q compare -b 1G -g 2 -J "$OUT/h200x2-compare-1G.json"; echo "rc=$?"
}

part_graphs() {
step "CUDA graphs: one GPU per thread (-t 2 -g 1) and one per process"
timeout 60 $Q allreduce -t 2 -g 1 -b 1K -e 16M -f 16 -G 5 -n 10; echo "rc=$? (124 = hung)"
timeout 60 $MPI $QM allreduce -g 1 -b 1K -e 16M -f 16 -G 5 -n 10 -J "$OUT/h200x2-mpi-np2-allreduce-graph.json"; echo "rc=$? (124 = hung)"
}

part_copy() {
# Every command has a time limit, so that nothing can hang the lease.
T="timeout 120"
step "copy: every test (host<->GPU, peer, local, zero-copy, latency, gdrcopy)"
timeout 240 $Q copy --test all -J "$OUT/h200x2-copy.json" --csv "$OUT/h200x2-copy.csv" > "$OUT/h200x2-copy.txt"
echo "rc=$? (want 0)"; cat "$OUT/h200x2-copy.txt"

step "copy: the latency table alone, 1 B..16 MiB"
$T $Q copy --test latency -J "$OUT/h200x2-copy-latency.json"; echo "rc=$? (want 0)"

step "copy: PyTorch on the same sizes, and qbench/PyTorch ratios"
$T python3 results/ref/torch_copy.py -b 1M -e 1G -f 4 --out "$OUT/h200x2-torch-copy.json" \
    --qbench "$OUT/h200x2-copy.json" 2>&1 | grep -v Warning; echo "rc=${PIPESTATUS[0]} (want 0)"

step "copy: a corrupted word is detected (QBENCH_CORRUPT=copy)"
QBENCH_CORRUPT=copy:12345 $T $Q copy --test h2d_pinned,d2h_wc,peer_ce_write,local_sm,zero_copy_write,latency_d2h \
    -b 64M -e 64M -n 2 --samples 1 --lat_iters 10 | grep -E "^##|wrong words|Wrong"; echo "rc=${PIPESTATUS[0]} (want 1)"

step "copy: bad requests and no GPU"
$T $Q copy --test warp_drive; echo "rc=$? (want 2)"
CUDA_VISIBLE_DEVICES= $T $Q copy; echo "rc=$? (want 3)"
$T $Q copy --test gdrcopy_bw; echo "rc=$? (want 3: no gdrdrv here)"
$T $Q copy -g 1 --test peer_ce_write,h2d_pinned -b 256M -e 256M; echo "rc=$? (want 0, peer listed as needing two GPUs)"
}

part_copysmall() {
step "copy: 1M..16M host<->GPU with 100 copies per sample, then PyTorch the same way; three rounds"
for r in 1 2 3; do
    echo "-- round $r: qbench, then PyTorch"
    timeout 60 $Q copy --test h2d_pinned,d2h_pinned -g 1 -b 1M -e 16M -f 4 -n 100 -J "$OUT/small-$r.json" | grep -E "^ +[0-9]+ \|"
    timeout 60 python3 results/ref/torch_copy.py -b 1M -e 16M -f 4 -n 100 --out "$OUT/torch-small-$r.json" \
        --qbench "$OUT/small-$r.json" 2>&1 | grep -v Warning
done

step "copy: two processes on one node are refused"
timeout 60 $MPI $QM copy 2>&1 | grep qbench | head -2; echo "rc=${PIPESTATUS[0]} (want 2)"
}

# Run the parts in the order asked; pack what exists after each, so that
# whatever ran comes back even if a later part is cut off.
for part in $PARTS; do
    "part_$part"
    tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")"
done
