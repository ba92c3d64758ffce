#!/usr/bin/env bash
# qbench across emulated nodes (nodes.sh: four network namespaces, each with
# its own host name, address and interface) under a real Slurm of four
# slurmd (tests/slurm/cluster.sh) and under mpirun with a hostfile:
#   - mpirun --hostfile and srun -N 4 of allreduce and sendrecv on the cpu
#     transport: one table, every rank's host named, every element checked;
#   - srun -N 4 qbench exchange --transport cpu: the register spread over
#     the nodes, QFT and a mirrored random circuit, every amplitude checked;
#   - probe on each node with NCCL_SOCKET_IFNAME set per node (eth0, and a
#     wrong name on one node): each node judged on its own interfaces;
#   - srun -N 4 qbench check with the cluster profile (the pairwise pass):
#     one row per node, READY;
#   - srun -N 4 qbench check with the rails profile (NCCL_TESTS_SPLIT MOD 2):
#     a row per rail, READY; with one node's link slowed, its rail FAILs and
#     the other passes, and the split all_reduce's per-group tables show it;
#   - one node's link slowed (tc tbf): the pairwise pass names that node, and
#     contrib/slurm/qbench-health run as one step across the nodes drains it
#     alone with a qbench: reason while the others stay idle; the health
#     check alone on that node, as slurmd runs it, measures no pairs and
#     leaves the drain; with the link restored, the health check run across
#     it and a healthy node by mpirun resumes it, and the step across the four
#     passes;
#   - one node's process killed mid-run: srun ends the job within seconds,
#     the killed node named, nothing left running.
# Usage: tests/cluster/run.sh QBENCH [OUT]   (qbench built with --features mpi;
#   OUT, when given, receives the check and exchange records). Needs root, iproute2 and the
#   packages named at the top of tests/slurm/cluster.sh. Exits non-zero on the
#   first failure; always stops the daemons and takes the nodes down.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
nodes=$here/nodes.sh
cluster=$repo/tests/slurm/cluster.sh
health=$repo/contrib/slurm/qbench-health
q=$(realpath "${1:?usage: run.sh QBENCH [OUT]}")
out=${2:-}
dir=$(mktemp -d /tmp/qbench-cluster.XXXXXX)
chmod 0755 "$dir"
cleanup() {
    local rc=$?
    QBENCH_SLURM_NODES=$dir "$cluster" stop "$dir" || rc=1
    "$nodes" down "$dir" || rc=1
    if [ $rc -eq 0 ]; then
        rm -rf "$dir"
        echo "run.sh: PASS in ${SECONDS} s"
    else
        tail -n 20 "$dir"/log/*.log >&2 || true
        echo "run.sh: FAIL (kept $dir)" >&2
    fi
    exit $rc
}
trap cleanup EXIT
fail() { echo "run.sh: FAIL: $*" >&2; exit 1; }
# hosts TEXT: the distinct host names in qbench's "Rank N ... on HOST" lines.
hosts() { printf '%s\n' "$1" | sed -n 's/^#  Rank .* on *\([^ ]*\) device.*/\1/p' | sort -u | tr '\n' ' '; }
# across WHAT TEXT: TEXT, a collective's table, has a rank on each node and no wrong element.
across() {
    [ "$(hosts "$2")" = "qn1 qn2 qn3 qn4 " ] || fail "$1: hosts '$(hosts "$2")'"
    printf '%s\n' "$2" | grep -q '^# Out of bounds values : 0 OK' || fail "$1: wrong data"
}

"$nodes" up "$dir" 4
export QBENCH_SLURM_NODES=$dir
"$cluster" start "$dir"
eval "$("$cluster" env "$dir")"
# mpirun from this (the root) namespace reaches the nodes over the bridge;
# its agent enters a node instead of ssh.
mpi=(mpirun --mca plm_rsh_agent "$dir/rsh" --mca oob_tcp_if_include 10.77.0.0/24
    --mca btl_tcp_if_include 10.77.0.0/24)

for coll in allreduce sendrecv; do
    echo "== mpirun --hostfile -np 4 qbench $coll --transport cpu"
    t=$(timeout 120 "${mpi[@]}" --hostfile "$dir/hostfile" -np 4 "$q" "$coll" --transport cpu -b 64K -e 4M -f 4) || fail "mpirun $coll exited $?"
    printf '%s\n' "$t" | grep -E '^#  Rank|^ +[0-9]+ ' | head -8
    across "mpirun $coll" "$t"
    echo "== srun -N 4 qbench $coll --transport cpu"
    t=$(timeout 120 srun -N 4 --mpi=pmix "$q" "$coll" --transport cpu -b 64K -e 4M -f 4) || fail "srun $coll exited $?"
    across "srun $coll" "$t"
done

echo "== srun -N 4 qbench exchange --transport cpu: the register over the four nodes, circuits checked"
t=$(timeout 180 srun -N 4 --mpi=pmix "$q" exchange --transport cpu --qubits 18 -g 1 --circuit qft,random:40 -n 2 -J "$dir/exchange.json") ||
    fail "exchange exited $?: $t"
printf '%s\n' "$t" | grep -E 'circuit|spreading|wrong' | head -12
python3 - "$dir/exchange.json" <<'PY' || fail "the exchange across the nodes"
import json, sys
r = json.load(open(sys.argv[1]))
hosts = sorted({d["host"] for d in r["devices"]})
assert hosts == ["qn1", "qn2", "qn3", "qn4"], hosts
runs = [c for g in r["registers"] if g["ranks"] == 4 for c in g["circuits"]]
assert {c["circuit"].split(":")[0] for c in runs} == {"qft", "random"}, runs
assert all(c["wrong"] == 0 for c in runs), [(c["circuit"], c["wrong"]) for c in runs]
print(f"exchange: {len(runs)} circuit runs over 4 ranks on {' '.join(hosts)}, 0 wrong")
PY

echo "== probe on each node, NCCL_SOCKET_IFNAME per node (qn2's names an interface it lacks)"
for n in qn1 qn2 qn3 qn4; do
    ifname=eth0
    [ "$n" = qn2 ] && ifname=ib0
    v=$(NCCL_SOCKET_IFNAME=$ifname "$nodes" exec "$dir" "$n" "$q" probe --json) || [ $? -eq 1 ] || fail "probe on $n"
    status=$(printf '%s' "$v" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["host"]["hostname"], next(c["status"] for c in r["checks"] if c["check"] == "nccl.env NCCL_SOCKET_IFNAME"))')
    echo "$n NCCL_SOCKET_IFNAME=$ifname: $status"
    case "$n $status" in
    "qn2 qn2 FAIL" | "qn1 qn1 PASS" | "qn3 qn3 PASS" | "qn4 qn4 PASS") ;;
    *) fail "probe on $n with NCCL_SOCKET_IFNAME=$ifname: $status" ;;
    esac
done

echo "== srun -N 4 qbench check --profile cluster: one row per node, ready"
profile=$here/cluster.toml
t=$(timeout 120 srun -N 4 --mpi=pmix "$q" check --profile "$profile" -J "$dir/check.json") || fail "check exited $?: $t"
printf '%s\n' "$t"
printf '%s\n' "$t" | grep -q '^qbench check: READY' || fail "not ready"
for n in qn1 qn2 qn3 qn4; do printf '%s\n' "$t" | grep -q "| $n " || fail "no row of $n"; done

echo "== srun -N 4 qbench check --profile rails: a row per rail (NCCL_TESTS_SPLIT MOD 2), ready"
rails=$here/rails.toml
t=$(timeout 120 srun -N 4 --mpi=pmix "$q" check --profile "$rails" -J "$dir/check-rails.json") || fail "rails check exited $?: $t"
printf '%s\n' "$t"
printf '%s\n' "$t" | grep -q '^qbench check: READY: 2 PASS' || fail "rails not ready"

echo "== qn3's link slowed to 40 Mbit/s: the pairwise pass names qn3 alone"
"$nodes" slow "$dir" qn3 40mbit
echo "== ... the rail through qn3 named: qn1 with qn3 FAIL, qn2 with qn4 PASS; the split table shows it"
if t=$(timeout 120 srun -N 4 --mpi=pmix "$q" check --profile "$rails" -J "$dir/check-rails-slow.json"); then
    fail "rails ready with qn3 slowed: $t"
fi
printf '%s\n' "$t"
printf '%s\n' "$t" | grep -q 'per rail (rail 0: ranks 0 2 on qn1 qn3) .* FAIL' || fail "rail 0 not failed: $t"
printf '%s\n' "$t" | grep -q 'per rail (rail 1: ranks 1 3 on qn2 qn4) .* PASS' || fail "rail 1 not passed: $t"
printf '%s\n' "$t" | grep -q '^qbench check: NOT READY: 1 FAIL, 0 WARN, 1 PASS in ' || fail "the rails verdict: $t"
t=$(NCCL_TESTS_SPLIT="MOD 2" timeout 120 srun -N 4 --mpi=pmix --export=ALL "$q" allreduce --transport cpu -b 512K -e 512K -n 10 -J "$dir/allreduce-split.json") || fail "split allreduce exited $?: $t"
printf '%s\n' "$t"
printf '%s\n' "$t" | grep -q '^# Group 0: ranks 0 2 on qn1 qn3$' || fail "no table of group 0"
printf '%s\n' "$t" | grep -q '^# Group 1: ranks 1 3 on qn2 qn4$' || fail "no table of group 1"
python3 - "$dir/allreduce-split.json" <<'PY' || fail "the slowed rail is not the slower in the record"
import json, sys
r = json.load(open(sys.argv[1]))
g = {x["group"]: x["out_of_place"]["busbw_gbps"] for x in r["results"][0]["groups"]}
print("busbw per group:", g)
sys.exit(0 if g[0] * 4 < g[1] else 1)
PY
if t=$(timeout 120 srun -N 4 --mpi=pmix "$q" check --profile "$profile" -J "$dir/check-slow.json"); then
    fail "ready with qn3 slowed: $t"
fi
printf '%s\n' "$t"
printf '%s\n' "$t" | grep -q '^qbench check: NOT READY: 1 FAIL, 0 WARN, 4 PASS; drain qn3' || fail "the verdict does not drain qn3 alone"

echo "== qbench-health as one step across the nodes: qn3 drained alone, with qbench's reason"
hc=$("$cluster" hook "$dir" health env QBENCH="$q" QBENCH_PROFILE="$profile" "$health")
timeout 120 srun -N 4 --mpi=pmix "$hc" && fail "the health step passed with qn3 slowed"
"$cluster" wait "$dir" drained 30 qn3
reason=$("$cluster" reason "$dir" qn3)
echo "qn3: $reason"
case "$reason" in "qbench: check FAIL qn3 node pairs"*) ;; *) fail "qn3 drained with '$reason'" ;; esac
"$cluster" wait "$dir" idle 10 qn1
"$cluster" wait "$dir" idle 10 qn2
"$cluster" wait "$dir" idle 10 qn4

echo "== qbench-health alone on qn3, as slurmd runs it: the pairs unmeasured, qn3 stays drained"
lone() { "$nodes" exec "$dir" qn3 env -i SLURMD_NODENAME=qn3 "$hc"; }
lone || fail "the lone health check on qn3 exited $?"
[ "$("$cluster" reason "$dir" qn3)" = "$reason" ] || fail "the lone check changed qn3's drain: $("$cluster" reason "$dir" qn3)"
"$cluster" wait "$dir" drained 5 qn3
"$nodes" fast "$dir" qn3
lone || fail "the lone health check on qn3 exited $?"
"$cluster" wait "$dir" drained 5 qn3

echo "== the link restored: qbench-health across qn3 and qn1 (mpirun, no Slurm job) resumes qn3"
# A drained node takes no job; the pairs that drained it are measured again
# across it and a healthy node from outside Slurm, as an admin would.
timeout 120 "${mpi[@]}" --host qn1,qn3 -np 2 "$hc" || fail "the health check across qn1 and qn3 exited $?"
"$cluster" wait "$dir" idle 10 qn3
[ -z "$("$cluster" reason "$dir" qn3)" ] || fail "qn3 keeps a reason: $("$cluster" reason "$dir" qn3)"
echo "== the same step across the four nodes: ready, nothing drained"
timeout 120 srun -N 4 --mpi=pmix "$hc" || fail "the health step failed with the link restored"
"$cluster" wait "$dir" idle 10

echo "== one node's process killed mid-run: the job ends, the node named"
timeout 120 srun -N 4 --mpi=pmix -K "$q" allreduce --transport cpu -b 16M -e 16M -n 100000 >"$dir/killed.out" 2>"$dir/killed.err" &
job=$!
victim=$("$nodes" proc "$dir" qn2 qbench) || fail "no qbench process on qn2"
sleep 2
t0=$SECONDS
kill -KILL "$victim"
rc=0
wait "$job" || rc=$?
echo "srun exited $rc, $((SECONDS - t0)) s after the kill"
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then fail "srun exited $rc"; fi
[ $((SECONDS - t0)) -le 30 ] || fail "the job took $((SECONDS - t0)) s to end"
grep -q "qn2" "$dir/killed.err" || fail "the killed node is not named: $(cat "$dir/killed.err")"
grep "qn2" "$dir/killed.err" | head -3
sleep 1
[ -z "$(pgrep -x qbench || true)" ] || fail "qbench processes left running: $(pgrep -a -x qbench)"

if [ -n "$out" ]; then
    mkdir -p "$out"
    cp "$dir/check.json" "$out/check-4-nodes.json"
    cp "$dir/check-slow.json" "$out/check-4-nodes-qn3-slowed.json"
    cp "$dir/exchange.json" "$out/exchange-4-nodes.json"
    cp "$dir/check-rails.json" "$out/check-rails-4-nodes.json"
    cp "$dir/check-rails-slow.json" "$out/check-rails-4-nodes-qn3-slowed.json"
    cp "$dir/allreduce-split.json" "$out/allreduce-split-4-nodes-qn3-slowed.json"
fi
