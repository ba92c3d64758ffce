#!/usr/bin/env bash
# qbench check as users deploy it with Slurm, on a real one-node cluster
# (cluster.sh): srun --mpi=pmix -n 2 of the cpu profile gives one table; the
# documented Prolog and HealthCheckProgram (contrib/slurm/qbench-health) drain
# the node with qbench's reason when a profile fails, resume only qbench's own
# drains when it passes, and leave an admin's drain alone.
#
# Usage: tests/slurm/check.sh QBENCH   (qbench built with --features mpi)
# Needs the packages named at the top of cluster.sh. Exits non-zero on the
# first failure; always stops the daemons and removes its folder.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cluster=$here/cluster.sh
health=$repo/contrib/slurm/qbench-health
q=$(realpath "${1:?usage: check.sh QBENCH}")
dir=$(mktemp -d /tmp/qbench-check-slurm.XXXXXX)
chmod 0755 "$dir"
cleanup() {
    local rc=$?
    "$cluster" stop "$dir" || rc=1
    [ $rc -eq 0 ] && rm -rf "$dir" && echo "check.sh: PASS" || { tail -n 20 "$dir"/log/*.log >&2 || true; echo "check.sh: FAIL (kept $dir)" >&2; }
    exit $rc
}
trap cleanup EXIT
fail() { echo "check.sh: FAIL: $*" >&2; exit 1; }

sed 's/floor = 0.001/floor = 1e9/' "$repo/profiles/cpu.toml" > "$dir/impossible.toml"
# Two ranks on a two-core runner: claim four CPUs, on start and on every
# reconfigure (a changed CPU count would need a slurmctld restart).
export QBENCH_SLURM_CPUS=4
"$cluster" start "$dir"
eval "$("$cluster" env "$dir")"
node=$QBENCH_SLURM_NODE

echo "== srun --mpi=pmix -n 2 qbench check --profile cpu: one table, ready"
out=$(timeout 120 srun --mpi=pmix -n 2 "$q" check --profile cpu --level standard) || fail "srun check exited $?: $out"
printf '%s\n' "$out"
[ "$(printf '%s\n' "$out" | grep -c '^# qbench check:')" = 1 ] || fail "not exactly one table"
printf '%s\n' "$out" | grep -q '^qbench check: READY' || fail "not ready"
printf '%s\n' "$out" | grep -q 'node pairs' || fail "no pairwise rows"

echo "== Prolog with a profile that cannot pass: the job is refused, the node drained with qbench's reason"
bad=$("$cluster" hook "$dir" prolog-bad env QBENCH="$q" QBENCH_PROFILE="$dir/impossible.toml" "$health")
QBENCH_SLURM_PROLOG=$bad "$cluster" reconfigure "$dir"
if timeout 120 srun -n 1 true 2>"$dir/srun.err"; then fail "the job ran although the Prolog failed"; fi
"$cluster" wait "$dir" drained 30
reason=$("$cluster" reason "$dir")
echo "reason: $reason"
case "$reason" in qbench:*) ;; *) fail "drained with '$reason', not qbench's reason" ;; esac

echo "== HealthCheckProgram with the passing profile: qbench's own drain is resumed"
good=$("$cluster" hook "$dir" health-good env QBENCH="$q" QBENCH_PROFILE=cpu "$health")
QBENCH_SLURM_PROLOG= QBENCH_SLURM_HEALTHCHECK=$good QBENCH_SLURM_HEALTHCHECK_INTERVAL=2 "$cluster" reconfigure "$dir"
"$cluster" wait "$dir" idle 60

echo "== an admin's drain is left alone by a passing health check"
scontrol update nodename="$node" state=drain reason="admin: not qbench"
sleep 6
[ "$("$cluster" reason "$dir")" = "admin: not qbench" ] || fail "a drain that is not qbench's was touched"
scontrol update nodename="$node" state=resume
"$cluster" wait "$dir" idle 30

echo "== HealthCheckProgram with the failing profile: drained with qbench's reason"
badhc=$("$cluster" hook "$dir" health-bad env QBENCH="$q" QBENCH_PROFILE="$dir/impossible.toml" "$health")
QBENCH_SLURM_HEALTHCHECK=$badhc QBENCH_SLURM_HEALTHCHECK_INTERVAL=2 "$cluster" reconfigure "$dir"
"$cluster" wait "$dir" drained 60
reason=$("$cluster" reason "$dir")
echo "reason: $reason"
case "$reason" in qbench:*) ;; *) fail "drained with '$reason', not qbench's reason" ;; esac
