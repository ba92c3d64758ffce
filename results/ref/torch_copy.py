"""Copy bandwidth measured with PyTorch at the sizes `qbench copy` sweeps,
timed the way qbench times: warm-up copies, then CUDA events around -n
back-to-back copies, the median of --samples samples; GB/s = 1e9 bytes/s,
bytes moved one way.

  h2d_pinned     pinned host tensor -> GPU 0 (tensor.copy_, non_blocking)
  d2h_pinned     GPU 0 -> pinned host tensor
  peer_ce_write  GPU 0 -> GPU 1 (tensor.copy_, done on the source's stream)

    python3 results/ref/torch_copy.py -b 1M -e 1G -f 4 --out torch-copy.json \
        [--qbench qbench-copy.json]

With --qbench (a `qbench copy -J` file), prints qbench's figure beside
PyTorch's for each test and size, and their ratio.
"""
import argparse
import json
import statistics

import sweep
import torch


def sync_all():
    for d in range(torch.cuda.device_count()):
        torch.cuda.synchronize(d)


def gbps(copy, size, device, n, samples, warmup):
    """Median GB/s of `samples` samples of `n` copies, events on `device`'s current stream."""
    with torch.cuda.device(device):
        for _ in range(warmup):
            copy()
        sync_all()
        rates = []
        for _ in range(samples):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(n):
                copy()
            end.record()
            end.synchronize()
            rates.append(size * n / (start.elapsed_time(end) / 1e3) / 1e9)
    sync_all()
    return statistics.median(rates)


def qbench_figure(doc, test, size, src, dst):
    """The median GB/s of a one-flow row of a qbench copy JSON file, or None."""
    for t in doc.get("tests", []):
        if t["name"] != test:
            continue
        for r in t["rows"]:
            if r["size"] == size and len(r["flows"]) == 1:
                f = r["flows"][0]
                if f["src"] == src and f["dst"] == dst:
                    return f["gbps"]["median"]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", default="1M")
    ap.add_argument("-e", default="1G")
    ap.add_argument("-f", type=int, default=4)
    ap.add_argument("-n", type=int, default=10, help="back-to-back copies per sample")
    ap.add_argument("-w", type=int, default=3, help="warm-up copies per size")
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--out", required=True)
    ap.add_argument("--qbench")
    a = ap.parse_args()
    sizes = sweep.sizes(a.b, a.e, a.f)
    two = torch.cuda.device_count() >= 2
    rows = []
    for size in sizes:
        host = torch.empty(size, dtype=torch.uint8, pin_memory=True).fill_(7)
        dev0 = torch.empty(size, dtype=torch.uint8, device="cuda:0").fill_(9)
        row = {"size": size}
        row["h2d_pinned"] = gbps(lambda: dev0.copy_(host, non_blocking=True), size, 0, a.n, a.samples, a.w)
        row["d2h_pinned"] = gbps(lambda: host.copy_(dev0, non_blocking=True), size, 0, a.n, a.samples, a.w)
        if two:
            dev1 = torch.empty(size, dtype=torch.uint8, device="cuda:1")
            row["peer_ce_write"] = gbps(lambda: dev1.copy_(dev0, non_blocking=True), size, 0, a.n, a.samples, a.w)
            del dev1
        rows.append(row)
        del host, dev0
        torch.cuda.empty_cache()
    doc = {
        "tool": "torch tensor.copy_",
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "gpus": torch.cuda.device_count(),
        "peer_access": two and torch.cuda.can_device_access_peer(0, 1),
        "iters": a.n,
        "warmup": a.w,
        "samples": a.samples,
        "results": rows,
    }
    if a.qbench:
        with open(a.qbench) as f:
            q = json.load(f)
        tests = [("h2d_pinned", "host", "gpu0"), ("d2h_pinned", "gpu0", "host"), ("peer_ce_write", "gpu0", "gpu1")]
        print(f"{'test':>14} {'size':>12} {'torch GB/s':>11} {'qbench GB/s':>12} {'qbench/torch':>13}")
        for r in rows:
            for test, src, dst in tests:
                if test not in r:
                    continue
                qv = qbench_figure(q, test, r["size"], src, dst)
                if qv is None:
                    continue
                r[f"qbench_{test}"] = qv
                r[f"ratio_{test}"] = qv / r[test]
                print(f"{test:>14} {r['size']:>12} {r[test]:>11.2f} {qv:>12.2f} {qv / r[test]:>13.3f}")
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
