"""Rotary embeddings (GPU): q * cos + rotate_half(q) * sin as fusion rule R9 makes it (one elementwise kernel that
reads q rotated), against what the kernel library generated before R9 (a neg kernel over q's second half, the
concatenation in glue, a mul/mul/add kernel), PyTorch eager and torch.compile.

    python bench/rotary.py [--reps 20] [--only LABEL] [--set KNOB=VALUE]

Every path is checked against a float64 reference (max relative error over |ref| > 1e-3 shown) before it is timed
with bench/kernels.py's device timing (CUDA events, warm-up, median of --reps over three fresh random input sets).
"of copy" = a device copy of the same bytes (q and cos/sin read, the result written) / the R9 kernel's time. Head
dims 64 and 128 take the register shuffle, 80 and 96 the gather at rotated offsets (core/kernels/elementwise_rotate.py).
Cases marked "q strided" pass q as `(b, s, h, d)` memory transposed to `(b, h, s, d)` (a projection's output viewed
per head, as in Llama): every path gets the same view, and the kernels read it through the strided kernel
(core/kernels/elementwise_strided.py) where they have one.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels import HEADER, copy_ms, median_ms, print_table, set_knob  # noqa: E402 - bench/kernels.py helpers

MODEL = """
class Model(nn.Module):
    def forward(self, q, cos, sin):  # rotate_half(q) inline: the same captured graph
        return q * cos + torch.cat((-q[..., {h}:], q[..., :{h}]), dim=-1) * sin


def get_inputs():
    return [torch.randn({q}, dtype=torch.{dt}), torch.randn({cs}, dtype=torch.{dt}), torch.randn({cs}, dtype=torch.{dt})]
"""

# label, q shape (batch, heads, seq, head dim), dtype, q passed as a (b, s, h, d) tensor transposed
SIZES = [
    ("Llama-2-7B q 4x32x2048x128", (4, 32, 2048, 128), "bfloat16", False),
    ("GPT-NeoX-style 8x16x2048x64", (8, 16, 2048, 64), "float16", False),
    ("head dim 80 8x32x1024x80", (8, 32, 1024, 80), "bfloat16", False),
    ("head dim 96 fp32 4x16x1000x96", (4, 16, 1000, 96), "float32", False),
    ("Llama-2-7B q strided 4x32x2048x128", (4, 32, 2048, 128), "bfloat16", True),
    ("Llama block q strided 4x32x1024x128", (4, 32, 1024, 128), "bfloat16", True),
    ("GPT-NeoX-style q strided 8x16x2048x64", (8, 16, 2048, 64), "float16", True),
]


def decompose(q_shape, dtype, r9: bool):
    from tilestudio.core import fusion
    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file

    cs = (1, 1) + tuple(q_shape[2:])
    real = fusion._Fuser._fuse_rotate_half
    if not r9:
        fusion._Fuser._fuse_rotate_half = lambda self, node: False
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "rotary.py")
            with open(path, "w") as f:
                f.write(HEADER + MODEL.format(q=tuple(q_shape), cs=cs, dt=dtype, h=q_shape[-1] // 2))
            return analyze_graph(capture_file(path), "rotary.py")
    finally:
        fusion._Fuser._fuse_rotate_half = real


def launcher(spec):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import load_source

    src = generate_kernel(spec)
    assert not src.skeleton, src.notes
    return load_source(src)[src.launch_name]


def paths(q_shape, dtype):
    """name -> fn(q, cos, sin) for the R9 kernel and the sequence the library generated before R9."""
    (fused,) = decompose(q_shape, dtype, r9=True).kernels
    assert "R9" in fused.fusion_rules
    neg_spec, mul_add_spec = decompose(q_shape, dtype, r9=False).kernels
    r9, neg, mul_add = launcher(fused), launcher(neg_spec), launcher(mul_add_spec)
    half = q_shape[-1] // 2
    cat_name = next(t.name for t in mul_add_spec.inputs if t.name not in ("q", "cos", "sin"))

    def before(q, cos, sin):
        cat = torch.cat((neg(q[..., half:]), q[..., :half]), dim=-1)
        return mul_add(**{"q": q, "cos": cos, "sin": sin, cat_name: cat})

    return {"R9": lambda q, cos, sin: r9(q, cos, sin), "before R9": before}


def eager(q, cos, sin):
    half = q.shape[-1] // 2
    return q * cos + torch.cat((-q[..., half:], q[..., :half]), dim=-1) * sin


def rel_err(got, q, cos, sin) -> float:
    want = eager(q.double(), cos.double(), sin.double())
    big = want.abs() > 1e-3
    return float(((got.double() - want).abs()[big] / want.abs()[big]).max())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--only", default="")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a generator knob (bench/kernels.py's --set), e.g. elementwise_lead_broadcast_load=False")
    args = parser.parse_args()
    for kv in args.set:
        set_knob(*kv.split("=", 1))
    compiled = torch.compile(eager)
    rows = [["case", "R9 ms", "GB/s", "of copy", "before R9 ms", "eager ms", "compile ms", "vs before", "vs eager",
             "vs compile", "rel err R9/before"]]
    for label, q_shape, dtype, strided in SIZES:
        if args.only and args.only not in label:
            continue
        dt = getattr(torch, dtype)
        cs = (1, 1) + tuple(q_shape[2:])
        sets = []
        for seed in range(3):
            g = torch.Generator().manual_seed(seed)
            q_mem = (q_shape[0], q_shape[2], q_shape[1], q_shape[3]) if strided else q_shape
            q, cos, sin = (torch.randn(s, generator=g).to(dt).cuda() for s in (q_mem, cs, cs))
            sets.append((q.transpose(1, 2) if strided else q, cos, sin))
        fns = dict(paths(q_shape, dtype), eager=eager, compile=compiled)
        errs = [rel_err(fns[name](*sets[0]), *sets[0]) for name in ("R9", "before R9")]
        ms = {name: median_ms(fn, sets, reps=args.reps) for name, fn in fns.items()}
        nbytes = sum(t.numel() * t.element_size() for t in sets[0]) + math.prod(q_shape) * sets[0][0].element_size()
        rows.append([f"{label} {dtype}", f"{ms['R9']:.3f}", f"{nbytes / ms['R9'] / 1e6:.0f}",
                     f"{copy_ms(nbytes) / ms['R9']:.2f}", f"{ms['before R9']:.3f}", f"{ms['eager']:.3f}",
                     f"{ms['compile']:.3f}", f"{ms['before R9'] / ms['R9']:.2f}x", f"{ms['eager'] / ms['R9']:.2f}x",
                     f"{ms['compile'] / ms['R9']:.2f}x", f"{errs[0]:.1e}/{errs[1]:.1e}"])
        print(f"done {label}", file=sys.stderr, flush=True)
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
