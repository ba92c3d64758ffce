#!/usr/bin/env bash
# The nccl-tests, OSU and JSON dialects on one H200, each beside its anchor
# in the same job: the GPU unit tests (every collective's check kernel
# against the host, gather, scatter and hypercube among them); nccl-tests'
# all_reduce_perf and qbench allreduce with -R 0, 1 and 2 in alternating
# rounds; each nccl-tests mode (-z, -C, -u, -I/-K, -S, -M, -x) run by both;
# gather, scatter and hypercube by both; the -I JSON of both read by
# nccl-tests' own tools/analyze_perf_json.py; qbench's osu_* beside OSU 7.4
# (results/ref/run-osu-compare.sh) and `osu_bw -d cuda D D`; gdrcopy's tests
# where gdrdrv is absent (the dma-buf path); probe's facts; alltoallv by
# both at three spreads; the copy tests under nvbandwidth's names (the SM
# copy both ways, the pointer chases), twice, and a corrupted chase caught.
#
# Usage (repository root, on the GPU machine):
#   bash results/h200/dialects/run-dialects-h200.sh BIN_DIR OUTDIR
#     BIN_DIR  qbench (built with --features mpi,rdma) and qbench-unit-tests
#              (the unit-test binary of src/lib.rs), built on the Rust machine
#     OUTDIR   gets log.txt, machine.txt, build.log, raw.tgz (every table and
#              JSON), osu/ (the OSU comparison)
# Needs .ref/nccl-tests (results/ref/stage-nccl-tests.sh) and .ref/osu-bin
# (OSU's five programs, built from results/ref/stage-osu.sh's tree) in the
# work tree. Every step runs under `timeout`; STAGES (default "unit build
# register control modes rooted mulsum json osu gdrcopy probe"; add
# alltoallv, fp8 and copies for those) picks the
# parts to run; OSU_ROUNDS the OSU comparison's rounds (2);
# every other BIN_DIR/qbench-<label> (an earlier build, a variant) runs
# beside both in the control stage.
set -u
BIN=$(readlink -f "$1")
OUT=$2
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
STAGES=${STAGES:-unit build register control modes rooted mulsum json osu gdrcopy probe}
Q=$BIN/qbench
T=$BIN/qbench-unit-tests
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NCCL_HOME=${NCCL_HOME:-/usr}
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
RAW=$(mktemp -d /tmp/qbench-dialects.XXXXXX)
NT=/tmp/qbench-nccl-tests/build
exec > >(tee -a "$OUT/log.txt") 2>&1
step() { echo; echo "=== $(date +%T) +${SECONDS}s $*"; }
want() { echo "rc=$1 (want $2)"; }
on() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
pack() { tar czf "$OUT/raw.tgz" -C "$RAW" . ; }

step machine
{
    date -u '+%Y-%m-%d %H:%M:%S UTC'
    nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total,compute_cap --format=csv
    nvidia-smi topo -m 2>/dev/null | head -3
    grep -h '^#define NCCL_\(MAJOR\|MINOR\|PATCH\)' "$NCCL_HOME/include/nccl.h"
    mpirun --version 2>&1 | head -1
    echo "cores $(nproc); NUMA nodes: $(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l)"
    "$Q" --version
    cat "$ROOT/.ref/nccl-tests/QBENCH_REF" 2>/dev/null
    echo "NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
} 2>&1 | tee "$OUT/machine.txt"

if on unit; then
    step "GPU unit tests: every collective's check kernel against the host"
    timeout 300 "$T" --ignored --test-threads 1 2>&1 | tail -8
    want "${PIPESTATUS[0]}" 0
fi

if on build; then
    step "build nccl-tests all_reduce, gather, scatter, hypercube, alltoallv (sm_90)"
    rm -rf /tmp/qbench-nccl-tests && cp -r "$ROOT/.ref/nccl-tests" /tmp/qbench-nccl-tests
    t0=$SECONDS
    timeout 300 make -C /tmp/qbench-nccl-tests/src -j"$(nproc)" MPI=0 NCCL_HOME="$NCCL_HOME" CUDA_HOME="$CUDA_HOME" \
        NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR="$NT" \
        "$NT/all_reduce_perf" "$NT/gather_perf" "$NT/scatter_perf" "$NT/hypercube_perf" "$NT/alltoallv_perf" > "$OUT/build.log" 2>&1
    echo "build rc=$? $((SECONDS - t0)) s"
fi

# nccl-tests' program and qbench's subcommand of one run, with the same
# arguments, to RAW/<name>-{nccl,qbench}.{txt,json}; the order swapped when
# $SWAP is 1.
pair() { # NAME PROGRAM SUBCOMMAND ARGS...
    local name=$1 prog=$2 sub=$3
    shift 3
    local a=(timeout 120 "$NT/$prog" "$@" -J "$RAW/$name-nccl.json")
    local b=(timeout 120 "$Q" "$sub" "$@" -J "$RAW/$name-qbench.json")
    if [ "${SWAP:-0}" = 1 ]; then
        "${b[@]}" > "$RAW/$name-qbench.txt" 2>&1; local rb=$?
        "${a[@]}" > "$RAW/$name-nccl.txt" 2>&1; local ra=$?
    else
        "${a[@]}" > "$RAW/$name-nccl.txt" 2>&1; local ra=$?
        "${b[@]}" > "$RAW/$name-qbench.txt" 2>&1; local rb=$?
    fi
    echo "$name: nccl-tests rc=$ra, qbench rc=$rb; qbench wrong cells: $(awk '!/^#/ && NF > 8 && ($9 != "0" || ($13 != "0" && $13 != "N/A"))' "$RAW/$name-qbench.txt" | wc -l)"
}

if on register; then
    step "-R 0/1/2: nccl-tests all_reduce_perf beside qbench allreduce, 8 B..1 GiB, two rounds"
    for round in 1 2; do
        for r in 0 1 2; do
            SWAP=$((round % 2 == 0)) pair "register-R$r-r$round" all_reduce_perf allreduce -b 8 -e 1G -f 4 -g 1 -n 50 -w 10 -R $r
        done
    done
    grep -h '^# Buffers\|Option -R' "$RAW"/register-R*-qbench.txt | sort | uniq -c
    pack
fi

if on control; then
    step "clock: the kernel's clock source and the cost of reading the time"
    cat /sys/devices/system/clocksource/clocksource0/current_clocksource
    python3 -c 'import time; n=200000; t=time.perf_counter(); [time.monotonic_ns() for _ in range(n)]; print("monotonic_ns: %.0f ns a call (python)" % ((time.perf_counter()-t)/n*1e9))'
    step "small messages, three rounds: nccl-tests, qbench and every other qbench-<label> of BIN_DIR, -n 1000 -w 100"
    for round in 1 2 3; do
        for tool in nccl qbench $(cd "$BIN" && ls qbench-* 2>/dev/null | grep -v unit-tests); do
            case $tool in
                nccl) cmd=("$NT/all_reduce_perf") ;;
                *) cmd=("$BIN/$tool" allreduce) ;;
            esac
            timeout 120 "${cmd[@]}" -b 8 -e 8K -f 4 -g 1 -n 1000 -w 100 -J "$RAW/control-r$round-$tool.json" > "$RAW/control-r$round-$tool.txt" 2>&1
            echo "control round $round $tool: rc=$?"
        done
    done
    pack
fi

if on modes; then
    step "nccl-tests' modes, each run by both (64K..256M)"
    for m in "-z 1" "-z 2" "-z 3" "-C 1" "-u 3" "-I 1 -K 2" "-S 1" "-M 1" "-x 1" "-x 2"; do
        name="mode$(echo "$m" | tr -d ' ')"
        # shellcheck disable=SC2086
        pair "$name" all_reduce_perf allreduce -b 64K -e 256M -f 16 -g 1 -n 20 -w 5 $m
        diff <(grep '^#  *size\|^#  *(B)' "$RAW/$name-nccl.txt") <(grep '^#  *size\|^#  *(B)' "$RAW/$name-qbench.txt") > /dev/null \
            && echo "  column heads: the same" || echo "  column heads differ"
    done
    grep -h 'GPU memory usage' "$RAW"/mode-M1-*.txt
    pack
fi

if on rooted; then
    step "gather, scatter, hypercube by both, every type (1K..64M)"
    for c in gather scatter hypercube; do
        pair "$c" "${c}_perf" "$c" -b 1K -e 64M -f 8 -g 1 -d all -n 20 -w 5
    done
    pack
fi

if on mulsum; then
    step "-o mulsum (PreMulSum): all_reduce beside nccl-tests, reduce and reduce_scatter, every type"
    pair mulsum all_reduce_perf allreduce -b 1K -e 64M -f 8 -g 1 -d all -o mulsum -n 20 -w 5
    for c in reduce reducescatter; do
        timeout 120 "$Q" $c -b 1K -e 64M -f 8 -g 1 -d all -o mulsum -n 20 -w 5 > "$RAW/mulsum-$c.txt" 2>&1
        echo "$c -o mulsum: rc=$?; wrong cells: $(awk '!/^#/ && NF > 8 && ($9 != "0" || ($13 != "0" && $13 != "N/A"))' "$RAW/mulsum-$c.txt" | wc -l), rows $(grep -vc '^#' "$RAW/mulsum-$c.txt")"
    done
    pack
fi

if on json; then
    step "-I 1 JSON of both through nccl-tests' tools/analyze_perf_json.py"
    timeout 120 "$NT/all_reduce_perf" -b 1K -e 256M -f 16 -g 1 -n 30 -I 1 -K 2 -J "$RAW/json-nccl.json" > "$RAW/json-nccl.txt" 2>&1
    echo "nccl-tests rc=$?"
    timeout 120 "$Q" allreduce -b 1K -e 256M -f 16 -g 1 -n 30 -I 1 -K 2 --format nccl-tests -J "$RAW/json-qbench.json" > "$RAW/json-qbench.txt" 2>&1
    echo "qbench rc=$?"
    for who in nccl qbench; do
        timeout 60 python3 /tmp/qbench-nccl-tests/tools/analyze_perf_json.py "$RAW/json-$who.json" --all > "$RAW/analyze-$who.txt" 2>&1
        echo "analyze_perf_json.py on $who's file: rc=$?"
        head -30 "$RAW/analyze-$who.txt"
    done
    pack
fi

if on osu; then
    step "osu_* beside OSU 7.4, host memory, OSU_ROUNDS rounds (2); then GPU buffers"
    ROUNDS=${OSU_ROUNDS:-2} NP=4 timeout 500 bash "$ROOT/results/ref/run-osu-compare.sh" "$Q" "$ROOT/.ref/osu-bin" "$OUT/osu" | tail -8
    tar czf "$OUT/osu/raw.tgz" -C "$OUT/osu" osu-raw && rm -rf "$OUT/osu/osu-raw"
    timeout 60 mpirun --allow-run-as-root --oversubscribe -np 2 "$Q" osu_bw -d cuda D D -m 1M > "$RAW/osu-bw-DD.txt" 2>&1
    echo "osu_bw -d cuda D D: rc=$? (3 where MPI is not CUDA-aware)"; tail -3 "$RAW/osu-bw-DD.txt"
    pack
fi

if on gdrcopy; then
    step "gdrcopy without gdrdrv: the dma-buf path"
    timeout 120 "$Q" copy --test gdrcopy -J "$RAW/gdrcopy.json" > "$RAW/gdrcopy.txt" 2>&1
    echo "copy --test gdrcopy: rc=$?"
    python3 - "$RAW/gdrcopy.json" <<'PY'
import json, sys
for t in json.load(open(sys.argv[1]))["tests"]:
    print(t["name"], t["status"], "-", t.get("reason"), "| rows", len(t["rows"]), "| wrong", t["wrong_words"])
PY
    pack
fi

if on alltoallv; then
    step "alltoallv by both at spreads 1 (the default), 0 and 0.3, every type (1K..1G)"
    for sp in 1 0 0.3; do
        NCCL_TESTS_ALLTOALLV_SPREAD=$sp pair "alltoallv-s$sp" alltoallv_perf alltoallv -b 1K -e 1G -f 8 -g 1 -d all -n 20 -w 5
        diff <(awk '!/^#/ && NF > 8 {print $1, $2, $3}' "$RAW/alltoallv-s$sp-nccl.txt") \
             <(awk '!/^#/ && NF > 8 {print $1, $2, $3}' "$RAW/alltoallv-s$sp-qbench.txt") > /dev/null \
            && echo "  size, count and type columns: the same" || echo "  size, count or type columns differ"
    done
    step "alltoallv under a traffic matrix (NCCL_TESTS_ALLTOALLV_MATRIX_FILE, its first cell 64 MiB for one rank), by both"
    printf '67108864 1 2 3\n4 5 6 7\n8 9 10 11\n12 13 14 15\n' > "$RAW/traffic.txt"
    NCCL_TESTS_ALLTOALLV_MATRIX_FILE="$RAW/traffic.txt" pair alltoallv-matrix alltoallv_perf alltoallv -b 64M -e 64M -g 1 -d all -n 20 -w 5
    diff <(awk '!/^#/ && NF > 8 {print $1, $2, $3}' "$RAW/alltoallv-matrix-nccl.txt") \
         <(awk '!/^#/ && NF > 8 {print $1, $2, $3}' "$RAW/alltoallv-matrix-qbench.txt") > /dev/null \
        && echo "  size, count and type columns: the same" || echo "  size, count or type columns differ"
    pack
fi

if on fp8; then
    step "fp8: all_reduce by both, each op but mulsum, each fp8 type (1K..256M); then qbench -d all -o all"
    for t in f8e4m3 f8e5m2; do
        for o in sum prod max min avg; do
            pair "fp8-$t-$o" all_reduce_perf allreduce -b 1K -e 256M -f 16 -g 1 -d $t -o $o -n 20 -w 5
        done
    done
    timeout 300 "$Q" allreduce -b 1K -e 16M -f 16 -g 1 -d all -o all -n 5 -w 2 > "$RAW/fp8-all.txt" 2>&1
    echo "qbench allreduce -d all -o all: rc=$?; rows $(grep -vc '^#' "$RAW/fp8-all.txt"), wrong cells: $(awk '!/^#/ && NF > 8 && ($9 != "0" || ($13 != "0" && $13 != "N/A"))' "$RAW/fp8-all.txt" | wc -l)"
    grep '^# Left out' "$RAW/fp8-all.txt"
    QBENCH_CORRUPT=0:5 timeout 60 "$Q" allreduce -b 1M -e 1M -g 1 -d f8e5m2 > "$RAW/fp8-corrupt.txt" 2>&1
    want $? 1
    pack
fi

if on copies; then
    step "copy tests by nvbandwidth's names, twice: the SM copies one way and both, the pointer chases"
    names=host_to_device_bidirectional_memcpy_ce,host_to_device_memcpy_sm,device_to_host_memcpy_sm,host_to_device_bidirectional_memcpy_sm,host_device_latency_sm,device_to_device_latency_sm,latency_chase_local
    for round in 1 2; do
        timeout 300 "$Q" copy -t "$names" -b 64M -e 1G -f 4 -J "$RAW/copies-r$round.json" > "$RAW/copies-r$round.txt" 2>&1
        echo "round $round: rc=$?"
    done
    python3 - "$RAW"/copies-r1.json "$RAW"/copies-r2.json <<'PY'
import json, sys
for path in sys.argv[1:]:
    for t in json.load(open(path))["tests"]:
        line = [t["name"], t["status"], "wrong %d" % t["wrong_words"]]
        for r in t["rows"]:
            line.append("%dM %s" % (r["size"] >> 20, " ".join("%s %.1f" % (d["direction"], d["gbps"]["median"]) for d in r["directions"])))
        for s in t["latency"]:
            line += ["%dK %.3f/%.3f us" % (r["size"] >> 10, r["device"]["median"], r["host"]["median"]) for r in s["rows"]]
        if t.get("reason"):
            line.append(t["reason"])
        print(" | ".join(line))
PY
    QBENCH_CORRUPT=copy timeout 120 "$Q" copy -t latency_chase_local > "$RAW/copies-corrupt.txt" 2>&1
    want $? 1
    timeout 30 "$Q" copy -t all_to_one_write_ce > "$RAW/copies-missing.txt" 2>&1
    want $? 2; cat "$RAW/copies-missing.txt"
    pack
fi

if on probe; then
    step "probe: GPUDirect and dma-buf facts"
    timeout 60 "$Q" probe --json > "$RAW/probe.json" 2> "$RAW/probe.err"
    echo "probe rc=$?"
    python3 - "$RAW/probe.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d.get("checks", []):
    if c["check"].startswith(("gdr.", "gpu.")):
        print(c["status"], c["check"], "-", c["found"][:200])
PY
    pack
fi
step done
