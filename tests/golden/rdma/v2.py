#!/usr/bin/env python3
"""The qbench.rdma.v1 record in FILE as qbench.rdma.v2: the header of every
record (fault and completeness), --report_gbits and the connections made,
and the links' rows moved into one flat list of rows, each naming its link.
Nothing measured changes."""
import json
import os
import sys

v1 = json.load(open(sys.argv[1]))
assert v1["schema"] == "qbench.rdma.v1", v1["schema"]
links, rows = [], []
for i, link in enumerate(v1["links"]):
    for row in link.pop("rows"):
        rows.append({"link": i, **row})
    links.append(link)
tests = len(v1["agreement"]["tests"])
# What QBENCH_CORRUPT=rdma[:BYTE] is now announced as (fault.rs).
fault = os.environ.get("QBENCH_CORRUPT")
if fault is not None:
    byte = fault.partition(":")[2] or "0"
    fault = f"QBENCH_CORRUPT=rdma:{byte}: byte {byte} of every buffer this process sends from is flipped"
out = {
    "schema": "qbench.rdma.v2",
    "qbench_version": v1["qbench_version"],
    "args": v1["args"],
    "host": v1["host"],
    "start_time": v1["start_time"],
    "end_time": v1["end_time"],
    "fault": fault,
    "complete": True,
    "mode": v1["mode"],
    "report_gbits": "--report_gbits" in v1["args"],
    "connections": max(1, len(links) // tests),
    "agreement": v1["agreement"],
    "links": links,
    "rows": rows,
}
print(json.dumps(out, indent=2, ensure_ascii=False))
