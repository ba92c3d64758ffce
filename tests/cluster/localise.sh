#!/usr/bin/env bash
# The pairwise pass's localisation across eight emulated nodes in four racks
# of two (nodes.sh; racks r1 = qn1 qn2 ... r4 = qn7 qn8, localise.toml), under
# mpirun with a hostfile:
#   - all links whole (each at 400 Mbit/s, tc htb on both ends): READY, the
#     pass's row PASS, nothing named;
#   - the same with every pair measured (--pairs all): 7 rounds of 28 pairs;
#   - qn6's port slowed to 40 Mbit/s and rack r2's traffic to other racks
#     slowed (qn3's and qn4's links: what leaves or enters the rack at
#     40 Mbit/s, what stays in it at 400):
#     qn6 FAILs as "network of qn6", the pass's row WARNs "uplink of rack
#     r2", every other node PASSes; contrib/slurm/qbench-health run on the
#     eight nodes as one job (Slurm's scontrol a recorder in each node)
#     drains qn6 alone, with the evidence in its reason;
#   - qn8's qbench stopped (SIGSTOP) in the middle of the pass: its partners
#     wait out the pair's limit and go on, and the job ends within the pass's
#     bound with the line of each process that met it naming qn8.
# Usage: tests/cluster/localise.sh QBENCH [OUT]   (qbench built with --features
#   mpi; OUT receives the check records and their pictures). Needs root,
#   iproute2 (tc with htb and tbf) and Open MPI. Always takes the nodes down.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
nodes=$here/nodes.sh
health=$repo/contrib/slurm/qbench-health
profile=$here/localise.toml
q=$(realpath "${1:?usage: localise.sh QBENCH [OUT]}")
out=${2:-}
dir=$(mktemp -d /tmp/qbench-localise.XXXXXX)
chmod 0755 "$dir"
cleanup() {
    local rc=$?
    "$nodes" down "$dir" || rc=1
    if [ $rc -eq 0 ]; then
        rm -rf "$dir"
        echo "localise.sh: PASS in ${SECONDS} s"
    else
        echo "localise.sh: FAIL (kept $dir)" >&2
    fi
    exit $rc
}
trap cleanup EXIT
fail() { echo "localise.sh: FAIL: $*" >&2; exit 1; }

"$nodes" up "$dir" 8
mpi=(mpirun --allow-run-as-root --mca plm_rsh_agent "$dir/rsh" --mca oob_tcp_if_include 10.77.0.0/24
    --mca btl self,tcp --mca btl_tcp_if_include 10.77.0.0/24 --hostfile "$dir/hostfile" -np 8)

# shape NODE WITHIN ELSEWHERE: NODE's traffic to and from its rack mate
# (localise.toml's racks of two: qn1 qn2, qn3 qn4, ...) at WITHIN, to and
# from every other node at ELSEWHERE, both ways (tc htb on both ends of its
# link). Every link is shaped, to 400 Mbit/s when whole, so that a pair's
# time is the network's, not that of eight processes taking turns on the cores.
shape() {
    local node=$1 n=${1#qn} pid mate ip
    mate=qn$((n % 2 ? n + 1 : n - 1))
    ip=$(awk -v n="$mate" '$1 == n { print $2 }' "$dir/nodes")
    pid=$("$nodes" pid "$dir" "$node")
    for side in "nsenter -t $pid -n tc@eth0@dst" "tc@qb-$node@src"; do
        IFS=@ read -r tc dev dir_ <<<"$side"
        $tc qdisc del dev "$dev" root 2>/dev/null || true
        $tc qdisc add dev "$dev" root handle 1: htb default 20 r2q 1000
        $tc class add dev "$dev" parent 1: classid 1:10 htb rate "$2" burst 64kb
        $tc class add dev "$dev" parent 1: classid 1:20 htb rate "$3" burst 64kb
        $tc filter add dev "$dev" parent 1: protocol ip u32 match ip "$dir_" "$ip/32" flowid 1:10
    done
}
whole() { for i in $(seq 8); do shape "qn$i" 400mbit 400mbit; done; }
whole

# check NAME [ARG...]: qbench check across the eight nodes; the record in DIR/NAME.json.
check() {
    local rc=0 name=$1
    shift
    timeout 300 "${mpi[@]}" "$q" check --profile "$profile" -J "$dir/$name.json" "$@" >"$dir/$name.out" 2>"$dir/$name.err" || rc=$?
    cat "$dir/$name.out"
    echo "(exit $rc)"
}

# rows NAME EXPECT: the record's pairs rows held against EXPECT, lines of
# "node status words-its-fix-starts-with" ("-" for no words), in any order.
rows() {
    python3 - "$dir/$1.json" "$2" <<'PY'
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["kind"] == "pairs"]
want = {l.split(" ", 2)[0]: l.split(" ", 2)[1:] for l in sys.argv[2].strip().splitlines()}
got = {r["node"]: r for r in rows}
assert sorted(got) == sorted(want), (sorted(got), sorted(want))
for node, (status, words) in want.items():
    r = got[node]
    assert r["status"] == status, (node, r["status"], r["fix"])
    assert words == "-" or r["fix"].startswith(words), (node, r["fix"])
    print(f"{node}: {r['status']} {r['fix'][:150]}")
pass_ = got["all"]["pairs"]
print(f"the pass: {pass_['rounds']} rounds, {len(pass_['pairs'])} pairs, racks {pass_['racks']}")
PY
}

echo "== all links whole: ready, nothing named"
check whole
grep -q '^qbench check: READY' "$dir/whole.out" || fail "not ready with every link whole"
rows whole "$(printf 'all PASS -\n'; for i in $(seq 8); do echo "qn$i PASS -"; done)" || fail "the rows with every link whole"

echo "== every pair (--pairs all), links whole: 7 rounds, 28 pairs, nothing named"
check every --pairs all
grep -q '^qbench check: READY' "$dir/every.out" || fail "not ready with every pair measured"
rows every "$(printf 'all PASS -\n'; for i in $(seq 8); do echo "qn$i PASS -"; done)" | tee "$dir/every.rows" || fail "the rows of every pair"
grep -q "^the pass: \[7, 0\] rounds, 28 pairs" "$dir/every.rows" || fail "every pair is not 7 rounds of 28 pairs"

echo "== qn6's port slowed to 40 Mbit/s, rack r2's uplink to 40 Mbit/s"
shape qn6 40mbit 40mbit
shape qn3 400mbit 40mbit
shape qn4 400mbit 40mbit
check faults
grep -q '^qbench check: NOT READY: 1 FAIL, 1 WARN, 7 PASS; drain qn6 in ' "$dir/faults.out" || fail "the verdict"
rows faults "$(
    echo "all WARN uplink of rack r2: "
    echo "qn6 FAIL network of qn6: "
    for i in 1 2 3 4 5 7 8; do echo "qn$i PASS -"; done
)" || fail "the rows with qn6 and rack r2 slowed"

echo "== qbench-health on the eight nodes as one job: qn6 drained alone"
mkdir -p "$dir/sbin"
cat >"$dir/sbin/scontrol" <<EOF
#!/bin/sh
echo "\$*" >> $dir/scontrol.log
EOF
printf '#!/bin/sh\n' >"$dir/sbin/sinfo"
chmod +x "$dir/sbin/scontrol" "$dir/sbin/sinfo"
# Each node's own /usr/local/sbin (its mount namespace), first on qbench-health's PATH.
for i in $(seq 8); do "$nodes" exec "$dir" "qn$i" mount --bind "$dir/sbin" /usr/local/sbin; done
rc=0
timeout 300 "${mpi[@]}" env QBENCH="$q" QBENCH_PROFILE="$profile" QBENCH_TIMEOUT=200 "$health" 2>"$dir/health.err" || rc=$?
[ "$rc" -ne 0 ] || fail "the health job passed with qn6 slowed"
cat "$dir/scontrol.log"
[ "$(wc -l <"$dir/scontrol.log")" -eq 1 ] || fail "more than one node drained"
grep -q '^update nodename=qn6 state=drain reason=qbench: check FAIL qn6 pairs 1M (rank 5 with [0-9]*): .*; network of qn6: ' \
    "$dir/scontrol.log" || fail "qn6's drain reason"
whole

echo "== qn8's qbench stopped mid-pass: the job ends, qn8 named"
timeout 300 "${mpi[@]}" "$q" check --profile "$profile" >"$dir/stopped.out" 2>"$dir/stopped.err" &
job=$!
victim=$("$nodes" proc "$dir" qn8 qbench) || fail "no qbench process on qn8"
# The pass has begun when qn8 has sent 2 MiB (its first pair's exchanges of
# 1 MiB; the set-up before it sends a few KiB).
sent=/sys/class/net/qb-qn8/statistics/rx_bytes
before=$(cat "$sent")
for _ in $(seq 300); do
    [ $(($(cat "$sent") - before)) -lt $((2 << 20)) ] || break
    sleep 0.05
done
[ $(($(cat "$sent") - before)) -ge $((2 << 20)) ] || fail "qn8 sent nothing like a pair's exchange"
t0=$SECONDS
kill -STOP "$victim"
rc=0
wait "$job" || rc=$?
echo "mpirun exited $rc, $((SECONDS - t0)) s after the stop"
grep '^qbench: ' "$dir/stopped.err" | sort | uniq -c
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "mpirun exited $rc"
grep -q "no answer here from qn8" "$dir/stopped.err" || fail "qn8 is not named: $(cat "$dir/stopped.err")"
sleep 1
# A killed process not yet reaped (a zombie, Z) runs nothing.
[ -z "$(pgrep -r R,S,D,T -x qbench || true)" ] || fail "qbench processes left running: $(pgrep -a -r R,S,D,T -x qbench)"

if [ -n "$out" ]; then
    mkdir -p "$out"
    for name in whole faults; do
        cp "$dir/$name.json" "$out/check-8-nodes-$name.json"
        "$q" plot "$dir/$name.json" -o "$out/check-8-nodes-$name.svg"
    done
    cp "$dir/scontrol.log" "$out/scontrol-8-nodes-faults.log"
    cp "$dir/stopped.err" "$out/check-8-nodes-qn8-stopped.err"
fi
