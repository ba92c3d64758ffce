#!/bin/sh
# Writes the rdma fixtures: the text each run printed and its -J record,
# restructured by v2.py into the schema of now. Made with the qbench of
# commit 087cb64 (before the rdma record had a header and the table was
# the pipeline's), in the soft-RoCE guest where rxe0 and rxe1 are up:
#   tests/rdma-vm/run -s tests/golden/rdma/make.sh -o tests/golden/rdma QBENCH_BINARY
# (built with --features mpi,rdma). The guest runs it with the binary and
# the results folder, this one, as arguments.
set -eu
Q=/tmp/qbench.bin
cp "$1" $Q && chmod +x $Q
cd "$2"
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader OMPI_MCA_plm_rsh_agent=false
# run NAME EXIT ARGS...: one run, its stdout and record, the exit it must have.
run() {
  name=$1 want=$2; shift 2
  rc=0; "$@" -J "$name.v1.json" > "$name.txt" || rc=$?
  [ "$rc" = "$want" ] || { echo "$name: exit $rc, expected $want" >&2; exit 1; }
  python3 v2.py "$name.v1.json" > "$name.json" && rm "$name.v1.json"
}
run loopback-all 0 $Q rdma --loopback -x 0 --test all -n 20
run loopback-both-ways 0 $Q rdma --loopback -d rxe1,rxe0 -x 0 --test read_bw,send_bw -b -q 2 -t 16 -n 20 --report_gbits
run write-lat-every-size 0 $Q rdma --loopback -x 0 --test write_lat -a -n 5
export QBENCH_CORRUPT=rdma:1
run corrupted 1 $Q rdma --loopback -x 0 --test write_bw,read_bw,send_lat -s 4096 -n 20
unset QBENCH_CORRUPT
$Q rdma --server -d rxe1 -x 0 --test write_bw,send_lat -n 20 -J server.v1.json > server.txt &
srv=$!
sleep 2
run client 0 $Q rdma -d rxe0 -x 0 --test write_bw,send_lat -n 20 --report_gbits 127.0.0.1
wait $srv
python3 v2.py server.v1.json > server.json && rm server.v1.json
run mpi-pair 0 mpirun --allow-run-as-root --oversubscribe -np 2 $Q rdma -x 0 --test read_bw,write_lat -n 20
