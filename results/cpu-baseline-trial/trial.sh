#!/bin/sh
# Baselines on a loaded machine: two busy processes beside qbench check.
Q=$1
sh -c 'while :; do :; done' & B1=$!
sh -c 'while :; do :; done' & B2=$!
sleep 1
uptime
$Q check --profile cpu --save-baseline base.json > base.txt 2>&1; echo "baseline rc=$?"
nr=0
for i in $(seq 20); do
  $Q check --profile cpu --baseline base.json --json > run$i.json 2> run$i.err; rc=$?
  [ $rc -ne 0 ] && nr=$((nr+1)); echo "run $i rc=$rc"
done
echo "NOT READY: $nr of 20"
python3 -c "
import json
b=json.load(open('base.json'))
for r in b['rows']:
    if r.get('measured') is not None:
        r['measured']*=2; r['samples']=[x*2 for x in r.get('samples',[])]
json.dump(b,open('doctored.json','w'))"
$Q check --profile cpu --baseline doctored.json > doctored.txt 2>&1; echo "doctored rc=$?"
uptime
kill $B1 $B2
