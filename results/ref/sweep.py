"""The sizes a qbench sweep visits, for the PyTorch reference scripts beside
this file: -b to -e bytes, multiplied by -f each step, with qbench's K/M/G
suffixes (powers of 1024)."""


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def sizes(minbytes, maxbytes, factor):
    out, s, end = [], parse_size(minbytes), parse_size(maxbytes)
    while s <= end:
        out.append(s)
        s *= factor
    return out
