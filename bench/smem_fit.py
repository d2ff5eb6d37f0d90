"""Shared memory per block of bench/kernels.py's kernels, compiled ahead of time as cuTile's JIT specializes them
(no GPU needed): the occupancy hint of each kernel, its static shared memory and how many blocks of it fit in an
sm_90 SM (228 KB, 1 KB reserved per block). A kernel whose hint exceeds what fits runs fewer blocks per SM than
its tiles were chosen for (linear+gelu before its bias moved into the accumulator: 116072 bytes, hint 2, fits 1).

    python bench/smem_fit.py [--family matmul,conv,attention] [--arch sm_90]
"""

from __future__ import annotations

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels import CASES, print_table, spec_for  # noqa: E402 - bench/kernels.py helpers

def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--family", default="matmul,conv,attention")
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args()
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import (SHARED_PER_SM_SM90, SHARED_RESERVED_PER_BLOCK,
                                             blocks_fitting_shared_memory, compile_cubin, shared_memory_bytes,
                                             trace_launches)

    rows = [["case", "kernel", "occupancy hint", "smem bytes", "blocks that fit"]]
    for case in CASES:
        if case[0] not in args.family.split(","):
            continue
        try:
            spec = spec_for(case[2], case[3])
            source = generate_kernel(spec)
            for record in trace_launches(source, spec):
                name = record.kernel._pyfunc.__name__
                deco = re.search(rf"@ct\.kernel(\([^)]*\))?\ndef {name}\(", source.code)
                hint = re.search(r"occupancy=(\d+)", deco.group(1) or "") if deco else None
                smem = shared_memory_bytes(compile_cubin(record, args.arch, specialize=True))
                fits = min(32, blocks_fitting_shared_memory(smem))  # 32: the per-SM block limit
                flag = " <" if hint and fits < int(hint.group(1)) else ""
                rows.append([case[1], name, hint.group(1) if hint else "-", str(smem), f"{fits}{flag}"])
        except Exception as exc:  # noqa: BLE001 - one case never stops the table
            rows.append([case[1], "-", f"ERROR {type(exc).__name__}: {str(exc)[:60]}", "", ""])
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    print(f"# {args.arch}: {SHARED_PER_SM_SM90} bytes of shared memory per SM, {SHARED_RESERVED_PER_BLOCK} "
          "reserved per block; "
          "'<' = fewer blocks fit than the hint asks for")
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
