#!/usr/bin/env bash
# qbench copy's NUMA binding on the H200 machine: the host<->GPU tests with
# --numa auto (the GPU's node, the default), off (nothing bound) and 0 (node
# 0, which every NUMA kernel lists), each run's JSON kept, the placement each
# test read back from the kernel (thread CPUs, memory policy, where the
# pinned and pageable buffers' pages are) summarised, the 1 GiB figures of
# the three runs side by side, a launch narrowed to one CPU (taskset) to
# show the binding keeps within it, and a node that does not exist (exit 2).
# The log starts with the machine's NUMA layout (numactl -H or lscpu, the
# kernel's node list, each GPU's numa_node) so that the run is described.
#
# Usage (GPU machine): bash results/h200/numa/run-numa-h200.sh QBENCH_BINARY OUT_DIR
#   OUT_DIR receives run.log, h200-copy-numa-{auto,off,0}.json and .txt,
#   h200-copy-numa-taskset.json and h200-probe-numa.json.
set -u
Q=$(realpath "${1:?usage: run-numa-h200.sh QBENCH_BINARY OUT_DIR}")
OUT=${2:?usage: run-numa-h200.sh QBENCH_BINARY OUT_DIR}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
exec > >(tee "$OUT/run.log") 2>&1
export NCCL_NVLS_ENABLE=0
step() { echo; echo "=== $(date +%T) +${SECONDS}s $*"; }
want() { echo "rc=$1 (want $2)"; }
TESTS=host_device,zero_copy,latency_h2d,latency_d2h

step machine
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv
timeout 30 nvidia-smi topo -m
nproc; grep Cpus_allowed_list /proc/self/status
if command -v numactl > /dev/null; then timeout 30 numactl -H; else echo "numactl: not installed"; fi
lscpu | grep -iE '^(model name|socket|numa)'
for n in /sys/devices/system/node/node*; do
    [ -e "$n/cpulist" ] && echo "$(basename "$n"): CPUs $(cat "$n/cpulist"), $(awk '/MemTotal/ { print $4, $5 }' "$n/meminfo" 2> /dev/null)"
done
ls -d /sys/devices/system/node/node* > /dev/null 2>&1 || echo "no /sys/devices/system/node/node*: the kernel lists no NUMA node"
for b in $(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader); do
    # 00000000:00:06.0 as sysfs spells it: 0000:00:06.0
    s=$(echo "$b" | tr 'A-F' 'a-f' | sed -E 's/^0*([0-9a-f]{4}):/\1:/')
    echo "GPU $b: /sys/bus/pci/devices/$s/numa_node = $(cat "/sys/bus/pci/devices/$s/numa_node" 2>&1)"
done

step "probe: the NUMA nodes section and each GPU's node"
timeout 60 "$Q" probe | sed -n '/^NUMA nodes/,/^GPUs/p'
timeout 60 "$Q" probe --json > "$OUT/h200-probe-numa.json"; echo "probe --json rc=$?"

for mode in auto off 0; do
    step "copy --test $TESTS --numa $mode"
    timeout 300 "$Q" copy --test "$TESTS" --numa "$mode" -J "$OUT/h200-copy-numa-$mode.json" > "$OUT/h200-copy-numa-$mode.txt"
    want $? 0
    grep -E '^# NUMA|^## |^#  numa:|^#  wrong|^ 1073741824 |^ +16777216 \|' "$OUT/h200-copy-numa-$mode.txt"
done

step "launched on one CPU (taskset -c 0): --numa 0 keeps the thread on it"
timeout 120 taskset -c 0 "$Q" copy --test h2d_pinned,h2d_pageable -b 64M -e 64M --numa 0 -J "$OUT/h200-copy-numa-taskset.json" | grep -E '^#  numa:|^ +67108864'
want "${PIPESTATUS[0]}" 0

step "a node that does not exist, and a value that is no node: one line, exit 2"
timeout 30 "$Q" copy --numa 4096; want $? 2
timeout 30 "$Q" copy --numa=near; want $? 2

step "what each run read back: per test and GPU, the node bound to, CPUs, memory policy, pages by node, notes"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
runs = {m: json.load(open(f"{out}/h200-copy-numa-{m}.json")) for m in ("auto", "off", "0", "taskset")}
for mode, run in runs.items():
    print(f"--numa {mode if mode != 'taskset' else '0 under taskset -c 0'} (config.numa = {run['config'].get('numa')})")
    for t in run["tests"]:
        for h in t.get("numa", []):
            pages = ", ".join(f"{p['pages']} on node {p['node']}" for p in h["memory_pages"]) or "none found"
            print(f"  {t['name']:<14} GPU {h['gpu']} node {h['node']} (GPU's {h['device_node']}): CPUs {h['cpus']} nodes {h['cpu_nodes']}, "
                  f"policy {h['memory_policy']}, pages {pages}; notes {h['notes']}")
        if t["status"] == "ran" and t["family"] in ("host_device", "zero_copy", "latency") and not t.get("numa"):
            print(f"  {t['name']}: MISSING placement")
print()
print("1 GiB figures (median GB/s of each row's total), GPU by GPU: auto / off / 0")
def figures(run):
    return {(t["name"], r["placement"]): r["total_gbps"]["median"] for t in run["tests"] for r in t["rows"] if r["size"] == 1 << 30}
a, o, z = (figures(runs[m]) for m in ("auto", "off", "0"))
for k in sorted(a):
    print(f"  {k[0]:<14} {k[1]:<10} {a[k]:8.2f} {o.get(k, float('nan')):8.2f} {z.get(k, float('nan')):8.2f}")
PY
step done
