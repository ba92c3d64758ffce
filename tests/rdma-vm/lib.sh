#!/bin/sh
# The helpers of the scripts that run inside tests/rdma-vm's guests
# (guest.sh, and tests/cluster/rdma-node.sh on each node of a pair):
# counted PASS/FAIL lines, sections timed from the start, exit-code and
# one-line-error checks, finished rdma records, and a wait for a TCP server. Sourced, not run.
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
start=$(date +%s)
section() { echo; echo "=== [$(($(date +%s) - start)) s] $*"; }

# check NAME CODE LOG: the exit code of the last command was $rc; it must be CODE.
check() {
  if [ "$rc" = "$2" ]; then pass "$1 (exit $rc)"; else fail "$1: exit $rc, expected $2"; cat "$3"; fi
}

# one_line NAME CODE TEXT FILE: stderr FILE is one line holding TEXT, exit CODE.
one_line() {
  lines=$(grep -c . "$4")
  if [ "$rc" = "$2" ] && [ "$lines" = 1 ] && grep -q -- "$3" "$4"; then
    pass "$1: $(cat "$4")"
  else
    fail "$1: exit $rc (expected $2), $lines lines:"; cat "$4"
  fi
}

# faulted NAME CODE TEXT FILE: stderr FILE is the line that announces the
# QBENCH_CORRUPT fault, then one line holding TEXT, exit CODE.
faulted() {
  if head -1 "$4" | grep -q '^qbench: QBENCH_CORRUPT=rdma'; then
    sed 1d "$4" > "$4.rest"
    one_line "$1" "$2" "$3" "$4.rest"
  else
    fail "$1: the fault is not announced:"; cat "$4"
  fi
}

# clean NAME JSON: a finished qbench.rdma.v2 record, with rows and no wrong byte.
clean() {
  rows=$(grep -cE '"kind": "(bw|lat|lat_duration)"' "$2" 2>/dev/null)
  if [ "${rows:-0}" -gt 0 ] && ! grep -q '"wrong_bytes": [1-9]' "$2" \
    && grep -q '"schema": "qbench.rdma.v2"' "$2" && grep -q '"complete": true' "$2"; then
    pass "$1: $rows rows, every byte right"
  else
    fail "$1: $rows rows, or wrong bytes, or not a finished qbench.rdma.v2 record in $2"
  fi
}

# listening PORT: waits (at most a minute) until a server listens on TCP PORT,
# without connecting to it (a connection would be a client).
listening() {
  hex=$(printf '%04X' "$1")
  i=0
  while ! grep -Eq ":$hex [0-9A-F]+:0000 0A " /proc/net/tcp /proc/net/tcp6 2> /dev/null && [ $i -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
  done
}

