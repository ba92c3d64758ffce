"""Bus bandwidth of torch.distributed.all_reduce (NCCL backend, one process
per GPU) at the sizes qbench sweeps, timed the way qbench times: warm-up,
then CUDA events around the timed iterations, the per-rank times averaged.

    python3 results/ref/torch_allreduce.py --gpus 2 -b 16M -e 1G -f 2 \
        --out torch.json [--qbench qbench.json]

With --qbench, also prints qbench's busbw (out-of-place and in-place, from a
`qbench allreduce -J` file of the same sizes) beside PyTorch's and the ratio.
"""
import argparse
import json
import os

import sweep
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world, sizes, iters, warmup, queue):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    rows = []
    for size in sizes:
        x = torch.rand(size // 4, dtype=torch.float32, device="cuda")
        for _ in range(warmup):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            dist.all_reduce(x)
        end.record()
        end.synchronize()
        seconds = torch.tensor([start.elapsed_time(end) / 1e3 / iters], device="cuda", dtype=torch.float64)
        dist.all_reduce(seconds)
        t = seconds.item() / world
        algbw = size / 1e9 / t
        rows.append({"size": size, "time_us": t * 1e6, "algbw_gbps": algbw, "busbw_gbps": algbw * 2 * (world - 1) / world})
    if rank == 0:
        queue.put(rows)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=torch.cuda.device_count())
    ap.add_argument("-b", default="16M")
    ap.add_argument("-e", default="1G")
    ap.add_argument("-f", type=int, default=2)
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("-w", type=int, default=5)
    ap.add_argument("--out", required=True)
    ap.add_argument("--qbench")
    a = ap.parse_args()
    sizes = sweep.sizes(a.b, a.e, a.f)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, a.gpus, sizes, a.n, a.w, queue)) for r in range(a.gpus)]
    for p in procs:
        p.start()
    rows = queue.get()
    for p in procs:
        p.join()
    doc = {
        "tool": "torch.distributed.all_reduce",
        "torch": torch.__version__,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())),
        "gpus": a.gpus,
        "device": torch.cuda.get_device_name(0),
        "iters": a.n,
        "warmup": a.w,
        "results": rows,
    }
    if a.qbench:
        q = {r["size"]: r for r in json.load(open(a.qbench))["results"]}
        print(f"{'size':>12} {'torch busbw':>12} {'qbench oop':>11} {'qbench ip':>10} {'oop/torch':>10} {'ip/torch':>9}")
        for r in rows:
            qr = q.get(r["size"])
            if not qr:
                continue
            oop, ip = qr["out_of_place"]["busbw_gbps"], qr["in_place"]["busbw_gbps"]
            r["qbench_out_of_place_busbw_gbps"], r["qbench_in_place_busbw_gbps"] = oop, ip
            r["ratio_out_of_place"], r["ratio_in_place"] = oop / r["busbw_gbps"], ip / r["busbw_gbps"]
            print(f"{r['size']:>12} {r['busbw_gbps']:>12.2f} {oop:>11.2f} {ip:>10.2f} {oop / r['busbw_gbps']:>10.3f} {ip / r['busbw_gbps']:>9.3f}")
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
