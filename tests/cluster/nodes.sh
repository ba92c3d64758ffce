#!/usr/bin/env bash
# Emulated nodes on one machine, for tests of jobs across nodes: each node is
# a network namespace with its own interface (eth0, a veth to a bridge in the
# root namespace), address, host name (a UTS namespace) and mount namespace
# (its own /sys, so that qbench probe sees its interfaces alone, and its own
# DIR/tmp, where Slurm's PMIx plugin keeps per-step folders). A holder process
# per node keeps the namespaces; commands enter them with nsenter.
#
# Usage (as root; iproute2 and util-linux):
#   nodes.sh up DIR N           make nodes qn1..qnN (10.77.0.1..N on bridge qbbr0, which holds
#                               10.77.0.254 in the root namespace); write DIR/nodes ("name address
#                               holder-pid" lines), DIR/controller (the bridge's address, for a
#                               Slurm controller in the root namespace), DIR/hostfile (one slot
#                               per node) and DIR/rsh (an Open MPI plm_rsh_agent that enters a
#                               node instead of ssh)
#   nodes.sh exec DIR NODE CMD [ARG...]
#                               run CMD inside NODE
#   nodes.sh pid DIR NODE       print the pid of NODE's holder (whose namespaces are the node's)
#   nodes.sh proc DIR NODE NAME print the pid of a process NAME running in NODE, waiting up to 10 s
#   nodes.sh slow DIR NODE RATE shape NODE's link to RATE (tc tbf, both directions; "40mbit")
#   nodes.sh fast DIR NODE      remove that shaping
#   nodes.sh down DIR           end the holders, remove the interfaces, namespaces and bridge
#
# Traffic stays on the bridge and the nodes' interfaces: nothing here routes
# beyond 10.77.0.0/24, and no address outside it is configured.
set -euo pipefail

die() { echo "nodes.sh: $*" >&2; exit 1; }
[ $# -ge 2 ] || die "usage: nodes.sh up|exec|pid|proc|slow|fast|down DIR [...]"
cmd=$1
dir=$(realpath -m -- "$2")
shift 2
BRIDGE=qbbr0
NET=10.77.0

# The holder pid of NODE.
holder() { awk -v n="$1" '$1 == n { print $3 }' "$dir/nodes"; }

up() {
    local n=${1:?number of nodes} i node pid
    [ ! -e "$dir/nodes" ] || die "$dir holds nodes already; take them down first"
    if [ "$n" -lt 1 ] || [ "$n" -gt 16 ]; then die "1 to 16 nodes"; fi
    # The names are fixed, so one set of nodes per machine: a run that was
    # killed before its down leaves them, and they are named, not reused.
    local stale
    stale=$( (ip -o link show "$BRIDGE" 2>/dev/null | cut -d: -f2; ip netns list | awk '/^qbench-qn/ { print $1 }') | tr -s ' \n' ' ')
    [ -z "${stale// /}" ] || die "nodes of another run are still up:$stale(nodes.sh down on its folder, or ip netns del and ip link del them)"
    mkdir -p "$dir"
    : >"$dir/nodes"
    : >"$dir/hostfile"
    # Whatever up made before a failure is taken down again.
    trap down ERR
    ip link add "$BRIDGE" type bridge
    ip addr add "$NET.254/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
    for i in $(seq "$n"); do
        node=qn$i
        ip netns add "qbench-$node"
        # Listed at once (holder pid 0 until it runs), so down finds it.
        echo "$node $NET.$i 0" >>"$dir/nodes"
        ip link add "qb-$node" type veth peer name eth0 netns "qbench-$node"
        ip link set "qb-$node" master "$BRIDGE" up
        ip -n "qbench-$node" addr add "$NET.$i/24" dev eth0
        ip -n "qbench-$node" link set eth0 up
        ip -n "qbench-$node" link set lo up
        mkdir -p "$dir/$node/tmp" "$dir/$node/cgroup" "$dir/tmp"
        # nsenter --net, not ip netns exec (which mounts a /sys hiding the
        # cgroup tree slurmd needs): a fresh sysfs shows this node's
        # interfaces, and the root's cgroup tree is bound back under it.
        nsenter --net="/run/netns/qbench-$node" unshare --uts --mount --propagation private sh -c "
            hostname $node
            mount --rbind /sys/fs/cgroup '$dir/$node/cgroup'
            mount -t sysfs sysfs /sys
            mount --rbind '$dir/$node/cgroup' /sys/fs/cgroup
            mount --bind '$dir/$node/tmp' '$dir/tmp'
            exec sleep 86400" </dev/null >/dev/null 2>&1 &
        pid=$!
        sed -i "s/^$node \(.*\) 0\$/$node \1 $pid/" "$dir/nodes"
        echo "$node slots=1" >>"$dir/hostfile"
    done
    # The holders are ready once each names itself.
    local _
    while read -r node _ _; do
        for _ in $(seq 50); do
            [ "$(nsenter -t "$(holder "$node")" -u hostname 2>/dev/null)" = "$node" ] && break
            sleep 0.1
        done
        [ "$(nsenter -t "$(holder "$node")" -u hostname 2>/dev/null)" = "$node" ] || die "node $node did not come up"
    done <"$dir/nodes"
    echo "$NET.254" >"$dir/controller"
    cat >"$dir/rsh" <<EOF
#!/bin/sh
# Open MPI's plm_rsh_agent for the nodes of $dir: "rsh NODE COMMAND..."
# runs COMMAND inside NODE, as ssh would on a real cluster.
node=\$1
shift
pid=\$(awk -v n="\$node" '\$1 == n { print \$3 }' "$dir/nodes")
[ -n "\$pid" ] || { echo "rsh: no node \$node" >&2; exit 255; }
exec nsenter -t "\$pid" -u -n -m -- /bin/sh -c "\$*"
EOF
    chmod 0755 "$dir/rsh"
    echo "nodes.sh: $n nodes up: $(awk '{ printf "%s=%s ", $1, $2 }' "$dir/nodes")" >&2
}

down() {
    [ -f "$dir/nodes" ] || return 0
    local node pid
    while read -r node _ pid; do
        [ "$pid" -gt 1 ] && kill "$pid" 2>/dev/null
        ip link del "qb-$node" 2>/dev/null || true
        ip netns del "qbench-$node" 2>/dev/null || true
    done <"$dir/nodes"
    ip link del "$BRIDGE" 2>/dev/null || true
    rm -f "$dir/nodes" "$dir/controller"
}

shape() { # NODE [RATE]
    local node=$1 rate=${2:-} pid
    pid=$(holder "$node")
    [ -n "$pid" ] || die "no node $node"
    if [ -n "$rate" ]; then
        # A token bucket (netem is not built into every kernel; tbf is).
        tc qdisc replace dev "qb-$node" root tbf rate "$rate" burst 32kbit latency 400ms
        nsenter -t "$pid" -n tc qdisc replace dev eth0 root tbf rate "$rate" burst 32kbit latency 400ms
    else
        tc qdisc del dev "qb-$node" root 2>/dev/null || true
        nsenter -t "$pid" -n tc qdisc del dev eth0 root 2>/dev/null || true
    fi
}

case "$cmd" in
up) up "$@" ;;
down) down ;;
exec)
    [ $# -ge 2 ] || die "usage: nodes.sh exec DIR NODE CMD [ARG...]"
    pid=$(holder "$1")
    [ -n "$pid" ] || die "no node $1"
    shift
    exec nsenter -t "$pid" -u -n -m -- "$@"
    ;;
pid)
    pid=$(holder "${1:?node}")
    [ -n "$pid" ] || die "no node $1"
    echo "$pid"
    ;;
proc)
    pid=$(holder "${1:?node}")
    [ -n "$pid" ] || die "no node $1"
    for _ in $(seq 100); do
        for p in $(pgrep -x "${2:?process name}" || true); do
            [ "$(readlink "/proc/$p/ns/uts")" = "$(readlink "/proc/$pid/ns/uts")" ] && { echo "$p"; exit 0; }
        done
        sleep 0.1
    done
    die "no process $2 in $1"
    ;;
slow) shape "${1:?node}" "${2:?rate}" ;;
fast) shape "${1:?node}" ;;
*) die "unknown command '$cmd'" ;;
esac
