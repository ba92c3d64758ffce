#!/usr/bin/env bash
# Two emulated nodes with an RDMA adapter each: two guests of tests/rdma-vm
# (qr1, qr2), each its own kernel with soft-RoCE rxe0 on its eth0, wired
# together by a QEMU socket network on 127.0.0.1 (node 1 listens, node 2
# connects), each running tests/cluster/rdma-node.sh; qr1 judges.
#
# Usage: tests/cluster/rdma-pair.sh [-t SECONDS] QBENCH [OUT]
#   QBENCH built with --features mpi,rdma; OUT gets the two check records
#   (check-2-nodes.json, check-2-nodes-qr2-no-adapter.json) and the logs.
# Exit: 0 every check passed; 1 one failed; 3 a package is missing; 4 a
# guest did not finish in time (default 1200 s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
limit=1200
if [ "${1:-}" = -t ]; then limit=$2; shift 2; fi
[ $# -ge 1 ] || { echo "usage: tests/cluster/rdma-pair.sh [-t SECONDS] QBENCH [OUT]" >&2; exit 2; }
qbench=$(readlink -f "$1")
keep=${2:-}
work=$(mktemp -d /tmp/qbench-rdma-pair.XXXXXX)
trap 'rm -rf "$work"' EXIT
# A free port for the socket network, on loopback only.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/qr1" "$work/qr2"
t0=$(date +%s)
"$here/../rdma-vm/run" -p "qr1,1,$port" -t "$limit" -o "$work/qr1" -s "$here/rdma-node.sh" "$qbench" > "$work/qr1.out" 2>&1 &
one=$!
# qr2 connects to the port qr1's QEMU listens on.
for _ in $(seq 100); do
  python3 -c "import socket, sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2> /dev/null && break
  sleep 0.2
done
rc2=0
"$here/../rdma-vm/run" -p "qr2,2,$port" -t "$limit" -o "$work/qr2" -s "$here/rdma-node.sh" "$qbench" > "$work/qr2.out" 2>&1 || rc2=$?
rc1=0
wait "$one" || rc1=$?
cat "$work/qr1.out"
echo "--- qr2 (exit $rc2)"
tail -5 "$work/qr2.out"
echo "rdma-pair: $(($(date +%s) - t0)) s for both guests"
if [ -n "$keep" ]; then
  mkdir -p "$keep"
  cp "$work/qr1/check-2-nodes.json" "$work/qr1/check-2-nodes-qr2-no-adapter.json" "$keep/" 2> /dev/null || true
  cp "$work/qr1.out" "$keep/rdma-pair.log"
fi
[ "$rc1" = 0 ] || exit "$rc1"
exit "$rc2"
