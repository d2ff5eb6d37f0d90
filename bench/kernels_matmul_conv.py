"""Matmul and convolution kernels vs PyTorch (cuBLAS / cuDNN) on large problems (GPU).

    python bench/kernels_matmul_conv.py [--only SUBSTRING] [--reps 20]

For each case: the generated cuTile launch (host wrapper included: the conv input-padding kernel, when there is
one, is part of the measured time) and the spec's PyTorch reference on the same inputs, CUDA events, warm-up,
median of N over three rotated input sets; TFLOP/s from the GEMM/conv dimensions; "ratio" = torch ms / ours
(>= 0.8 is the target for fp16/bf16). Each case is checked once against the float64 reference first.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile

import torch

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
BF, HF = "torch.bfloat16", "torch.float16"


def _mod(init: str, forward: str, args: str = "x") -> str:
    stmts = "\n".join(f"        {s.strip()}" for s in init.split(";") if s.strip()) or "        pass"
    return (f"class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n{stmts}\n"
            f"    def forward(self, {args}):\n        return {forward}\n")


# label, model source, inputs expression
CASES = [
    ("mm 8192^3 bf16", _mod("", "a @ b", "a, b"),
     f"[torch.randn(8192, 8192, dtype={BF}), torch.randn(8192, 8192, dtype={BF})]"),
    ("mm 4096^3 fp16", _mod("", "a @ b", "a, b"),
     f"[torch.randn(4096, 4096, dtype={HF}), torch.randn(4096, 4096, dtype={HF})]"),
    ("mm 1024^3 fp16", _mod("", "a @ b", "a, b"),
     f"[torch.randn(1024, 1024, dtype={HF}), torch.randn(1024, 1024, dtype={HF})]"),
    ("mm 4096^3 fp32 (no TF32)", _mod("", "a @ b", "a, b"), "[torch.randn(4096, 4096), torch.randn(4096, 4096)]"),
    ("linear 8192x8192x8192 bf16", _mod(f"self.l = nn.Linear(8192, 8192).to({BF})", "self.l(x)"),
     f"[torch.randn(8192, 8192, dtype={BF})]"),
    ("linear+gelu 16x512x4096->11008 bf16", _mod(f"self.l = nn.Linear(4096, 11008).to({BF})", "F.gelu(self.l(x))"),
     f"[torch.randn(16, 512, 4096, dtype={BF})]"),
    ("bmm 64x1024x128x1024 bf16", _mod("", "torch.bmm(a, b)", "a, b"),
     f"[torch.randn(64, 1024, 128, dtype={BF}), torch.randn(64, 128, 1024, dtype={BF})]"),
    ("q@k^T 8x16x2048x2048x128 bf16 (transposed B)", _mod("", "torch.einsum('bhqd,bhkd->bhqk', q, k)", "q, k"),
     f"[torch.randn(8, 16, 2048, 128, dtype={BF}), torch.randn(8, 16, 2048, 128, dtype={BF})]"),
    ("conv2d 3x3 32x256x56x56->256 bf16", _mod(f"self.c = nn.Conv2d(256, 256, 3, padding=1).to({BF})", "self.c(x)"),
     f"[torch.randn(32, 256, 56, 56, dtype={BF})]"),
    ("conv2d 3x3/2 64x128x56x56->256 fp16", _mod(f"self.c = nn.Conv2d(128, 256, 3, 2, 1).to({HF})", "self.c(x)"),
     f"[torch.randn(64, 128, 56, 56, dtype={HF})]"),
    ("conv2d 1x1+bn+relu 64x512x28x28 fp16", _mod(f"self.c = nn.Conv2d(512, 512, 1).to({HF}); "
                                                  f"self.b = nn.BatchNorm2d(512).to({HF})",
                                                  "torch.relu(self.b(self.c(x)))"),
     f"[torch.randn(64, 512, 28, 28, dtype={HF})]"),
    ("conv2d 7x7/2 64x3x224x224->64 fp16 (stem)", _mod(f"self.c = nn.Conv2d(3, 64, 7, 2, 3).to({HF})", "self.c(x)"),
     f"[torch.randn(64, 3, 224, 224, dtype={HF})]"),
    ("depthwise 3x3 64x256x56x56 fp16", _mod(f"self.c = nn.Conv2d(256, 256, 3, padding=1, groups=256).to({HF})",
                                             "self.c(x)"), f"[torch.randn(64, 256, 56, 56, dtype={HF})]"),
    ("conv1d k5 64x256x4096->256 bf16", _mod(f"self.c = nn.Conv1d(256, 256, 5, padding=2).to({BF})", "self.c(x)"),
     f"[torch.randn(64, 256, 4096, dtype={BF})]"),
    ("conv3d 3x3x3 8x64x16x56x56->64 fp16", _mod(f"self.c = nn.Conv3d(64, 64, 3, padding=1).to({HF})", "self.c(x)"),
     f"[torch.randn(8, 64, 16, 56, 56, dtype={HF})]"),
    ("conv_transpose2d k4/2 16x256x32x32->128 bf16",
     _mod(f"self.c = nn.ConvTranspose2d(256, 128, 4, 2, 1).to({BF})", "self.c(x)"),
     f"[torch.randn(16, 256, 32, 32, dtype={BF})]"),
    ("conv_transpose3d k3/2 8x64x16x32x32->32 fp16",
     _mod(f"self.c = nn.ConvTranspose3d(64, 32, 3, 2, 1).to({HF})", "self.c(x)"),
     f"[torch.randn(8, 64, 16, 32, 32, dtype={HF})]"),
]


from kernels import median_ms, print_table  # noqa: E402  (shared with bench/kernels.py, beside this script)


def spec_for(model: str, inputs: str, families: tuple[str, ...] = ("matmul", "conv")):
    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "case.py")
        with open(path, "w") as f:
            f.write(HEADER + model + f"\n\ndef get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n"
                    "    return []\n")
        dec = analyze_graph(capture_file(path), "case.py")
    specs = [k for k in dec.kernels if k.family in families]
    if len(specs) != 1 or len(dec.kernels) != 1:
        raise RuntimeError(f"expected one {'/'.join(families)} kernel, got {[k.operations for k in dec.kernels]}")
    return specs[0]


def flops(spec) -> float:
    """2 x multiply-adds of the anchor op."""
    anchor = next(r for r in spec.ops if r.category in ("matmul", "convolution"))
    if anchor.category == "matmul":
        from tilestudio.core.kernels.matmul import parse_anchor

        g = parse_anchor(spec, anchor)
        batch = math.prod(g.out_shape[d] for d in g.ob)
        return 2.0 * batch * math.prod(g.out_shape[d] for d in g.om) * math.prod(g.out_shape[d] for d in g.on) * g.K
    from tilestudio.core.kernels.conv import parse_conv

    cv = parse_conv(spec, anchor)
    if cv.transposed:
        return 2.0 * cv.N * cv.C * math.prod(cv.insp) * cv.Cog * cv.taps
    return 2.0 * cv.N * cv.Co * math.prod(cv.outsp) * cv.Cig * cv.taps


def run_case(label: str, model: str, inputs: str, reps: int) -> list[str]:
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import load_source
    from tilestudio.core.kernels.checking import check_launch, launch_args, make_inputs

    spec = spec_for(model, inputs)
    src = generate_kernel(spec)
    if src.skeleton:
        return [label, "skeleton: " + "; ".join(src.notes), "", "", "", "", "", ""]
    ns = load_source(src)
    check = check_launch(spec, ns, src.launch_name, src.prepare_name, "cuda", seed=3)
    ins = [make_inputs(spec, "cuda", seed) for seed in range(3)]
    ours = [launch_args(spec, ns, src.prepare_name, x) for x in ins]
    ms = median_ms(ns[src.launch_name], ours, reps)
    ref_ns = {"torch": torch, "math": math}
    exec(compile(spec.reference, spec.reference_name, "exec"), ref_ns)  # noqa: S102
    ref_ms = median_ms(ref_ns[spec.reference_name], ins, reps)
    f = flops(spec)
    return [label, "ok" if check.ok else f"WRONG {check.message}", f"{ms:.3f}", f"{f / ms / 1e9:.1f}",
            f"{ref_ms:.3f}", f"{f / ref_ms / 1e9:.1f}", f"{ref_ms / ms:.2f}", src.notes[0] if src.notes else ""]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default=None, help="run the cases whose label contains this text")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench/kernels_matmul_conv.py needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    print(f"{torch.cuda.get_device_name()}: cuTile kernels vs PyTorch (cuBLAS/cuDNN), median of {args.reps}")
    rows = [["case", "check", "ms", "TFLOP/s", "torch ms", "torch TFLOP/s", "ratio", "tiles"]]
    for label, model, inputs in CASES:
        if args.only and args.only not in label:
            continue
        try:
            rows.append(run_case(label, model, inputs, args.reps))
        except Exception as exc:  # noqa: BLE001 - one case never stops the table
            rows.append([label, f"ERROR {type(exc).__name__}: {str(exc)[:100]}", "", "", "", "", "", ""])
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
        torch.cuda.empty_cache()
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
