#!/usr/bin/env python3
"""Writes all_reduce_table.txt: the table nccl-tests 2.19 prints for the
rows of the golden test in src/report/table.rs, made with Python's %
operator, which formats as C's printf does. It follows nccl-tests'
src/common.cu and src/util.cu (the header, the device lines, the row
format "%12li  %12li  %8s  %6s  %6i" then per placement
"  %7s  %6s  %6s  %6g" or "  %7s  %6s  %6s    N/A",
getFloatStr's width-bounded numbers, the footer), with qbench's own first
line. Run it from this folder: python3 make_all_reduce_table.py > all_reduce_table.txt
"""


def exp_c(value, prec):
    """%.{prec}e as C prints it."""
    return "%.*e" % (prec, value)


def bounded(value, width):
    """nccl-tests' getFloatStr: two decimals while the integer part leaves
    room in `width`, then fewer, then exponent form."""
    power, val = 0, 1.0
    while value >= val:
        power += 1
        val *= 10
    if power + 2 < width:
        return "%*.2f" % (width, value)
    if power + 1 < width:
        return "%*.1f" % (width, value)
    if power < width + 1:
        return "%*.0f" % (width, value)
    return "%*s" % (width, exp_c(value, 1 if width >= 7 else 0))


def cell(time_us, algbw, busbw, wrong):
    t, a, b = bounded(time_us, 7), bounded(algbw, 6), bounded(busbw, 6)
    if wrong is None:
        return "  %7s  %6s  %6s    N/A" % (t, a, b)
    return "  %7s  %6s  %6s  %6g" % (t, a, b, wrong)


def main():
    out = []
    out.append("# qbench version 0.1.0 transport=nccl nccl-library=22803")
    out.append("# Collective test starting: all_reduce_perf")
    out.append(
        "# nThread %d nGpus %d minBytes %d maxBytes %d step: %d(%s) warmup iters: %d iters: %d agg iters: %d "
        "validation: %d graph: %d unalign: 0" % (1, 2, 16 << 20, 1 << 30, 2, "factor", 1, 20, 1, 1, 0)
    )
    out.append("#")
    out.append("# Using devices")
    for rank, bus in [(0, "0000:00:06"), (1, "0000:00:07")]:
        out.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s" % (rank, 0, 4242, "gpuhost", rank, bus, "NVIDIA H200"))
    out.append("#")
    out.append("# Reducing maxBytes to %d due to memory limitation" % (512 << 20))
    out.append("#")
    out.append("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          " % ("", "", "", "", ""))
    out.append(
        "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s "
        % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong")
    )
    out.append(
        "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s "
        % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")
    )
    rows = [
        (16 << 20, 4 << 20, "float", "sum", -1, (84.79, 197.87, 197.87, 0), (80.84, 207.55, 207.55, 0)),
        (512 << 20, 128 << 20, "float", "sum", -1, (1765.3, 304.12, 304.12, 0), (12345.67, 4247.3, 12345.0, 1 << 20)),
        (1024, 512, "bfloat16", "none", 1, (20.81, 0.049, 0.049, None), (21.16, 0.048, 0.048, None)),
    ]
    for size, count, dtype, redop, root, oop, ip in rows:
        out.append("%12li  %12li  %8s  %6s  %6i" % (size, count, dtype, redop, root) + cell(*oop) + cell(*ip))
    out.append("# %-20s : %d %s" % ("Out of bounds values", 1, "FAILED"))
    out.append("# %-20s : %g %s" % ("Avg bus bandwidth", 275.71543, ""))
    out.append("#")
    out.append("# Collective test concluded: all_reduce_perf")
    out.append("#")
    out.append("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
