"""The roofline of a state-vector gate, by PyTorch on the same bytes: the
copy engine's device copy (y.copy_(x)), an out-of-place elementwise kernel
(torch.mul(x, 2, out=y)) and an in-place one (x.mul_(c)), on one buffer of
--gib GiB viewed as float32, complex64 (qbench's single precision) and
complex128 (its double). A gate reads and writes every amplitude once, the
traffic of the in-place kernel; GB/s count bytes read plus bytes written.

Each figure is the median of 5 calls, each timed by CUDA events, after one
warm-up; 3 rounds, each timing the copy first; every ratio is to its
round's copy.

    python3 results/ref/torch_elementwise.py --gib 16 --out torch-elementwise.json
"""
import argparse
import json
import statistics

import torch


def median_seconds(op, stream):
    op()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(5)]
    for start, end in events:
        start.record(stream)
        op()
        end.record(stream)
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) / 1e3 for s, e in events)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=16, help="bytes of each buffer, GiB")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    nbytes = int(a.gib * (1 << 30)) // 16 * 16
    dev = torch.device("cuda:0")
    # Not zeros: random data in both buffers.
    x8 = torch.empty(nbytes // 4, dtype=torch.float32, device=dev).uniform_(-1, 1)
    y8 = torch.empty_like(x8).uniform_(-1, 1)
    stream = torch.cuda.current_stream()
    rows = []
    for rnd in range(a.rounds):
        for dtype in (torch.float32, torch.complex64, torch.complex128):
            x, y = x8.view(dtype), y8.view(dtype)
            assert x.numel() * x.element_size() == nbytes
            copy = median_seconds(lambda: y.copy_(x), stream)
            copy_gbps = 2 * nbytes / copy / 1e9
            # x.mul_ alternates 2 and 1/2 (complex: i and -i), exact
            # factors, so that the data stays in range.
            factors = (2.0, 0.5) if dtype == torch.float32 else (1j, -1j)
            turn = [0]

            def in_place():
                x.mul_(factors[turn[0]])
                turn[0] ^= 1

            ops = {
                "copy_": copy,
                "mul_out_of_place": median_seconds(lambda: torch.mul(x, 2, out=y), stream),
                "mul_in_place": median_seconds(in_place, stream),
            }
            for name, t in ops.items():
                gbps = 2 * nbytes / t / 1e9
                rows.append({"round": rnd, "dtype": str(dtype).replace("torch.", ""), "op": name, "bytes": 2 * nbytes,
                             "median_s": t, "gbps": gbps, "copy_gbps": copy_gbps, "of_copy": gbps / copy_gbps})
    summary = {}
    for r in rows:
        summary.setdefault((r["dtype"], r["op"]), []).append(r)
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}, {nbytes / (1 << 30):.1f} GiB buffers; "
          f"median of {a.rounds} rounds [min, max]")
    print(f"{'dtype':>11} {'op':>17} {'GB/s':>8} {'of copy_':>24}")
    table = []
    for (dtype, op), rs in summary.items():
        g = statistics.median(r["gbps"] for r in rs)
        f = sorted(r["of_copy"] for r in rs)
        table.append({"dtype": dtype, "op": op, "gbps": g, "of_copy": statistics.median(f), "of_copy_min": f[0],
                      "of_copy_max": f[-1]})
        print(f"{dtype:>11} {op:>17} {g:>8.0f}    {statistics.median(f):.3f} [{f[0]:.3f}, {f[-1]:.3f}]")
    doc = {
        "tool": "torch elementwise",
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "buffer_bytes": nbytes,
        "timing": "median of 5 calls after 1 warm-up, CUDA events; ratios to the same round's copy_",
        "rounds": a.rounds,
        "summary": table,
        "results": rows,
    }
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
