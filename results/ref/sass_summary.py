"""What the machine code of each kernel does with memory: the load and store
instructions (LDG.E.128 is a 16-byte load, .EF evict-first, .CONSTANT the
read-only path; LDL/STL would be local memory) and, for each loop, the
order of its global loads (L) and stores (S), so that one sees whether all
of a tile's loads are issued before its first store.

    python3 results/ref/sass_summary.py FILE [CUOBJDUMP]

FILE: a cubin or an executable with sm_XX code (cuobjdump -sass reads both).
"""
import collections
import re
import subprocess
import sys


def main():
    path = sys.argv[1]
    tool = sys.argv[2] if len(sys.argv) > 2 else "cuobjdump"
    out = subprocess.run([tool, "-sass", path], capture_output=True, text=True, check=True).stdout
    fun, body = None, collections.defaultdict(list)
    for line in out.splitlines():
        m = re.match(r"\s+Function : (\w+)", line)
        if m:
            fun = m.group(1)
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m and fun:
            body[fun].append((int(m.group(1), 16), m.group(2).strip()))

    def op(ins):
        return ins.split()[1] if ins.startswith("@") else ins.split()[0]

    for f, ins in sorted(body.items()):
        counts = collections.Counter(op(i) for _, i in ins if op(i).startswith(("LDG", "STG", "SHFL", "LDL", "STL")))
        print(f"{f}: " + ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())))
        for a, i in ins:
            m = re.search(r"BRA (0x[0-9a-f]+)", i)
            if not m or int(m.group(1), 16) >= a:
                continue
            start = int(m.group(1), 16)
            seq = []
            for b, j in ins:
                o = op(j)
                if start <= b <= a and o.startswith(("LDG", "STG")):
                    o = o.replace("LDG.E", "L").replace("STG.E", "S") or o
                    if seq and seq[-1][0] == o:
                        seq[-1][1] += 1
                    else:
                        seq.append([o, 1])
            print(f"    loop {start:#06x}-{a:#06x}: " + " ".join(f"{o}x{n}" for o, n in seq))


if __name__ == "__main__":
    main()
