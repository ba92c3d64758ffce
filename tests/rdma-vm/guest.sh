#!/bin/sh
# The checks tests/rdma-vm/run runs inside its virtual machine, as root,
# with rxe0 and rxe1 up: qbench rdma for real between two soft-RoCE
# adapters, perftest's timing and path options (perftest.sh), the
# exchange's rdma wire between two MPI processes (wires.sh), then perftest
# at the same sizes for the ratio.
# Usage: guest.sh QBENCH OUTDIR
# Run from the guest's memory: every exec from the host's file system
# (9p, emulated) costs seconds.
Q=/tmp/qbench.bin
cp "$1" $Q && chmod +x $Q || exit 1
OUT=$2
N=${RDMA_VM_ITERS:-100}
# shellcheck source=tests/rdma-vm/lib.sh
. "$(dirname "$0")/lib.sh"

# agree NAME PROBE_JSON RECORD_JSON: every endpoint of the rdma record is a
# port and GID of probe's facts (probe and rdma read the same sysfs facts).
agree() {
  if out=$(python3 - "$2" "$3" <<'PY'
import json, sys
facts = json.load(open(sys.argv[1]))["facts"]["rdma"]["devices"]
gids = {(d["name"], p["port"], g["index"]): g["gid"] for d in facts for p in d["ports"] for g in p["gids"]}
ends = [e for l in json.load(open(sys.argv[2]))["links"] for e in (l["local"], l["remote"])]
bad = [e for e in ends if gids.get((e["device"], e["port"], e["gid_index"])) != e["gid"]]
print(f"{len(ends)} endpoints" if ends and not bad else f"{len(ends)} endpoints, not in probe's facts: {bad}")
sys.exit(1 if bad or not ends else 0)
PY
  ); then pass "$1: $out"; else fail "$1: $out"; fi
}

T="timeout 300"

section "the adapters, as probe and libibverbs see them"
ibv_devices
# One probe (it reads much of the emulated file system): its JSON.
$Q probe --json > "$OUT/probe.json" 2> "$OUT/probe.err"
# Each port ACTIVE, Ethernet, with a RoCE v2 GID, in probe's facts; its
# check names the netdev that carries it (rxe's, found through its GIDs).
if out=$(python3 - "$OUT/probe.json" <<'PY'
import json, sys
probe = json.load(open(sys.argv[1]))
ports = {(d["name"], p["port"]): p for d in probe["facts"]["rdma"]["devices"] for p in d["ports"]}
found = {c["check"]: c["found"] for c in probe["checks"]}
said = []
for i, name in enumerate(["rxe0", "rxe1"]):
    p = ports.get((name, 1), {})
    ok = (p.get("state") or {}).get("name") == "ACTIVE" and p.get("link_layer") == "Ethernet"
    ok = ok and any(g.get("kind") == "RoCE v2" for g in p.get("gids", []))
    line = found.get(f"rdma.port {name}/1", "")
    if not ok or not line.endswith(f"netdev veth{i}"):
        sys.exit(f"{name}/1: {p} ({line})")
    said.append(f"{name}/1 {line}")
for c in probe["checks"]:
    if c["check"].startswith("rdma."):
        print(f"{c['check']:<17} {c['status']:<5} {c['found']}", file=sys.stderr)
print("; ".join(said))
PY
); then
  pass "probe reports rxe0 and rxe1 as active RoCE v2 ports: $out"
else
  fail "probe does not report rxe0 and rxe1 as active RoCE v2 ports: $out"
fi

section "server and client: all six tests, rxe1 serves, rxe0 connects"
$T $Q rdma --server -d rxe1 -x 0 --test all -n "$N" -p 18515 -J "$OUT/server.json" > "$OUT/server.log" 2>&1 &
srv=$!
$T $Q rdma -d rxe0 -x 0 --test all -n "$N" -p 18515 -J "$OUT/client.json" 127.0.0.1 > "$OUT/client.log" 2>&1
rc=$?
cat "$OUT/client.log"
check "client, --test all" 0 "$OUT/client.log"
wait $srv; rc=$?
check "server, --test all" 0 "$OUT/server.log"
clean "client records" "$OUT/client.json"
clean "server records" "$OUT/server.json"
agree "probe and the client's records" "$OUT/probe.json" "$OUT/client.json"

section "server and client: both directions (-b) on 4 queue pairs (-q 4) of 16 requests (-t 16)"
$T $Q rdma --server -d rxe1 -x 0 --test write_bw,read_bw,send_bw -b -q 4 -t 16 -n "$N" -p 18516 > "$OUT/server-b.log" 2>&1 &
srv=$!
$T $Q rdma -d rxe0 -x 0 --test write_bw,read_bw,send_bw -b -q 4 -t 16 -n "$N" -p 18516 -J "$OUT/client-b.json" 127.0.0.1 > "$OUT/client-b.log" 2>&1
rc=$?
grep -E '^ [0-9]' "$OUT/client-b.log"
check "client -b -q 4 -t 16" 0 "$OUT/client-b.log"
wait $srv; rc=$?
check "server -b -q 4 -t 16" 0 "$OUT/server-b.log"
clean "-b -q 4 -t 16 records" "$OUT/client-b.json"

section "loopback: every test, then a bandwidth and a latency test at every size (-a)"
$T $Q rdma --loopback -x 0 --test all -n "$N" -J "$OUT/loopback.json" --csv "$OUT/loopback.csv" > "$OUT/loopback.log" 2>&1
rc=$?
grep -E '^ [0-9]|RDMA|Send' "$OUT/loopback.log"
check "loopback --test all" 0 "$OUT/loopback.log"
clean "loopback records" "$OUT/loopback.json"
agree "probe and the loopback records" "$OUT/probe.json" "$OUT/loopback.json"
lines=$(grep -c . "$OUT/loopback.csv")
if [ "$lines" = 7 ]; then pass "loopback CSV: a header and 6 rows"; else fail "loopback CSV: $lines lines"; fi
# Every size of one WRITE and one READ test: the sizes above the MTU, the
# 8 MiB READ response bursts, the moderation -a keeps. (All six at every
# size took ~130 s here; the six at their sizes ran above, both ways.)
$T $Q rdma --loopback -x 0 --test write_bw,read_lat -a -n 5 -J "$OUT/loopback-a.json" > "$OUT/loopback-a.log" 2>&1
rc=$?
check "loopback -a" 0 "$OUT/loopback-a.log"
clean "loopback -a records (2 B to 8 MiB, 23 sizes x 2 tests)" "$OUT/loopback-a.json"

section "numa: each side's thread and buffers bound per --numa, as the kernel answers"
for mode in auto off 0; do
  $T $Q rdma --loopback -x 0 --test write_bw -s 65536 -n 20 --numa $mode -J "$OUT/numa-$mode.json" > "$OUT/numa-$mode.log" 2>&1
  rc=$?
  check "loopback --numa $mode" 0 "$OUT/numa-$mode.log"
  grep '^ numa' "$OUT/numa-$mode.log"
done
# Node 0 (the guest has one): the thread on its CPUs, the policy preferring
# it, every page of the buffers there. Auto: the adapter's numa_node file
# decides (rxe sits on no PCI device, so usually nothing is bound). Off:
# nothing bound, the default policy.
if out=$(python3 - "$OUT" <<'PY'
import json, os, sys
def side(mode):
    link = json.load(open(f"{sys.argv[1]}/numa-{mode}.json"))["links"][0]
    return link["local"]["device"], link["numa"]
dev, b = side("0")
node0 = open("/sys/devices/system/node/node0/cpulist").read().strip()
pages = {p["node"]: p["pages"] for p in b["memory_pages"]}
if not (b["node"] == 0 and b["cpus"] == node0 and b["cpu_nodes"] == [0] and b["memory_policy"] == "preferred 0"
        and list(pages) == [0] and pages[0] >= 32 and not b["notes"]):
    sys.exit(f"--numa 0: {b}")
_, a = side("auto")
f = f"/sys/class/infiniband/{dev}/device/numa_node"
n = int(open(f).read()) if os.path.exists(f) else None
want = {None: f"not bound: {dev}'s NUMA node is unknown", -1: f"not bound: the kernel gives {dev} no NUMA node"}
if (n is not None and n >= 0 and a["node"] != n) or (n in want and not a["notes"][0].startswith(want[n])):
    sys.exit(f"--numa auto with {f} {n}: {a}")
_, o = side("off")
if o["node"] is not None or o["notes"] != ["not bound (--numa off)"] or o["memory_policy"] != "default":
    sys.exit(f"--numa off: {o}")
print(f"node 0: CPUs {b['cpus']}, {pages[0]} pages on node 0; auto ({f}: {n}): {a['notes'][:1] or a['node']}; off: unbound")
PY
); then pass "numa placements read back: $out"; else fail "numa placements: $out"; fi

section "one corrupted byte is caught (QBENCH_CORRUPT=rdma flips byte 0 of every source)"
QBENCH_CORRUPT=rdma $T $Q rdma --loopback -x 0 --test all -n 20 -J "$OUT/corrupt.json" > "$OUT/corrupt.log" 2> "$OUT/corrupt.err"
rc=$?
grep -E '^ [0-9]|^# ' "$OUT/corrupt.log"
faulted "loopback, corrupted" 1 "bytes arrived different" "$OUT/corrupt.err"
if grep -q '"fault": "QBENCH_CORRUPT=rdma:0' "$OUT/corrupt.json"; then pass "the record names the fault"; else fail "the record does not name the fault"; fi
QBENCH_CORRUPT=rdma:x $T $Q rdma --loopback -x 0 2> "$OUT/e.err"; rc=$?
one_line "a fault that does not parse" 2 "expected RANK" "$OUT/e.err"
$T $Q rdma --server -d rxe1 -x 0 --test write_bw -n 20 -p 18517 > /dev/null 2> "$OUT/corrupt-server.err" &
srv=$!
QBENCH_CORRUPT=rdma:4095 $T $Q rdma -d rxe0 -x 0 --test write_bw -n 20 -p 18517 127.0.0.1 > "$OUT/corrupt-client.log" 2> "$OUT/corrupt-client.err"
rc=$?
faulted "client sends one wrong byte" 1 "1 bytes arrived different" "$OUT/corrupt-client.err"
wait $srv; rc=$?
one_line "server received it" 1 "1 bytes arrived different" "$OUT/corrupt-server.err"

section "one line each, never a hang"
$T $Q rdma --loopback -d mlx5_9,rxe1 2> "$OUT/e.err"; rc=$?
one_line "unknown device" 3 "no RDMA device named 'mlx5_9'" "$OUT/e.err"
$T $Q rdma --loopback -x 5 2> "$OUT/e.err"; rc=$?
one_line "GID index that does not exist" 2 "GID index 5 does not exist" "$OUT/e.err"
$T $Q rdma -d rxe0 -x 0 -p 18601 --timeout 1 127.0.0.1 2> "$OUT/e.err"; rc=$?
one_line "nobody listening" 4 "no qbench rdma server answered" "$OUT/e.err"
sleep 30 | busybox nc -l -p 18602 > /dev/null &
nc=$!
listening 18602
$T $Q rdma -d rxe0 -x 0 -p 18602 --timeout 2 127.0.0.1 2> "$OUT/e.err"; rc=$?
one_line "a server that never answers" 4 "within 2 s" "$OUT/e.err"
kill $nc 2> /dev/null
$T $Q rdma --server -d rxe1 -x 0 -s 4096 -p 18603 > /dev/null 2> "$OUT/e-server.err" &
srv=$!
$T $Q rdma -d rxe0 -x 0 -s 8192 -p 18603 127.0.0.1 > /dev/null 2> "$OUT/e.err"; rc=$?
one_line "sides that disagree on sizes (client)" 2 "disagree (-s 8192 here, -s 4096 there)" "$OUT/e.err"
wait $srv; rc=$?
one_line "sides that disagree on sizes (server)" 2 "disagree (-s 4096 here, -s 8192 there)" "$OUT/e-server.err"
for case in "garbage|GET / HTTP/1.0\r\n\r\n|4|not a qbench rdma peer" \
            "a port scanner||4|port scanner" \
            "another version|QBRD\007\000\001\000\000\000\000\000|2|version 7" \
            "a truncated message|QBRD\002\000\001\000\040\000\000\000\001|4|truncated" \
            "an oversized message|QBRD\002\000\001\000\377\377\377\000|4|exceeds the limit"; do
  name=${case%%|*}; rest=${case#*|}; bytes=${rest%%|*}; rest=${rest#*|}; code=${rest%%|*}; text=${rest#*|}
  $T $Q rdma --server -d rxe1 -x 0 -p 18604 --timeout 20 > "$OUT/e-server.log" 2> "$OUT/e-server.err" &
  srv=$!
  listening 18604
  printf "$bytes" | timeout 10 busybox nc 127.0.0.1 18604 > /dev/null
  wait $srv; rc=$?
  one_line "the server fed $name" "$code" "$text" "$OUT/e-server.err"
done

section "qbench check: rdma steps between rxe0 and rxe1 (tests/rdma-vm/rxe.toml)"
P=$(dirname "$0")/rxe.toml
$T $Q check --profile "$P" --json > "$OUT/check-rxe.json" 2> "$OUT/check-rxe.err"
rc=$?
check "check, rdma steps" 0 "$OUT/check-rxe.err"
if python3 - "$OUT/check-rxe.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
steps = [r for r in rows if r["kind"] == "rdma"]
for r in rows:
    print(f"  {r['step']:<36} {r.get('place') or '':<12} {r['status']:<5} {r['found']}")
sys.exit(0 if len(steps) == 2 and all(r["status"] == "PASS" and r.get("place") == "rxe0→rxe1" for r in steps) else 1)
PY
then pass "check: both rdma steps PASS on rxe0→rxe1"; else fail "check: the rdma steps did not both PASS on rxe0→rxe1"; fi
sed 's/floor = 0.0001/floor = 1000000.0/' "$P" > /tmp/rxe-fast.toml
$T $Q check --profile /tmp/rxe-fast.toml --quiet > "$OUT/check-fast.log" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q "RDMA write 64K" "$OUT/check-fast.log"; then
  pass "check: a floor the link cannot reach is NOT READY (exit 1): $(head -1 "$OUT/check-fast.log")"
else
  fail "check: a floor the link cannot reach: exit $rc"; cat "$OUT/check-fast.log"
fi

section "pairs of MPI ranks: rank 0 on rxe0 is the client of rank 1 on rxe1"
if command -v mpirun > /dev/null; then
  export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader OMPI_MCA_plm_rsh_agent=false
  $T mpirun --allow-run-as-root --oversubscribe -np 2 $Q rdma -x 0 --test all -n "$N" -J "$OUT/mpi.json" > "$OUT/mpi.log" 2>&1
  rc=$?
  grep -E '^ [0-9]|RDMA|Send|built without' "$OUT/mpi.log"
  if grep -q "built without MPI support" "$OUT/mpi.log"; then
    echo "SKIP: this qbench was built without the mpi feature"
  else
    check "mpirun -np 2 --test all" 0 "$OUT/mpi.log"
    clean "MPI records" "$OUT/mpi.json"
  fi
else
  echo "SKIP: no mpirun"
fi

. "$(dirname "$0")/perftest.sh"

. "$(dirname "$0")/wires.sh"

R=${RDMA_VM_REPEATS:-1}
section "qbench / perftest, same guest, same sizes and iterations (BW average, MiB/s, best of $R)"
# Emulated links are noisy, and the noise only ever slows a run down (the
# emulator, the host, the soft-RoCE threads): each figure is the best of
# $R runs, the two programs taking turns.
port=18700
# bw PROGRAM VERB SIZE N: one server/client run; prints the client's BW average.
bw() {
  port=$((port + 1))
  if [ "$1" = perftest ]; then
    $T ib_$2_bw -d rxe1 -x 0 -F -s $3 -n $4 -p $port > "$OUT/bw-server.log" 2>&1 &
    srv=$!
    listening $port
    $T ib_$2_bw -d rxe0 -x 0 -F -s $3 -n $4 -p $port 127.0.0.1 > "$OUT/bw-client.log" 2>&1
  else
    $T $Q rdma --server -d rxe1 -x 0 --test $2_bw -s $3 -n $4 -p $port > "$OUT/bw-server.log" 2>&1 &
    srv=$!
    $T $Q rdma -d rxe0 -x 0 --test $2_bw -s $3 -n $4 -p $port 127.0.0.1 > "$OUT/bw-client.log" 2>&1
  fi
  wait $srv
  awk -v s=$3 '$1 == s { print $4 }' "$OUT/bw-client.log" | tail -1
}
best() { tr ' ' '\n' | grep . | sort -g | tail -1; }
printf 'test\tbytes\titerations\truns\tperftest_MiB_s\tqbench_MiB_s\tratio\n' > "$OUT/ratios.tsv"
for verb in write read; do
  for size in 65536 262144 1048576; do
    # About 16 MiB a run: a steady figure in little emulated time.
    n=$((16777216 / size))
    [ $n -lt 32 ] && n=32
    pts=""
    qbs=""
    i=0
    while [ $i -lt "$R" ]; do
      pts="$pts $(bw perftest $verb $size $n)"
      qbs="$qbs $(bw qbench $verb $size $n)"
      i=$((i + 1))
    done
    pt=$(echo "$pts" | best)
    qb=$(echo "$qbs" | best)
    if [ -n "$pt" ] && [ -n "$qb" ]; then
      ratio=$(awk -v a="$qb" -v b="$pt" 'BEGIN { printf "%.2f", a / b }')
      printf '%s_bw\t%s\t%s\t%s\t%s\t%s\t%s\n' $verb $size $n $R "$pt" "$qb" "$ratio" >> "$OUT/ratios.tsv"
      pass "${verb}_bw $size B x $n: perftest$pts -> $pt, qbench$qbs -> $qb MiB/s, ratio $ratio"
    else
      fail "${verb}_bw $size B: no figure (perftest '$pts', qbench '$qbs')"
      cat "$OUT/bw-client.log"
    fi
  done
done
column -t "$OUT/ratios.tsv" 2> /dev/null || cat "$OUT/ratios.tsv"

echo
echo "rdma-vm: $passed passed, $failed failed"
[ "$failed" = 0 ]
