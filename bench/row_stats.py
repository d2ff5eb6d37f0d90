"""Hand-written row statistics broadcast back over their rows (fusion rule R7, core/kernels/reduction_rows.py): each
case decomposed with R7 (one kernel per statistic) and without it (fusion.ROW_STAT_MAX = 0: a reduction kernel,
then an elementwise kernel reading the rows again), every kernel checked against its float64 reference and timed
alone (device time, CUDA events, medians over fresh random inputs; a decomposition's time is the sum of its
kernels'), against PyTorch eager running the model's forward and a device copy of the bytes the fused kernels move.

    python bench/row_stats.py [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels import HEADER, _index_inputs, copy_ms, median_ms, moved_bytes, print_table  # noqa: E402

_RMS_HF = ("def __init__(self):\n        super().__init__()\n"
           "        self.w = nn.Parameter(torch.rand(4096, dtype=torch.bfloat16) + 0.5)\n"
           "    def forward(self, x):\n        h = x.to(torch.float32)\n"
           "        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)\n"
           "        return self.w * h.to(x.dtype)")
_LN = ("def __init__(self):\n        super().__init__()\n        self.w = nn.Parameter(torch.rand(768) + 0.5)\n"
       "        self.b = nn.Parameter(torch.randn(768))\n    def forward(self, x):\n"
       "        m = x.mean(-1, keepdim=True)\n        d = x - m\n        v = (d * d).mean(-1, keepdim=True)\n"
       "        return d / torch.sqrt(v + 1e-5) * self.w + self.b")
CASES = [
    ("rms_norm by hand (Hugging Face casts) 16384x4096 bf16", _RMS_HF,
     "[torch.randn(16384, 4096, dtype=torch.bfloat16)]"),
    ("rms_norm by hand 16384x4096 fp32",
     "def forward(self, x):\n        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)",
     "[torch.randn(16384, 4096)]"),
    ("log_softmax by hand 16384x1000 fp32",
     "def forward(self, x):\n        return x - torch.logsumexp(x, -1, keepdim=True)", "[torch.randn(16384, 1000)]"),
    ("layer_norm by hand 65536x768 fp32", _LN, "[torch.randn(65536, 768)]"),
    ("softmax by hand 32768x256 fp16",
     "def forward(self, x):\n        e = torch.exp(x - x.amax(-1, keepdim=True))\n"
     "        return e / e.sum(-1, keepdim=True)", "[torch.randn(32768, 256).half()]"),
]


def _source(body: str, inputs: str) -> str:
    return (HEADER + "class Model(nn.Module):\n    " + body +
            f"\n\n\ndef get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return []\n")


def decompose(body: str, inputs: str, r7: bool):
    from tilestudio.core import fusion
    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file

    saved = fusion.ROW_STAT_MAX
    fusion.ROW_STAT_MAX = saved if r7 else 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "case.py")
            with open(path, "w") as f:
                f.write(_source(body, inputs))
            return analyze_graph(capture_file(path), "case.py")
    finally:
        fusion.ROW_STAT_MAX = saved


def time_kernels(dec) -> tuple[float, int, str]:
    """(summed median ms, bytes the kernels move, 'ok' or the first check failure) of a decomposition."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import load_source
    from tilestudio.core.kernels.checking import check_launch, launch_args, make_inputs

    total, nbytes, status = 0.0, 0, "ok"
    for spec in dec.kernels:
        src = generate_kernel(spec)
        if src.skeleton:
            return math.nan, 0, f"skeleton {spec.id}"
        ns = load_source(src)
        check = check_launch(spec, ns, src.launch_name, src.prepare_name, "cuda", seed=3)
        if not check.ok and status == "ok":
            status = f"WRONG {spec.id}: {check.message}"
        sets = [launch_args(spec, ns, src.prepare_name, make_inputs(spec, "cuda", s, _index_inputs(spec)))
                for s in range(3)]
        total += median_ms(ns[src.launch_name], sets)
        nbytes += moved_bytes(ns[src.launch_name], sets[0])
    return total, nbytes, status


def eager_ms(body: str, inputs: str) -> float:
    ns: dict = {}
    exec(_source(body, inputs), ns)  # noqa: S102 - the bench's own case code
    model = ns["Model"]().cuda()
    sets = []
    for seed in range(3):
        torch.manual_seed(seed)
        sets.append(tuple(t.cuda() for t in ns["get_inputs"]()))
    with torch.no_grad():
        return median_ms(model, sets)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="", help="run the cases whose label contains this")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench/row_stats.py needs a CUDA GPU", file=sys.stderr)
        return 2
    rows = [["case", "check", "R7 ms", "kernels", "without ms", "kernels", "of copy", "vs without", "vs eager"]]
    for label, body, inputs in CASES:
        if args.only and args.only not in label:
            continue
        fused, plain = decompose(body, inputs, True), decompose(body, inputs, False)
        f_ms, f_bytes, f_ok = time_kernels(fused)
        p_ms, _, p_ok = time_kernels(plain)
        e_ms = eager_ms(body, inputs)
        status = f_ok if f_ok != "ok" else (p_ok if p_ok != "ok" else "ok")
        rows.append([label, status, f"{f_ms:.3f}", str(len(fused.kernels)), f"{p_ms:.3f}", str(len(plain.kernels)),
                     f"{copy_ms(f_bytes) / f_ms:.2f}", f"{p_ms / f_ms:.2f}x", f"{e_ms / f_ms:.2f}x"])
        print(" | ".join(rows[-1]), flush=True)
    print(f"\nrow statistics broadcast back (R7) on {torch.cuda.get_device_name()}; device time, sums of kernel medians")
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
