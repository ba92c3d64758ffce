# Sourced by guest.sh (its helpers, $Q, $OUT and $T): perftest's options
# that time a run and shape its path, between rxe1 (a server started as
# perftest's, with no host) and rxe0: -D, -S, --tclass, -m and -F on all
# six tests; both directions of -D on two queue pairs; --run_infinitely
# ended by SIGINT; sides that disagree on -D or -m.

# records NAME JSON CHECK: the python expression CHECK holds of the record
# JSON (r: the record, links, rows); prints what it found either way.
records() {
  if out=$(python3 - "$2" "$3" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
links, rows = r["links"], [x for x in r["rows"]]
ok = eval("(" + sys.argv[2] + ")")
print(f"{len(links)} links, {len(rows)} rows, complete {r['complete']}; " + ", ".join(
    f"{links[x['link']]['test']} {x['kind']} {x['iterations']} it {x['data']['checked_bytes']} B checked" for x in rows))
sys.exit(0 if ok else 1)
PY
  ); then pass "$1: $out"; else fail "$1: $out"; fi
}

# stamped COMMAND...: runs COMMAND, each line of its output (and stderr)
# after the seconds since it started; its exit code.
stamped() {
  python3 -c '
import subprocess, sys, time
t0 = time.time()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
for line in p.stdout:
    print(f"{time.time() - t0:8.3f} {line}", end="", flush=True)
sys.exit(p.wait())' "$@"
}

O="-x 0 -D 2 -S 3 --tclass 32 -m 1024 -F"
section "perftest's -D 2 -S 3 --tclass 32 -m 1024 -F, all six tests: a server with no host, a client"
$T $Q rdma -d rxe1 $O --test all -p 18520 -J "$OUT/opts-server.json" > "$OUT/opts-server.log" 2>&1 &
srv=$!
listening 18520
stamped $T $Q rdma -d rxe0 $O --test all -p 18520 -J "$OUT/opts-client.json" 127.0.0.1 > "$OUT/opts-client.log"
rc=$?
grep -E '^ *[0-9.]+ ( [0-9]|.*(Duration|local|#bytes))' "$OUT/opts-client.log"
check "client $O --test all" 0 "$OUT/opts-client.log"
wait $srv; rc=$?
check "server (no host, as perftest) $O --test all" 0 "$OUT/opts-server.log"
clean "client records" "$OUT/opts-client.json"
clean "server records" "$OUT/opts-server.json"
records "every row of the -D run measured something, every byte checked, bandwidth without a peak" "$OUT/opts-client.json" \
  'len(rows) == 6 and all(x["iterations"] > 0 and x["data"]["checked_bytes"] > 0 and x["data"]["wrong_bytes"] == 0 for x in rows)
   and all(x.get("bw_peak_bytes_per_s", 0) is None for x in rows if x["kind"] == "bw")
   and sorted(x["kind"] for x in rows) == ["bw"] * 3 + ["lat_duration"] * 3
   and r["agreement"]["timing"] == {"kind": "duration", "seconds": 2, "margin": 0}'
# -D 2 with no margin: the middle measured is the whole 2 s, so the
# messages counted are what the average rate moves in exactly 2 s.
records "a -D 2 row is over its 2 s (messages x size / BW average, iterations / tps)" "$OUT/opts-client.json" \
  'all(abs(x["iterations"] * x["bytes"] / x["bw_avg_bytes_per_s"] - 2) < 1e-6 for x in rows if x["kind"] == "bw")
   and all(abs(x["iterations"] / x["tps"] - 2) < 1e-6 for x in rows if x["kind"] == "lat_duration")'
records "the queue pairs hold path MTU 1024 (ibv_query_qp), SL 3 and traffic class 32 on both ends" "$OUT/opts-client.json" \
  'all(l["path_mtu"] == 1024 and r["agreement"]["mtu"] == 1024 for l in links)
   and all(l[e]["sl"] == 3 and l[e]["traffic_class"] == 32 for l in links for e in ("local", "remote"))'
records "without -m the same ports hold 4096 (the first section's records)" "$OUT/client.json" \
  'all(l["path_mtu"] == 4096 for l in links)'
# Each test runs its 2 s, then connects the next: its row comes 2 s or
# more after the one before (-n 5 runs all six in under 2 s here).
if out=$(python3 - "$OUT/opts-client.log" <<'PY'
import re, sys
at = [float(m.group(1)) for m in (re.match(r" *([0-9.]+)  [0-9]", l) for l in open(sys.argv[1])) if m]
gaps = [b - a for a, b in zip(at, at[1:])]
print(f"{len(at)} rows, " + ", ".join(f"{g:.2f}" for g in gaps) + " s apart")
sys.exit(0 if len(at) == 6 and all(2.0 <= g <= 10.0 for g in gaps) else 1)
PY
); then pass "-D 2: $out"; else fail "-D 2: $out"; fi

section "-D both ways (-b) on two queue pairs, send and write: each side ends the other's receive loop"
$T $Q rdma --loopback -x 0 -D 2 -b -q 2 --test send_bw,write_bw -J "$OUT/d2-b.json" > "$OUT/d2-b.log" 2>&1
rc=$?
grep -E '^ [0-9]' "$OUT/d2-b.log"
check "loopback -D 2 -b -q 2 send_bw,write_bw" 0 "$OUT/d2-b.log"
clean "-D -b records" "$OUT/d2-b.json"

section "--run_infinitely -D 1, stopped by SIGINT"
$T $Q rdma -d rxe1 -x 0 --run_infinitely -D 1 -p 18521 -J "$OUT/inf-server.json" > "$OUT/inf-server.log" 2> "$OUT/inf-server.err" &
srv=$!
listening 18521
# SIGINT once three lines are out (timeout forwards it to qbench; a
# background job of this shell would ignore it).
timeout --preserve-status -s INT 120 $Q rdma -d rxe0 -x 0 --run_infinitely -D 1 -p 18521 -J "$OUT/inf-client.json" 127.0.0.1 > "$OUT/inf-client.log" 2> "$OUT/inf-client.err" &
cli=$!
i=0
while [ "$(grep -c '^ 65536 ' "$OUT/inf-client.log")" -lt 3 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
kill -INT $cli
wait $cli; rc=$?
grep -E '^ [0-9]|Duration' "$OUT/inf-client.log"
one_line "the client, interrupted" 130 "interrupted (SIGINT)" "$OUT/inf-client.err"
records "its record: incomplete, a line a second, then the last stretch with every byte checked" "$OUT/inf-client.json" \
  'not r["complete"] and len(rows) >= 3 and all(x["iterations"] > 0 for x in rows[:-1])
   and all(x["data"]["checked_bytes"] == 0 for x in rows[:-1])
   and rows[-1]["data"]["checked_bytes"] > 0 and rows[-1]["data"]["wrong_bytes"] == 0
   and r["agreement"]["timing"] == {"kind": "infinitely", "seconds": 1}'
wait $srv; rc=$?
check "the server, its client gone (exit 0, as perftest's)" 0 "$OUT/inf-server.err"
records "the server's record: complete, the last stretch, checked" "$OUT/inf-server.json" \
  'r["complete"] and len(rows) == 1 and rows[0]["data"]["checked_bytes"] > 0'

section "sides that disagree on -D or -m: one line each"
for case in "-D 2|-D 3|-D 3 -f 0 here, -D 2 -f 0 there" "-m 1024|-m 2048|-m 2048 here, -m 1024 there"; do
  mine=${case%%|*}; rest=${case#*|}; theirs=${rest%%|*}; text=${rest#*|}
  $T $Q rdma -d rxe1 -x 0 $mine -p 18522 > /dev/null 2> "$OUT/e-server.err" &
  srv=$!
  listening 18522
  $T $Q rdma -d rxe0 -x 0 $theirs -p 18522 127.0.0.1 > /dev/null 2> "$OUT/e.err"; rc=$?
  one_line "the client ($theirs against $mine)" 2 "disagree ($text)" "$OUT/e.err"
  wait $srv; rc=$?
  one_line "the server ($mine against $theirs)" 2 "the two sides disagree" "$OUT/e-server.err"
done
