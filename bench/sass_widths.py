"""Memory-instruction widths of the generated kernels (CPU, no GPU needed): for each bench/kernels.py case, compile
every launch specialized for sm_90 as cuTile's JIT does (`aot.compile_cubin(..., specialize=True)`), disassemble it
with nvdisasm and count the global loads/stores per thread by width (LDG.E.U16 = 2 bytes, LDG.E = 4, .64, .128),
TMA copies (UTMALDG/UTMASTG) and local-memory spills (STL). Narrow accesses are the first suspect when a
memory-bound kernel stays under its copy bandwidth (session 6: the 16-bit pools and the embedding). Each launch
starts with [R<registers per thread> S<static shared bytes per block> F<stack frame bytes per thread>], read from
the cubin itself (aot.kernel_resources, no CUDA tools): what bounds the blocks per SM (session 7: TMA-staged chunk
loops at 120-231 KB), and F > 0 is a register spill (session 8: num_worker_warps=8 removes the 128x256 GEMM's).
Without nvdisasm only that bracket is printed.

    NVDISASM=/path/to/nvdisasm python bench/sass_widths.py [--only SUBSTRING] [--family pool] [--set KEY=VALUE]...
        [--ops]

--ops adds each launch's static instruction count and its MUFU / FSETP counts: a memory-bound kernel over 16-bit
data can be bound by instruction issue instead (session 12: cross entropy's class loop at 592 instructions, 496
once its exponentials flushed denormals, 0.171 -> 0.164 ms).

--set overrides one generator knob (a key of rowwise.TUNING, indexing.MEMORY_TUNING or gemm_common.TILES; the
value a Python literal), to see a variant's SASS before timing it.

nvdisasm comes in PyPI's `nvidia-cuda-nvdisasm` wheel (`pip download --no-deps nvidia-cuda-nvdisasm`, unzip;
not a dependency); without NVDISASM the script looks for it on PATH.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels import CASES, set_knob, spec_for  # noqa: E402 - bench/kernels.py helpers

MEMORY_OPS = re.compile(r"\b(LDG[A-Z0-9.]*|STG[A-Z0-9.]*|UTMALDG[A-Z0-9.]*|UTMASTG[A-Z0-9.]*|LDGSTS[A-Z0-9.]*|"
                        r"STL[A-Z0-9.]*|LDL[A-Z0-9.]*)")


# an instruction's opcode in nvdisasm's listing: after the /*address*/ and an optional predicate guard
OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)")
# the opcodes --ops counts on their own: the special-function unit (exp2, rcp, rsqrt: a quarter of the FP32 rate
# or less) and float compares (sm_90's denormal-range fix-up around a MUFU.EX2 without flush_to_zero is an FSETP
# and two predicated FMULs: session 12, cross entropy's class loop)
OPS_SHOWN = ("MUFU", "FSETP")


def op_mix(sass: str) -> str:
    """I<static instructions> and the count of each OPS_SHOWN opcode: a variant that trims work per element shows
    fewer (static counts: a loop body counts once, an unrolled one per copy)."""
    ops = collections.Counter(OPCODE.findall(sass))
    return " ".join([f"I{sum(ops.values())}"] + [f"{op}:{ops[op]}" for op in OPS_SHOWN])


def widths(nvdisasm: str | None, cubin: bytes, mix: bool = False) -> str:
    from tilestudio.core.kernels import aot

    res = aot.kernel_resources(cubin)
    usage = f"[R{res['registers']} S{aot.shared_memory_bytes(cubin)} F{res['frame']}]"
    if not nvdisasm:
        return usage
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass = subprocess.run([nvdisasm, "-c", f.name], capture_output=True, text=True, check=True).stdout
    counts = collections.Counter(op.replace(".E", "") for op in MEMORY_OPS.findall(sass))
    line = " ".join([usage] + [f"{op}:{n}" for op, n in sorted(counts.items())]).strip()
    return f"{line} | {op_mix(sass)}" if mix else line


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default=None, help="substring of the case labels")
    parser.add_argument("--family", default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--ops", action="store_true", help="also the static instruction count, MUFU and FSETP")
    args = parser.parse_args()
    for item in args.set:
        set_knob(*item.split("=", 1))
    nvdisasm = os.environ.get("NVDISASM") or shutil.which("nvdisasm")
    if not nvdisasm:
        print("no nvdisasm (set NVDISASM; see the module docstring): registers / shared / frame only", file=sys.stderr)
    from tilestudio.core.kernels import aot, generate_kernel

    for family, label, body, inputs, *_ in CASES:
        if (args.only and args.only not in label) or (args.family and family != args.family):
            continue
        try:
            spec = spec_for(body, inputs)
            source = generate_kernel(spec)
            parts = [widths(nvdisasm, aot.compile_cubin(rec, "sm_90", specialize=True), args.ops)
                     for rec in aot.trace_launches(source, spec)]
            print(f"{label[:52]:52s} | {' || '.join(parts)}", flush=True)
        except Exception as exc:  # noqa: BLE001 - one case never stops the table
            print(f"{label[:52]:52s} | ERROR {type(exc).__name__}: {str(exc)[:80]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
