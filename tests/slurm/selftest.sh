#!/usr/bin/env bash
# apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge libpmix-dev openmpi-bin libopenmpi-dev
#
# Proves tests/slurm/cluster.sh on this machine: a one-node Slurm starts, an MPI
# program runs under srun --mpi=pmix, a failing Prolog drains the node and
# resume undoes it, a HealthCheckProgram drains with its own reason and resumes
# only its own drains. Exits non-zero on the first failure; always stops the
# daemons and removes its folder (QBENCH_SLURM_KEEP=1 keeps the folder).
#
# QBENCH_SLURM_QBENCH=PATH  also run PATH (qbench built with --features mpi) as
#                           srun --mpi=pmix -n 2 PATH allreduce ... and require one table
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/cluster.sh
qbench=${QBENCH_SLURM_QBENCH:-}
[ -z "$qbench" ] || qbench=$(realpath "$qbench")

for c in slurmctld slurmd srun munged mpicc; do
    command -v "$c" >/dev/null || { echo "selftest: $c missing; see the apt-get line at the top" >&2; exit 1; }
done

dir=$(mktemp -d /tmp/qbench-slurm.XXXXXX)
chmod 0755 "$dir" # munged warns when others cannot reach its socket
cleanup() {
    local rc=$?
    "$cluster" stop "$dir" || rc=1
    if pgrep -f -- "$dir/slurm.conf" >/dev/null; then
        echo "selftest: a daemon of $dir is still running" >&2
        rc=1
    fi
    if [ "${QBENCH_SLURM_KEEP:-0}" = 1 ] || [ $rc -ne 0 ]; then
        [ $rc -eq 0 ] || tail -n 20 "$dir"/log/*.log >&2 || true
        echo "selftest: kept $dir" >&2
    else
        rm -rf "$dir"
    fi
    [ $rc -eq 0 ] && echo "selftest: PASS" || echo "selftest: FAIL" >&2
    exit $rc
}
trap cleanup EXIT

fail() { echo "selftest: FAIL: $*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
timings=()
timed() { timings+=("$(printf "%-44s %6s s" "$1" "$2")"); }

# A tiny MPI program: rank, size, and an allreduce that needs both ranks.
cat >"$dir/hello.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size, one = 1, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d sum %d\n", rank, size, sum);
    MPI_Finalize();
    return 0;
}
EOF
mpicc -o "$dir/hello" "$dir/hello.c"

t=$(now)
"$cluster" start "$dir"
timed "start (munged, slurmctld, slurmd, idle)" "$(since "$t")"
eval "$("$cluster" env "$dir")"
node=$QBENCH_SLURM_NODE
cd "$dir"

echo "== srun --mpi=list"
timeout 30 srun --mpi=list 2>&1 | tee "$dir/mpi-list"
grep -qw pmix "$dir/mpi-list" || fail "srun --mpi=list has no pmix"

echo "== srun --mpi=pmix -n 2 hello"
t=$(now)
timeout 60 srun --mpi=pmix -n 2 "$dir/hello" | sort | tee "$dir/hello.out"
timed "srun --mpi=pmix -n 2 hello" "$(since "$t")"
[ "$(cat "$dir/hello.out")" = "$(printf 'rank 0 of 2 sum 2\nrank 1 of 2 sum 2')" ] ||
    fail "hello under srun did not print ranks 0 and 1 of 2"
"$cluster" wait "$dir" idle 30

if [ -n "$qbench" ]; then
    echo "== srun --mpi=pmix -n 2 qbench allreduce"
    t=$(now)
    timeout 120 srun --mpi=pmix -n 2 "$qbench" allreduce --transport cpu -b 1K -e 1K | tee "$dir/qbench.out"
    timed "srun --mpi=pmix -n 2 qbench allreduce" "$(since "$t")"
    [ "$(grep -c 'Collective test starting' "$dir/qbench.out")" = 1 ] ||
        fail "qbench under srun printed more than one table (not an MPI build?)"
    grep -Eq '^# +Rank +0 ' "$dir/qbench.out" && grep -Eq '^# +Rank +1 ' "$dir/qbench.out" ||
        fail "qbench's table does not list ranks 0 and 1"
    ! grep -Eq '^# +Rank +2 ' "$dir/qbench.out" || fail "qbench's table lists more than 2 ranks"
    "$cluster" wait "$dir" idle 30
fi

echo "== a Prolog that exits 1 drains the node"
prolog_fail=$("$cluster" hook "$dir" prolog-fail /bin/false)
QBENCH_SLURM_PROLOG=$prolog_fail "$cluster" reconfigure "$dir"
"$cluster" wait "$dir" idle 30
t=$(now)
if timeout 60 srun -n 1 /bin/true; then fail "srun succeeded though the Prolog failed"; fi
"$cluster" wait "$dir" drained 20 || fail "the failing Prolog did not drain the node"
timed "srun with failing Prolog until drained" "$(since "$t")"
reason=$("$cluster" reason "$dir")
scontrol show node "$node" | grep -E '^ *(State|Reason)='
[ "$reason" = "Prolog error" ] || fail "drain reason is '$reason', not 'Prolog error'"

echo "== scontrol update state=resume undoes it"
"$cluster" reconfigure "$dir" # no Prolog
t=$(now)
scontrol update nodename="$node" state=resume
"$cluster" wait "$dir" idle 20 || fail "resume did not make the node idle"
timed "resume until idle" "$(since "$t")"
[ -z "$("$cluster" reason "$dir")" ] || fail "the reason outlived resume"
timeout 60 srun -n 1 /bin/true || fail "a job fails on the resumed node"
"$cluster" wait "$dir" idle 30

# LBNL NHC style: silent and exit 0 when healthy, and then undo only the
# drains whose reason has its own prefix; when unhealthy, drain with that prefix.
echo "== HealthCheckProgram drains with its own reason and resumes only those"
cat >"$dir/healthcheck" <<EOF
#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
echo run >>"$dir/hc.runs"
reason=\$(sinfo -h -n "\$SLURMD_NODENAME" -o %E)
if [ -e "$dir/hc.fail" ]; then
    case "\$reason" in "qbench:"*) ;; *)
        scontrol update nodename="\$SLURMD_NODENAME" state=drain reason="qbench: selftest failure" ;;
    esac
    echo "qbench: selftest failure"
    exit 1
fi
case "\$reason" in "qbench:"*) scontrol update nodename="\$SLURMD_NODENAME" state=resume ;; esac
exit 0
EOF
chmod 0755 "$dir/healthcheck"
hc=$("$cluster" hook "$dir" healthcheck "$dir/healthcheck")
interval=2
QBENCH_SLURM_HEALTHCHECK=$hc QBENCH_SLURM_HEALTHCHECK_INTERVAL=$interval "$cluster" reconfigure "$dir"

runs() { [ -f "$dir/hc.runs" ] && wc -l <"$dir/hc.runs" || echo 0; }
# Waits (bounded) until the health check has run N more times.
wait_runs() {
    local n=$1 limit=$2 start t
    start=$(runs)
    t=$(now)
    while [ "$(runs)" -lt $((start + n)) ]; do
        awk -v a="$t" -v b="$(now)" -v l="$limit" 'BEGIN { exit !(b - a > l) }' &&
            fail "the health check ran $(($(runs) - start)) times in $limit s, not $n"
        sleep 0.2
    done
}
t=$(now)
wait_runs 2 $((4 * interval + 10))
timed "two health check runs (interval $interval s)" "$(since "$t")"
[ "$("$cluster" reason "$dir")" = "" ] || fail "a passing health check left a reason"

scontrol update nodename="$node" state=drain reason="admin: not qbench"
"$cluster" wait "$dir" drained 10
wait_runs 2 $((4 * interval + 10))
[ "$("$cluster" reason "$dir")" = "admin: not qbench" ] || fail "the health check touched a drain not its own"
echo "a drain with another reason stays: $("$cluster" reason "$dir")"
scontrol update nodename="$node" state=resume
"$cluster" wait "$dir" idle 20

touch "$dir/hc.fail"
t=$(now)
"$cluster" wait "$dir" drained $((2 * interval + 10)) || fail "the failing health check did not drain the node"
timed "failing health check until drained" "$(since "$t")"
reason=$("$cluster" reason "$dir")
scontrol show node "$node" | grep -E '^ *(State|Reason)='
[ "$reason" = "qbench: selftest failure" ] || fail "drain reason is '$reason', not 'qbench: selftest failure'"

rm "$dir/hc.fail"
t=$(now)
"$cluster" wait "$dir" idle $((2 * interval + 10)) || fail "the passing health check did not resume its own drain"
timed "passing health check until idle again" "$(since "$t")"
timeout 60 srun --mpi=pmix -n 2 "$dir/hello" >/dev/null || fail "a job fails after the health check resumed the node"

echo "== timings"
printf '%s\n' "${timings[@]}"
t=$(now)
cd /
"$cluster" stop "$dir"
printf "%-44s %6s s\n" stop "$(since "$t")"
