#!/usr/bin/env bash
# sendrecv at 256M-512M and all_reduce / alltoall at 32M on one GPU:
# nccl-tests against qbench with the sweep's largest size (and so both
# tools' buffers) changed, in turn, two rounds; then what NCCL_DEBUG=INFO
# says of each tool's communicator. It asks whether the 2-3% between them
# at these sizes in run-smallmsg-h200.sh's runs is qbench's or the
# buffers' placement.
#
# Usage (from the repository root, on the GPU machine, .ref/nccl-tests
# staged by results/ref/stage-nccl-tests.sh):
#   bash results/h200/smallmsg/run-sendrecv-placement-h200.sh [BIN]   (BIN: .dev/qbench)
set -u
BIN=${1:-.dev/qbench}
export NCCL_NVLS_ENABLE=0
S=/tmp/nt; rm -rf $S; cp -r .ref/nccl-tests $S
make -C $S/src -j16 MPI=0 NCCL_HOME=/usr CUDA_HOME=/usr/local/cuda NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR=$S/build $S/build/sendrecv_perf $S/build/all_reduce_perf $S/build/alltoall_perf > /tmp/ntbuild.log 2>&1 || { tail /tmp/ntbuild.log; exit 3; }
NT="env LD_LIBRARY_PATH=/usr/local/cuda/lib64 $S/build"
row() { grep -E "^ +$1 " | awk '{print $6}' | head -1; }
for r in 1 2; do
  for e in 1G 512M; do
    a=$($NT/sendrecv_perf -b 512M -e $e -f 2 -g 1 -n 200 -w 20 | row 536870912)
    b=$("$BIN" sendrecv -b 512M -e $e -f 2 -g 1 -n 200 -w 20 | row 536870912)
    echo "r$r sendrecv 512M alloc $e: nccl-tests $a qbench $b"
  done
  a=$($NT/sendrecv_perf -b 256M -e 256M -g 1 -n 200 -w 20 | row 268435456)
  b=$("$BIN" sendrecv -b 256M -e 256M -g 1 -n 200 -w 20 | row 268435456)
  echo "r$r sendrecv 256M alloc 256M: nccl-tests $a qbench $b"
  for c in all_reduce:allreduce alltoall:alltoall; do
    a=$($NT/${c%%:*}_perf -b 32M -e 32M -g 1 -n 1000 -w 100 | row 33554432)
    b=$("$BIN" ${c##*:} -b 32M -e 32M -g 1 -n 1000 -w 100 | row 33554432)
    echo "r$r ${c%%:*} 32M alloc 32M: nccl-tests $a qbench $b"
  done
done
echo "--- NCCL_DEBUG=INFO channels, sendrecv 512M"
NCCL_DEBUG=INFO $NT/sendrecv_perf -b 512M -e 512M -g 1 -n 5 -w 1 2>&1 | grep -iE "channel|proto|algo|NCCL INFO .*(P2P|comm )" | head -12
echo "--- qbench"
NCCL_DEBUG=INFO "$BIN" sendrecv -b 512M -e 512M -g 1 -n 5 -w 1 2>&1 | grep -iE "channel|proto|algo|NCCL INFO .*(P2P|comm )" | head -12
echo "--- env"
NCCL_DEBUG=INFO "$BIN" sendrecv -b 512M -e 512M -g 1 -n 5 -w 1 2>&1 | grep -iE "NCCL_|env" | head -12
