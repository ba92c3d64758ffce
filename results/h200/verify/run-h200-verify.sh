#!/usr/bin/env bash
# The pipeline on one H200: every command's GPU path with its data checked,
# the GPU unit tests (pattern.cu and copy.cu against the host), faults caught,
# an interrupted run and the clean run after it, bad input, and the whole
# register on one GPU.
#
# Usage (repository root, GPU machine): bash results/h200/verify/run-h200-verify.sh BIN_DIR OUT
#   BIN_DIR holds qbench and qbench-unit-tests (cargo test --release --no-run's
#   unit-test binary of src/lib.rs), both built on the Rust machine.
#   OUT gets log.txt and verify.tgz (the JSON and tables of each run).
set -u
Q=$(readlink -f "$1/qbench") T=$(readlink -f "$1/qbench-unit-tests") OUT=$2
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
step() { echo; echo "=== $(date +%T) +${SECONDS}s $*"; }
want() { local rc=$1 w=$2; echo "rc=$rc (want $w)"; }

step machine
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv
nproc; free -g | head -2

step "GPU unit tests: pattern.cu and copy.cu against the host, every type, op and collective"
timeout 300 "$T" --ignored --test-threads 1 2>&1 | tail -6; want "${PIPESTATUS[0]}" 0

step "allreduce and sendrecv 16M..1G on one GPU"
for c in allreduce sendrecv; do
    timeout 120 "$Q" $c -b 16M -e 1G -f 2 -g 1 -J "$OUT/h200-$c-16M-1G.json" | tail -10; want "${PIPESTATUS[0]}" 0
done

step "every collective, type and op, 1K..4M"
for c in allreduce allgather reducescatter broadcast reduce alltoall sendrecv; do
    timeout 120 "$Q" $c -b 1K -e 4M -f 8 -g 1 -d all -o all -r -1 > "$OUT/$c-all.txt"; rc=$?
    echo "$c: rc=$rc, rows $(grep -vc '^#' "$OUT/$c-all.txt"), wrong cells $(awk '!/^#/ && ($9 != "0" || ($13 != "0" && $13 != "N/A"))' "$OUT/$c-all.txt" | wc -l)"
done

step "copy: host_device, local, latency"
timeout 240 "$Q" copy --test host_device,local,latency -J "$OUT/h200-copy.json" > "$OUT/copy.txt"; want $? 0
grep -E "^    1073741824|^## |^#  wrong|^ +1 \|" "$OUT/copy.txt" | head -60

step "exchange: 30 qubits on one GPU, single and double"
for p in double single; do
    timeout 120 "$Q" exchange --qubits 30 -g 1 --precision $p -J "$OUT/h200-exchange-30q-$p.json" | tail -22; want "${PIPESTATUS[0]}" 0
done

step "exchange: the whole register of 33 qubits (double) and 34 (single) on one GPU"
timeout 240 "$Q" exchange --qubits 33 -g 1 --precision double -J "$OUT/h200-exchange-33q-double.json" | tail -16; want "${PIPESTATUS[0]}" 0
timeout 240 "$Q" exchange --qubits 34 -g 1 --precision single -J "$OUT/h200-exchange-34q-single.json" | tail -16; want "${PIPESTATUS[0]}" 0

step "faults are caught on the GPU"
QBENCH_CORRUPT=0:5 timeout 60 "$Q" allreduce -b 1M -e 1M -g 1 | tail -4; want "${PIPESTATUS[0]}" 1
QBENCH_CORRUPT=copy:3 timeout 60 "$Q" copy --test local_ce,latency_h2d -b 16M -e 16M --lat_iters 10 | grep -E "wrong|Wrong"; want "${PIPESTATUS[0]}" 1
QBENCH_CORRUPT=half timeout 60 "$Q" exchange --qubits 24 -g 1 > /dev/null; want $? 2

step "Ctrl-C mid-sweep: exit 130, partial JSON; the next run starts clean"
timeout 60 "$Q" allreduce -b 1M -e 1G -f 2 -g 1 -N 0 -J "$OUT/interrupted.json" > "$OUT/interrupted.txt" &
P=$!; sleep 8; kill -INT $P; wait $P; want $? 130
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('complete', d['complete'], '| stopped:', d.get('stopped'), '| rows', len(d['results']))" "$OUT/interrupted.json"
timeout 60 "$Q" allreduce -b 1M -e 64M -f 4 -g 1 | tail -8; want "${PIPESTATUS[0]}" 0
timeout 60 "$Q" exchange --qubits 28 -g 1 -J "$OUT/after-interrupt.json" | tail -3; want "${PIPESTATUS[0]}" 0

step "bad input: one line, exit 2, at once"
for a in "allreduce -g 100000 --transport cpu -b 1M -e 1M" "allreduce -J /nonexistent/x.json" "exchange --qubits 20 --chunk 0" "exchange --qubits 40 -g 1" "allreduce -g 3"; do
    s=$SECONDS; timeout 30 "$Q" $a > /dev/null; echo "$a -> rc=$? in $((SECONDS - s)) s"
done
step done
tar -C "$OUT" -czf "$OUT/../verify.tgz" --exclude=log.txt . && mv "$OUT/../verify.tgz" "$OUT/" && find "$OUT" -mindepth 1 ! -name log.txt ! -name verify.tgz -delete
