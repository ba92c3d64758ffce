#!/usr/bin/env bash
# A real Slurm cluster (Debian's slurm-wlm 22.05 with munge) for tests, run as
# root, with its key, state, spool, logs and temporary files in one folder: one
# node (this machine), or the emulated nodes of tests/cluster/nodes.sh, each
# node's slurmd inside its namespaces and slurmctld in the root namespace.
#
# Needs (Debian 12):
#   apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge libpmix-dev openmpi-bin libopenmpi-dev
#
# Usage:
#   cluster.sh start DIR        write DIR/slurm.conf, start munged, slurmctld, slurmd;
#                               return once the node has registered and responds: idle, or
#                               drained already by a HealthCheckProgram (or fail, with the logs)
#   cluster.sh env DIR          print the shell exports a test needs: eval "$(cluster.sh env DIR)"
#   cluster.sh wait DIR STATE [SECONDS [NODE]]
#                               wait until the node's state (sinfo %T, e.g. idle, drained)
#                               is STATE (every node's, or NODE's); fail after SECONDS
#                               (default 30). STATE "up": any state of a registered,
#                               responding node
#   cluster.sh reason DIR [NODE] print the node's Reason= (empty when none)
#   cluster.sh hook DIR NAME CMD [ARG...]
#                               write DIR/hooks/NAME, a script that runs CMD with SLURM_CONF
#                               set (slurmd gives a HealthCheckProgram no SLURM_CONF), and
#                               print its path, for QBENCH_SLURM_PROLOG / _HEALTHCHECK
#   cluster.sh reconfigure DIR  rewrite slurm.conf from the variables below and make the
#                               daemons reread it (scontrol reconfigure)
#   cluster.sh stop DIR         cancel the jobs, stop the daemons (and any slurmstepd of
#                               this cluster left behind); DIR is left for the caller to remove
#
# Variables read by start and reconfigure:
#   QBENCH_SLURM_PROLOG              Prolog= (absolute path; empty: none)
#   QBENCH_SLURM_HEALTHCHECK         HealthCheckProgram= (absolute path; empty: none)
#   QBENCH_SLURM_HEALTHCHECK_INTERVAL HealthCheckInterval= in seconds (default 5)
#   QBENCH_SLURM_PROLOG_TIMEOUT      PrologEpilogTimeout= in seconds (default 120)
#   QBENCH_SLURM_CPUS                claim this many CPUs (srun -n 4 on 2 cores); default: the
#                                    node as slurmd -C sees it
#   QBENCH_SLURM_EXTRA               more slurm.conf lines, appended verbatim
#   QBENCH_SLURM_PORT                slurmctld port (default 6817); slurmd uses the next one
#                                    (read by start only)
#   QBENCH_SLURM_NODES               the DIR of tests/cluster/nodes.sh up: its nodes are the
#                                    cluster's (each claims QBENCH_SLURM_CPUS, default 1)
#
# Every wait has a deadline; nothing here waits forever.
set -euo pipefail
# The emulated nodes' script, which enters a node.
nodes_sh=$(cd "$(dirname "$0")/../cluster" && pwd)/nodes.sh

die() { echo "cluster.sh: $*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# Client commands get a hard limit so that a dead slurmctld cannot hang a test.
CLIENT_TIMEOUT=15

[ $# -ge 2 ] || die "usage: cluster.sh start|env|wait|reason|hook|reconfigure|stop DIR [...]"
cmd=$1
dir=$(realpath -m -- "$2")
shift 2
conf=$dir/slurm.conf
sock=$dir/munge/munge.socket
# slurmd registers under the short host name; NodeName must be exactly that.
# slurmctld runs here, under this machine's name, in either kind of cluster.
host=$(hostname -s)
nodes_dir=${QBENCH_SLURM_NODES:-}
if [ -n "$nodes_dir" ]; then
    [ -f "$nodes_dir/nodes" ] || die "QBENCH_SLURM_NODES=$nodes_dir holds no nodes (tests/cluster/nodes.sh up)"
    mapfile -t nodes < <(awk '{ print $1 }' "$nodes_dir/nodes")
    ctl_addr=$(cat "$nodes_dir/controller")
else
    nodes=("$host")
    ctl_addr=127.0.0.1
fi
node=${nodes[0]}

write_conf() {
    local port=$1
    cat >"$conf.new" <<EOF
# Written by tests/slurm/cluster.sh; ${#nodes[@]} node(s), everything under $dir.
ClusterName=qbench
SlurmctldHost=$host($ctl_addr)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
TmpFS=$dir/tmp
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MailProg=/bin/true
SlurmctldTimeout=30
SlurmdTimeout=60
MessageTimeout=10
PrologEpilogTimeout=${QBENCH_SLURM_PROLOG_TIMEOUT:-120}
KillWait=5
MinJobAge=30
EOF
    if [ -n "${QBENCH_SLURM_PROLOG:-}" ]; then
        echo "Prolog=$QBENCH_SLURM_PROLOG" >>"$conf.new"
    fi
    if [ -n "${QBENCH_SLURM_HEALTHCHECK:-}" ]; then
        echo "HealthCheckProgram=$QBENCH_SLURM_HEALTHCHECK" >>"$conf.new"
        echo "HealthCheckInterval=${QBENCH_SLURM_HEALTHCHECK_INTERVAL:-5}" >>"$conf.new"
        echo "HealthCheckNodeState=ANY" >>"$conf.new"
    fi
    if [ -n "${QBENCH_SLURM_EXTRA:-}" ]; then
        printf '%s\n' "$QBENCH_SLURM_EXTRA" >>"$conf.new"
    fi
    # The node as slurmd sees it (CPUs, sockets, cores), without RealMemory:
    # a node whose memory reads lower than configured would be drained.
    # QBENCH_SLURM_CPUS instead claims that many CPUs (more ranks than cores),
    # which slurmd accepts only with config_overrides.
    local hw
    if [ -n "$nodes_dir" ]; then
        echo "SlurmdParameters=config_overrides" >>"$conf.new"
        awk -v cpus="${QBENCH_SLURM_CPUS:-1}" '{ printf "NodeName=%s NodeAddr=%s CPUs=%s State=UNKNOWN\n", $1, $2, cpus }' \
            "$nodes_dir/nodes" >>"$conf.new"
        echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$conf.new"
        mv "$conf.new" "$conf"
        return
    elif [ -n "${QBENCH_SLURM_CPUS:-}" ]; then
        hw="NodeName=$node CPUs=$QBENCH_SLURM_CPUS"
        echo "SlurmdParameters=config_overrides" >>"$conf.new"
    else
        hw=$(slurmd -C | head -n1 | sed -e 's/ RealMemory=[0-9]*//' -e "s/^NodeName=[^ ]*/NodeName=$node/")
    fi
    cat >>"$conf.new" <<EOF
$hw NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    mv "$conf.new" "$conf"
}

client() { SLURM_CONF=$conf timeout "$CLIENT_TIMEOUT" "$@"; }

node_state() { client sinfo -h -n "$1" -o %T 2>/dev/null | head -n1; }

# sinfo prints "none" for a node without a reason.
node_reason() {
    local r
    r=$(client sinfo -h -n "$1" -o %E 2>/dev/null | head -n1)
    [ "$r" = none ] || printf '%s\n' "$r"
}

# Whether a node in state $2 is in the wanted state $1. "up": registered and
# responding, in any state (a HealthCheckProgram run as slurmd starts may
# have drained it already).
in_state() {
    [ "$2" = "$1" ] || { [ "$1" = up ] && case "$2" in "" | unknown* | down* | *'*') false ;; *) true ;; esac; }
}

# wait_state STATE SECONDS GUARD NODE...: every NODE in STATE. GUARD, a
# command, is run each round and ends the wait early (failing) when it fails.
wait_state() {
    local want=$1 limit=$2 guard=$3 t0 n state states
    shift 3
    t0=$(now)
    while :; do
        $guard || return 1
        states=""
        for n in "$@"; do
            state=$(node_state "$n" || true)
            in_state "$want" "$state" || states="$states $n=${state:-?}"
        done
        if [ -z "$states" ]; then
            echo "cluster.sh: node(s) $* $want after $(since "$t0") s" >&2
            return 0
        fi
        if awk -v a="$t0" -v b="$(now)" -v l="$limit" 'BEGIN { exit !(b - a > l) }'; then
            echo "cluster.sh: not '$want' after $limit s:$states" >&2
            return 1
        fi
        sleep 0.2
    done
}

logs() {
    local f
    for f in "$dir"/log/*.log; do
        [ -f "$f" ] || continue
        echo "---- $f (last 30 lines)" >&2
        tail -n 30 "$f" >&2
    done
}

pid_of() { [ -s "$dir/run/$1.pid" ] && cat "$dir/run/$1.pid"; }

# TERM, then KILL after a 10 s deadline; only the processes with these ids.
# (Each daemon takes about 2 s to notice TERM, so they are ended together.)
end_pids() {
    local pid left
    for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
    for _ in $(seq 100); do
        left=""
        for pid in "$@"; do running "$pid" && left="$left $pid"; done
        [ -z "$left" ] && return 0
        sleep 0.1
    done
    echo "cluster.sh: process(es)$left ignored TERM for 10 s; killing them" >&2
    for pid in $left; do kill -KILL "$pid" 2>/dev/null || true; done
}

# slurmstepd processes left behind (each keeps slurmd's log in DIR open) and
# the job tasks under them: after the scancel there should be none, but with
# slurmctld already dead nothing else would end them. Only these are ended.
stepds() {
    local pid roots=""
    for pid in $(find /proc/[0-9]*/fd -maxdepth 1 -lname "$dir/*" 2>/dev/null | cut -d/ -f3 | sort -u); do
        [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmstepd ] && roots="$roots $pid"
    done
    [ -n "$roots" ] || return 0
    ps -e -o pid=,ppid= | awk -v roots="$roots" '
        { parent[$1] = $2 }
        END {
            n = split(roots, r, " ")
            for (i = 1; i <= n; i++) mine[r[i]] = 1
            do {
                grew = 0
                for (p in parent) if (!(p in mine) && (parent[p] in mine)) { mine[p] = 1; grew = 1 }
            } while (grew)
            for (p in mine) print p
        }'
}

# Running and not a zombie (a zombie whose parent is slow to reap it is gone).
running() { [ -e "/proc/$1" ] && [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

# Every daemon still running (pid files appear a moment after they fork);
# the guard of start's wait_state, whose t0 it reads.
daemons_alive() {
    local name pid
    for name in slurmctld "${nodes[@]/#/slurmd-}"; do
        pid=$(pid_of "$name" || true)
        if [ -z "$pid" ]; then
            awk -v a="$t0" -v b="$(now)" 'BEGIN { exit !(b - a > 10) }' || continue
            echo "cluster.sh: $name wrote no pid file" >&2
            return 1
        fi
        kill -0 "$pid" 2>/dev/null || { echo "cluster.sh: $name ($pid) exited" >&2; return 1; }
    done
}

start() {
    local t0 t1 port=${QBENCH_SLURM_PORT:-6817}
    t0=$(now)
    [ ! -e "$conf" ] || die "$dir already holds a cluster; stop it and remove the folder first"
    command -v slurmctld >/dev/null || die "slurmctld missing: apt-get install slurmctld slurmd slurm-client munge libpmix-dev"
    local p
    for p in "$port" $((port + 1)); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            die "port $p is taken (another cluster running?); set QBENCH_SLURM_PORT"
        fi
    done
    mkdir -p "$dir"/{munge,state,spool,log,run,tmp}
    # munged refuses keys and sockets in folders others can write to,
    # and warns when others cannot reach its socket.
    chmod 0755 "$dir/munge"

    # munge: its own key, socket, pid, seed and log here; /etc/munge is not used.
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 0400 "$dir/munge/munge.key"
    munged --force --key-file="$dir/munge/munge.key" --socket="$sock" \
        --pid-file="$dir/run/munged.pid" --seed-file="$dir/munge/munged.seed" \
        --log-file="$dir/log/munged.log" ||
        { logs; die "munged did not start"; }
    local ok=0
    for _ in $(seq 50); do
        if munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1; then ok=1; break; fi
        sleep 0.1
    done
    [ $ok = 1 ] || { logs; stop_all; die "munge does not answer on $sock"; }

    write_conf "$port"
    # The daemons fork into the background and write their pid files.
    SLURM_CONF=$conf slurmctld -f "$conf" || { logs; stop_all; die "slurmctld did not start"; }
    local n
    for n in "${nodes[@]}"; do
        mkdir -p "$dir/spool/$n"
        if [ -n "$nodes_dir" ]; then
            # Inside the node's namespaces, under its name.
            SLURM_CONF=$conf "$nodes_sh" exec "$nodes_dir" "$n" \
                slurmd -f "$conf" -N "$n" || { logs; stop_all; die "slurmd of $n did not start"; }
        else
            SLURM_CONF=$conf slurmd -f "$conf" || { logs; stop_all; die "slurmd did not start"; }
        fi
    done
    t1=$(now)
    if ! wait_state up 60 daemons_alive "${nodes[@]}"; then
        client scontrol show node >&2 || true
        logs
        stop_all
        die "the node did not come up"
    fi
    echo "cluster.sh: started in $(since "$t0") s (daemons launched after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s); node(s) ${nodes[*]}; SLURM_CONF=$conf" >&2
}

stop_all() {
    local pid name t0
    pid=$(pid_of slurmctld || true)
    if [ -f "$conf" ] && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        CLIENT_TIMEOUT=5 client scancel --full --quiet --user=root 2>/dev/null || true
        # Give cancelled jobs a moment to finish (KillWait=5), 10 s at most.
        t0=$(now)
        while [ -n "$(CLIENT_TIMEOUT=5 client squeue -h -o %i 2>/dev/null || true)" ]; do
            awk -v a="$t0" -v b="$(now)" 'BEGIN { exit !(b - a > 10) }' && break
            sleep 0.2
        done
    fi
    local pids=""
    for name in "${nodes[@]/#/slurmd-}" slurmctld munged; do
        pid=$(pid_of "$name" || true)
        [ -n "$pid" ] && pids="$pids $pid"
    done
    # Word splitting wanted: each is a list of pids.
    # shellcheck disable=SC2086,SC2046
    end_pids $pids $(stepds)
    rm -f "$dir"/run/*.pid
}

case "$cmd" in
start) start ;;
stop) stop_all ;;
env)
    [ -f "$conf" ] || die "no cluster in $dir"
    cat <<EOF
export SLURM_CONF=$conf
export QBENCH_SLURM_DIR=$dir
export QBENCH_SLURM_NODE=$node
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# Every node's processes share this host's cores: oversubscribed, which
# Open MPI sees for itself under mpirun but not under srun. Without the
# yield, a process spinning in a blocking MPI call keeps the core from its
# peer for a time slice at each step (an all_reduce of 512K between two
# nodes on one core ran at 0.011 GB/s for 0.46 with it).
export OMPI_MCA_mpi_yield_when_idle=1
export TMPDIR=$dir/tmp
EOF
    ;;
wait)
    if [ -n "${3:-}" ]; then
        wait_state "${1:?state}" "${2:-30}" true "$3"
    else
        wait_state "${1:?state}" "${2:-30}" true "${nodes[@]}"
    fi
    ;;
reason) node_reason "${1:-$node}" ;;
hook)
    [ -f "$conf" ] || die "no cluster in $dir"
    [ $# -ge 2 ] || die "usage: cluster.sh hook DIR NAME CMD [ARG...]"
    name=$1
    shift
    mkdir -p "$dir/hooks"
    {
        echo '#!/bin/bash'
        echo '# slurmd runs a HealthCheckProgram with SLURMD_NODENAME as its only variable (and no'
        echo '# PATH); on a real node scontrol would read /etc/slurm/slurm.conf.'
        echo "export SLURM_CONF=$(printf %q "$conf")"
        printf 'exec'
        printf ' %q' "$@"
        echo
    } >"$dir/hooks/$name"
    chmod 0755 "$dir/hooks/$name"
    echo "$dir/hooks/$name"
    ;;
reconfigure)
    [ -f "$conf" ] || die "no cluster in $dir"
    port=$(sed -n 's/^SlurmctldPort=//p' "$conf")
    write_conf "$port"
    client scontrol reconfigure
    ;;
*) die "unknown command '$cmd'" ;;
esac
