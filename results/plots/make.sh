#!/usr/bin/env bash
# The pictures of the committed runs: qbench plot over their records under results/.
# Usage: results/plots/make.sh [QBENCH]   (default: target/release/qbench)
set -euo pipefail
cd "$(dirname "$0")/.."
q=${1:-../target/release/qbench}
p() { "$q" plot "$@"; }
p h200x2/h200x2-allreduce-16M-1G.json h200x2/h200x2-mpi-np2-allreduce-16M-1G.json -o plots/h200x2-allreduce-busbw.png \
  --title "all_reduce on two H200, threads and MPI processes: bus bandwidth"
p h200x2/h200x2-allreduce-16M-1G.json h200/verify/h200-allreduce-16M-1G.json --metric time -o plots/allreduce-time-h200-h200x2.png \
  --title "all_reduce time, two H200 against one"
p h200x2/h200x2-sendrecv-16M-1G.json h200/verify/h200-sendrecv-16M-1G.json --metric time -o plots/sendrecv-time-h200-h200x2.png \
  --title "sendrecv time, two H200 against one (one GPU sends to itself)"
p h200x2/h200x2-copy.json --test peer -o plots/h200x2-copy-peer.png
p h200x2/h200x2-copy.json --test host_device,local,zero_copy -o plots/h200x2-copy-host.png
p h200x2/h200x2-copy-latency.json -o plots/h200x2-copy-latency.png
p h200x2/h200x2-exchange-33q-double.json -o plots/h200x2-exchange-33q.png
p h200x2/h200x2-exchange-20-33q-double.json -o plots/h200x2-exchange-20-33q.png
p h200x2/h200x2-compare-1G.json -o plots/h200x2-compare-1G.png
p h200/check/h200-check-quick.json h200/check/h200-check-standard.json h200/check/h200-check-mpi2-quick.json -o plots/h200-check.png
p rdma-vm/loopback-a.json -o plots/rdma-vm-loopback-a.png \
  --title "qbench rdma --loopback -a in the soft-RoCE VM (emulated: correctness, not speed)"
