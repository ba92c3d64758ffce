# Sourced by guest.sh (its helpers, $Q, $OUT and $T): the exchange's rdma
# wire between two MPI processes on host memory, rank 0 and rank 1 each
# one rank of the register; exchange and compare with every amplitude
# checked, and a wrong partner caught.

# amplitudes NAME WIRE WRONG LOG: the exchange's check line for WIRE (its
# classes and circuits) says WRONG wrong ("some" for any but 0).
amplitudes() {
  line=$(grep "^check: $2: " "$4")
  case "$3:$line" in
    0:"check: $2: "[1-9]*" amplitudes, 0 wrong" | some:"check: $2: "[1-9]*" amplitudes, "[1-9]*) pass "$1: $line" ;;
    *) fail "$1: '$line', expected $3 wrong"; cat "$4" ;;
  esac
}

section "exchange and compare over the rdma wire: host-memory ranks in two MPI processes"
if ! command -v mpirun > /dev/null; then
  echo "SKIP: no mpirun"
  return 0
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader OMPI_MCA_plm_rsh_agent=false
M="$T mpirun --allow-run-as-root --oversubscribe -np 2"
X="exchange --transport rdma,cpu --memory host --qubits 16 -n 2 -w 1"
$M $Q $X -J "$OUT/wires-exchange.json" > "$OUT/wires-exchange.log" 2>&1
rc=$?
if grep -q "built without MPI support" "$OUT/wires-exchange.log"; then
  echo "SKIP: this qbench was built without the mpi feature"
  return 0
fi
grep -E '^ (rdma|cpu) ' "$OUT/wires-exchange.log"
check "mpirun -np 2 exchange --transport rdma,cpu --memory host" 0 "$OUT/wires-exchange.log"
amplitudes "rdma wire, 2 processes" rdma 0 "$OUT/wires-exchange.log"
amplitudes "cpu wire beside it" cpu 0 "$OUT/wires-exchange.log"
if grep -q '"transport": "rdma"' "$OUT/wires-exchange.json"; then pass "the record has the rdma rows"; else fail "no rdma rows in $OUT/wires-exchange.json"; fi

$M $Q compare --memory host -b 256K -n 2 -w 1 > "$OUT/wires-compare.log" 2>&1
rc=$?
cat "$OUT/wires-compare.log" | grep -E '^ (rdma|cpu) '
check "mpirun -np 2 compare --memory host" 0 "$OUT/wires-compare.log"
row=$(awk -F'|' '{ gsub(/ /, "", $1); gsub(/ /, "", $4) } $1 == "rdma" { print $4 }' "$OUT/wires-compare.log")
if [ "$row" = 0 ]; then pass "compare: the rdma row, 0 wrong"; else fail "compare: the rdma row has wrong '$row'"; fi

QBENCH_CORRUPT=partner $M -x QBENCH_CORRUPT $Q exchange --transport rdma --memory host --qubits 16 -n 1 -w 0 > "$OUT/wires-corrupt.log" 2>&1
rc=$?
check "exchange over rdma with the wrong partner (QBENCH_CORRUPT=partner)" 1 "$OUT/wires-corrupt.log"
amplitudes "the wrong partner's amplitudes" rdma some "$OUT/wires-corrupt.log"
