#!/bin/sh
# What each guest of tests/cluster/rdma-pair.sh runs (tests/rdma-vm/run -p):
# two nodes, qr1 and qr2, each its own kernel with one soft-RoCE adapter
# (rxe0) on its own eth0. qr2 serves commands (a small rsh over busybox nc,
# which Open MPI uses as its plm_rsh_agent where a cluster would ssh) until
# qr1 says done; qr1 runs the test and judges it:
#   probe on each node with NCCL_IB_HCA set per node (rxe0 on qr1, a wrong
#   mlx5_0 on qr2); qbench rdma server on qr2 and client on qr1 by host name;
#   mpirun --host qr1,qr2 of qbench rdma, compare and exchange --transport
#   rdma,cpu; check across the nodes (tests/cluster/rdma.toml); then qr2's
#   adapter deleted (rdma link delete): check names qr2, and qbench-health
#   across both drains qr2 alone with the RDMA fact's reason.
# Usage: rdma-node.sh QBENCH OUTDIR (RDMA_VM_NODE and RDMA_VM_INDEX set by run)
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/rdma-vm/lib.sh
. "$HERE/../rdma-vm/lib.sh"
Q=/tmp/qbench.bin
cp "$1" $Q && chmod +x $Q || exit 1
OUT=$2
T="timeout 300"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,tcp \
  OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0 OMPI_MCA_plm_rsh_agent=/tmp/rsh OMPI_MCA_plm_rsh_no_tree_spawn=1 \
  OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1

# Slurm's scontrol and sinfo as qbench-health calls them, first on its PATH:
# a drain is written to OUT/scontrol.log and its reason kept for sinfo.
mount -t tmpfs tmpfs /usr/local/bin
cat > /usr/local/bin/scontrol << EOF
#!/bin/sh
echo "\$*" >> $OUT/scontrol.log
case "\$*" in *state=drain*) echo "\$*" | sed 's/.*reason=//' > /tmp/reason ;; *state=resume*) rm -f /tmp/reason ;; esac
EOF
printf '#!/bin/sh\ncat /tmp/reason 2>/dev/null\n' > /usr/local/bin/sinfo
chmod +x /usr/local/bin/scontrol /usr/local/bin/sinfo

# Open MPI's rsh agent: the command line to the node's port 2222. Both
# nodes have it, as the orted Open MPI starts on qr2 is given it too.
# shellcheck disable=SC2016 # the script's own variables
printf '#!/bin/sh\nhost=$1\nshift\nprintf "%%s\\n" "$*" | exec busybox nc "$host" 2222\n' > /tmp/rsh
chmod +x /tmp/rsh

if [ "$RDMA_VM_INDEX" = 2 ]; then
  # A command line per connection, run by sh with this script's environment.
  # shellcheck disable=SC2016 # the script's own variables
  printf '#!/bin/sh\nread -r line\nexec sh -c "$line" 2>&1\n' > /tmp/rshd
  chmod +x /tmp/rshd
  busybox nc -ll -p 2222 -e /tmp/rshd &
  echo "qr2: serving commands on port 2222 until qr1 is done"
  i=0
  while [ ! -e /tmp/done ] && [ $i -lt 1500 ]; do sleep 0.4; i=$((i + 1)); done
  [ -e /tmp/done ]
  exit
fi

# on2 CMD: CMD run on qr2, its output here (its exit code is not carried).
on2() { printf '%s\n' "$*" | busybox nc qr2 2222; }
i=0
until [ "$(on2 echo up 2> /dev/null)" = up ] || [ $i -ge 150 ]; do sleep 1; i=$((i + 1)); done
[ "$(on2 echo up)" = up ] || { fail "qr2 does not answer on port 2222"; exit 1; }
on2 "cp $1 $Q && chmod +x $Q"

section "probe on each node, NCCL_IB_HCA per node"
NCCL_IB_HCA=rxe0 NCCL_SOCKET_IFNAME=eth0 $T $Q probe --json > "$OUT/probe-qr1.json" 2> /dev/null
on2 "NCCL_IB_HCA=mlx5_0 NCCL_SOCKET_IFNAME=eth0 $T $Q probe --json 2> /dev/null" > "$OUT/probe-qr2.json"
for n in "qr1 PASS" "qr2 FAIL"; do
  node=${n% *} want=${n#* }
  if out=$(python3 - "$OUT/probe-$node.json" "$node" "$want" << 'PY'
import json, sys
probe, node, want = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
devices = [d["name"] for d in probe["facts"]["rdma"]["devices"]]
hca = [c for c in probe["checks"] if "NCCL_IB_HCA" in c["check"] + c["found"]]
ifname = [c for c in probe["checks"] if "NCCL_SOCKET_IFNAME" in c["check"] + c["found"]]
said = f"{node}: adapters {devices}, NCCL_IB_HCA {[(c['status'], c['found']) for c in hca]}, " \
       f"NCCL_SOCKET_IFNAME {[c['status'] for c in ifname]}"
print(said)
ok = devices == ["rxe0"] and len(hca) == 1 and hca[0]["status"] == want and [c["status"] for c in ifname] == ["PASS"]
sys.exit(0 if ok else 1)
PY
  ); then pass "probe judges $node's own adapter: $out"; else fail "probe on $node: $out"; fi
done

# across NAME LOG JSON: the rdma run that wrote LOG and JSON exited 0 ($rc),
# its record has every byte right, and its link is qr1's rxe0 to qr2's.
across() {
  grep -E "^ (local|remote) |^ [0-9]" "$2"
  check "$1" 0 "$2"
  clean "$1: the record" "$3"
  if grep -q "local  : rxe0 port 1 on qr1" "$2" && grep -q "remote : rxe0 port 1 on qr2" "$2"; then
    pass "$1: the link is qr1's rxe0 to qr2's rxe0"
  else
    fail "$1: the table does not name qr1's and qr2's adapters"
  fi
}

section "qbench rdma: the server on qr2, the client on qr1, by host name"
on2 "$T $Q rdma --server -d rxe0 -x 0 --test write_bw,read_lat -s 65536 -n 50 -p 18515 -J /mnt/server.json > /mnt/server.log 2>&1 &"
# The server may not listen yet: the client tries again, at most 20 times.
i=0
until $T $Q rdma -d rxe0 -x 0 --test write_bw,read_lat -s 65536 -n 50 -p 18515 -J "$OUT/client.json" qr2 > "$OUT/client.log" 2>&1
  rc=$?
  [ "$rc" = 0 ] || [ $i -ge 20 ]; do sleep 1; i=$((i + 1)); done
across "client on qr1 to the server on qr2" "$OUT/client.log" "$OUT/client.json"

M="$T mpirun --host qr1,qr2 -np 2"
section "mpirun --host qr1,qr2: qbench rdma between the nodes' adapters"
$M $Q rdma -x 0 --test write_bw,read_bw -s 65536 -n 50 -J "$OUT/mpi-rdma.json" > "$OUT/mpi-rdma.log" 2>&1
rc=$?
across "mpirun rdma, rank 0 on qr1 with rank 1 on qr2" "$OUT/mpi-rdma.log" "$OUT/mpi-rdma.json"

section "mpirun --host qr1,qr2: compare and the exchange over rdma and cpu, host memory"
$M $Q compare --memory host -b 256K -n 2 -w 1 > "$OUT/compare.log" 2>&1
rc=$?
grep -E '^ (rdma|cpu) ' "$OUT/compare.log"
check "compare --memory host across the nodes" 0 "$OUT/compare.log"
for wire in rdma cpu; do
  row=$(awk -F'|' -v w=$wire '{ gsub(/ /, "", $1); gsub(/ /, "", $4) } $1 == w { print $4 }' "$OUT/compare.log")
  if [ "$row" = 0 ]; then pass "compare: the $wire row, 0 wrong"; else fail "compare: the $wire row has wrong '$row'"; fi
done
$M $Q exchange --transport rdma,cpu --memory host --qubits 16 --circuit qft -n 2 -w 1 -J "$OUT/exchange.json" > "$OUT/exchange.log" 2>&1
rc=$?
check "exchange --transport rdma,cpu across the nodes" 0 "$OUT/exchange.log"
for wire in rdma cpu; do
  line=$(grep "^check: $wire: " "$OUT/exchange.log")
  case "$line" in
    "check: $wire: "[1-9]*" amplitudes, 0 wrong") pass "exchange: $line" ;;
    *) fail "exchange: '$line'" ;;
  esac
done

section "check across the nodes (tests/cluster/rdma.toml)"
P=$HERE/rdma.toml
# judged NAME JSON WANT: the check record's rows: WANT is READY, or the node
# whose rows alone FAIL.
judged() {
  if out=$(python3 - "$2" "$3" << 'PY'
import json, sys
r, want = json.load(open(sys.argv[1])), sys.argv[2]
rows = r["rows"]
for x in rows:
    print(f"  {x['step']:<36} {x.get('node') or '':<5} {x.get('place') or '':<12} {x['status']:<5} {x['found']}")
nodes = {x.get("node") for x in rows if x.get("node") not in (None, "", "all")}
failed = {x.get("node") for x in rows if x["status"] == "FAIL"}
ok = nodes == {"qr1", "qr2"} and (not failed if want == "READY" else failed == {want})
print(f"nodes {sorted(nodes)}, failing {sorted(failed)}")
sys.exit(0 if ok else 1)
PY
  ); then pass "$1: $(echo "$out" | tail -1)"; else fail "$1"; fi
  echo "$out" | sed '$d'
}
$M $Q check --profile "$P" -J "$OUT/check-2-nodes.json" > "$OUT/check.log" 2>&1
rc=$?
tail -3 "$OUT/check.log"
check "check across qr1 and qr2: READY" 0 "$OUT/check.log"
judged "every row PASS, on both nodes" "$OUT/check-2-nodes.json" READY

section "qr2's adapter deleted: check names qr2, qbench-health drains it alone"
on2 "rdma link delete rxe0; rdma link"
$M $Q check --profile "$P" -J "$OUT/check-2-nodes-qr2-no-adapter.json" > "$OUT/check-gone.log" 2>&1
rc=$?
tail -3 "$OUT/check-gone.log"
check "check with qr2's adapter gone: NOT READY, missing hardware (exit 3)" 3 "$OUT/check-gone.log"
judged "only qr2's rows FAIL" "$OUT/check-2-nodes-qr2-no-adapter.json" qr2
if grep -q "drain qr2" "$OUT/check-gone.log" && ! grep -q "drain qr1" "$OUT/check-gone.log"; then
  pass "the verdict drains qr2 alone: $(grep 'drain' "$OUT/check-gone.log" | tail -1)"
else
  fail "the verdict does not drain qr2 alone"
fi
$M -x QBENCH=$Q -x QBENCH_PROFILE="$P" -x QBENCH_TIMEOUT=250 sh "$HERE/../../contrib/slurm/qbench-health" > "$OUT/health.log" 2>&1
rc=$?
cat "$OUT/health.log"
check "qbench-health across qr1 and qr2: qr2's exit 1" 1 "$OUT/health.log"
told=$(on2 "cat /mnt/scontrol.log 2> /dev/null")
mine=$(cat "$OUT/scontrol.log" 2> /dev/null)
echo "qr2's scontrol: $told"
if echo "$told" | grep -q "^update nodename=qr2 state=drain reason=qbench: check FAIL qr2 " && echo "$told" | grep -qi "rdma"; then
  pass "qbench-health drains qr2 with the RDMA fact's reason"
else
  fail "qbench-health on qr2: '$told'"
fi
if [ -z "$mine" ]; then pass "qr1 is not drained"; else fail "qr1 was told: $mine"; fi

on2 "touch /tmp/done"
echo
echo "rdma pair: $passed passed, $failed failed"
[ "$failed" = 0 ]
