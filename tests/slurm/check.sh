#!/usr/bin/env bash
# qbench check as users deploy it with Slurm, on a real one-node cluster
# (cluster.sh): srun --mpi=pmix -n 2 of the cpu profile gives one table; the
# documented Prolog and HealthCheckProgram (contrib/slurm/qbench-health) drain
# the node with qbench's reason when a profile fails, resume only qbench's own
# drains when it passes, and leave an admin's drain alone. Then the script run
# directly as slurmd runs it, with fake qbench binaries: one that hangs past
# QBENCH_TIMEOUT and one that also ignores TERM drain 'qbench: timeout ...';
# a QBENCH that is not there, not on PATH or not executable, and one whose
# shared library is gone, drain 'qbench: binary not found' / 'cannot execute';
# WARN lines with exit 0 do not drain; a passing check resumes after each.
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

sed -E 's/^floor = [0-9.e-]+/floor = 1e9/' "$repo/profiles/cpu.toml" > "$dir/impossible.toml"
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
QBENCH_SLURM_PROLOG='' QBENCH_SLURM_HEALTHCHECK=$good QBENCH_SLURM_HEALTHCHECK_INTERVAL=2 "$cluster" reconfigure "$dir"
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

# From here on the script is run directly, in the environment slurmd gives a
# HealthCheckProgram (env -i: SLURMD_NODENAME only, the hook adds SLURM_CONF),
# against this cluster's slurmctld: no reconfigure and no health-check interval
# to wait for. Fake qbench binaries stand in for what a real one cannot be made
# to do on demand (hang, ignore TERM, warn).
echo "== no HealthCheckProgram any more; the runs below are the test's own"
QBENCH_SLURM_HEALTHCHECK='' "$cluster" reconfigure "$dir"
# Runs slurmd started before the reconfigure may still be under way (it starts
# one every interval even while the last runs); QBENCH_TIMEOUT ends each
# within 55 s.
SECONDS=0
while pgrep -f -- "$health" >/dev/null; do
    [ "$SECONDS" -le 70 ] || fail "a health check run is still going 70 s after the reconfigure"
    sleep 0.2
done

fake=$dir/fake
mkdir -p "$fake"
printf '#!/bin/sh\nexec sleep 120\n' >"$fake/hangs"
# Ignores TERM, and so does its child: only timeout's KILL ends them.
cat >"$fake/ignores-term" <<EOS
#!/bin/sh
trap '' TERM
sleep 120 &
echo \$\$ \$! >"$fake/ignores-term.pids"
wait
EOS
printf '#!/bin/sh\nexit 0\n' >"$fake/passes"
printf '#!/bin/sh\necho "qbench: check WARN %s fake step: 1 GB/s, wanted >= 0.99 GB/s; nothing to fix" >&2\nexit 0\n' "$node" >"$fake/warns"
chmod 0755 "$fake"/*

# run NAME VAR=VALUE...: the script with these variables, as slurmd runs it;
# its exit status, its stderr in DIR/NAME.err.
run() {
    local name=$1 hook
    shift
    hook=$("$cluster" hook "$dir" "$name" env "$@" "$health")
    timeout 60 env -i SLURMD_NODENAME="$node" "$hook" 2>"$dir/$name.err"
}
# drained_with GLOB: the node is drained and its reason matches GLOB.
drained_with() {
    local reason
    "$cluster" wait "$dir" drained 30
    reason=$("$cluster" reason "$dir")
    echo "reason: $reason"
    # shellcheck disable=SC2254
    case "$reason" in $1) ;; *) fail "drained with '$reason', not '$1'" ;; esac
}
# resumes [QBENCH]: a passing check (the real qbench with the cpu profile, or
# QBENCH) exits 0 and resumes qbench's drain.
resumes() {
    run resume QBENCH="${1:-$q}" QBENCH_PROFILE=cpu || fail "the passing check exited $?: $(cat "$dir/resume.err")"
    "$cluster" wait "$dir" idle 30
    [ -z "$("$cluster" reason "$dir")" ] || fail "resumed, but the reason is still '$("$cluster" reason "$dir")'"
}

echo "== a qbench that hangs past QBENCH_TIMEOUT=2: drained 'qbench: timeout', within the limit"
SECONDS=0
if run timeout QBENCH="$fake/hangs" QBENCH_TIMEOUT=2; then fail "a hung check exited 0"; fi
[ "$SECONDS" -le 10 ] || fail "a 2 s QBENCH_TIMEOUT took $SECONDS s"
drained_with 'qbench: timeout after 2 s (qbench check --level quick)'

echo "== a passing check afterwards resumes the node"
resumes

echo "== QBENCH naming a file that is not there: drained 'qbench: binary not found'"
if run missing QBENCH="$dir/no/such/qbench"; then fail "a missing binary exited 0"; fi
drained_with "qbench: binary not found: $dir/no/such/qbench"
if run missing-name QBENCH=qbench-not-installed; then fail "a binary not on PATH exited 0"; fi
drained_with "qbench: binary not found: qbench-not-installed"
if run not-executable QBENCH="$dir/impossible.toml"; then fail "a binary that cannot run exited 0"; fi
drained_with "qbench: cannot execute $dir/impossible.toml"

echo "== WARN lines with exit 0: no drain; qbench's drain is resumed"
run warns QBENCH="$fake/warns" || fail "a check that only warned exited $?: $(cat "$dir/warns.err")"
"$cluster" wait "$dir" idle 30
run warns-again QBENCH="$fake/warns" || fail "a check that only warned exited $?"
"$cluster" wait "$dir" idle 5
[ -z "$("$cluster" reason "$dir")" ] || fail "a check that only warned drained the node: $("$cluster" reason "$dir")"

echo "== a qbench that ignores TERM: KILLed 5 s after QBENCH_TIMEOUT=2, drained 'qbench: timeout', nothing left running"
SECONDS=0
if run ignores-term QBENCH="$fake/ignores-term" QBENCH_TIMEOUT=2; then fail "a check that ignored TERM exited 0"; fi
[ "$SECONDS" -le 15 ] || fail "QBENCH_TIMEOUT=2 and the 5 s KILL took $SECONDS s"
drained_with 'qbench: timeout after 2 s (qbench check --level quick)*'
read -r -a left <"$fake/ignores-term.pids"
for _ in $(seq 50); do
    alive=""
    for pid in "${left[@]}"; do
        [ -e "/proc/$pid" ] && [ "$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)" != Z ] && alive="$alive $pid"
    done
    [ -z "$alive" ] && break
    sleep 0.1
done
[ -z "$alive" ] || fail "the timed-out check left process(es)$alive running"
resumes "$fake/passes"

if command -v cc >/dev/null; then
    echo "== a qbench whose shared library is gone: drained 'qbench: cannot execute' with the loader's words"
    printf 'int qbench_gone(void) { return 0; }\n' >"$dir/gone.c"
    printf 'int qbench_gone(void);\nint main(void) { return qbench_gone(); }\n' >"$dir/main.c"
    cc -shared -fPIC -o "$dir/libqbenchgone.so" "$dir/gone.c"
    cc -o "$fake/needs-lib" "$dir/main.c" -L"$dir" -lqbenchgone
    rm "$dir/libqbenchgone.so"
    if run needs-lib QBENCH="$fake/needs-lib"; then fail "a binary without its library exited 0"; fi
    drained_with "qbench: cannot execute $fake/needs-lib: libqbenchgone.so: cannot open shared object file*"
    resumes "$fake/passes"
else
    echo "== (no cc: the missing shared library case is skipped)"
fi
