"""Kernel-library roofline table (GPU): per family and size, time, achieved GB/s or TFLOP/s, fraction of the
ceiling measured in the same run (device copy bandwidth of a 2 GB copy; cuBLAS bf16 matmul rate), for memory-bound
kernels also the fraction of a device copy of the same bytes (the bound at that size), and the speed-up over
PyTorch eager running the same (unfused) op sequence — the spec's reference.

    python bench/kernels.py [--family matmul] [--only SUBSTRING] [--warm-jobs 12]

CUDA events around device work only (a spin kernel keeps the GPU busy while the host enqueues; BENCH_TIMING=wall
times an idle GPU instead, launch gaps included), warm-up, median of N, fresh random inputs rotated between calls
(never zeros). "host us" is the host's enqueue time per call, ours/eager.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time

import torch

from tilestudio.core.gpu_timing import spin_cycles_per_ms

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"

# family, label, model body, inputs expression, kind ("mem" | "flop"), flop formula over input shapes
CASES = [
    ("elementwise", "sigmoid(2x+1)*y fp32 64M", "def forward(self, x, y):\n        return torch.sigmoid(x * 2 + 1) * y",
     "[torch.randn(8192, 8192), torch.randn(8192, 8192)]", "mem", None),
    ("elementwise", "gelu bf16 64M", "def forward(self, x):\n        return F.gelu(x)",
     "[torch.randn(8192, 8192, dtype=torch.bfloat16)]", "mem", None),
    ("elementwise", "x+y bf16 64M", "def forward(self, x, y):\n        return x + y",
     "[torch.randn(8192, 8192, dtype=torch.bfloat16), torch.randn(8192, 8192, dtype=torch.bfloat16)]", "mem", None),
    ("elementwise", "bias+relu bcast fp16", "def forward(self, x, b):\n        return torch.relu(x + b)",
     "[torch.randn(64, 256, 64, 64).half(), torch.randn(256, 1, 1).half()]", "mem", None),
    # rotary embeddings, Llama-2-7B's q (fusion rule R9: one kernel reading q rotated; bench/rotary.py has more sizes)
    ("elementwise", "rotary q*cos+rotate_half(q)*sin 4x32x2048x128 bf16",
     "def forward(self, q, cos, sin):\n        return q * cos + torch.cat((-q[..., 64:], q[..., :64]), dim=-1) * sin",
     "[torch.randn(4, 32, 2048, 128, dtype=torch.bfloat16), torch.randn(1, 1, 2048, 128, dtype=torch.bfloat16), "
     "torch.randn(1, 1, 2048, 128, dtype=torch.bfloat16)]", "mem", None),
    # the same with q arriving as Llama's projection output viewed per head, (b, s, h, d) memory transposed to
    # (b, h, s, d) (SHAPED_INPUTS): the strided kernel reads it in place (core/kernels/elementwise_strided.py)
    ("elementwise", "rotary q strided (b,s,h,d).transpose(1,2) 4x32x2048x128 bf16",
     "def forward(self, q, cos, sin):\n        return q * cos + torch.cat((-q[..., 64:], q[..., :64]), dim=-1) * sin",
     "[torch.randn(4, 32, 2048, 128, dtype=torch.bfloat16), torch.randn(1, 1, 2048, 128, dtype=torch.bfloat16), "
     "torch.randn(1, 1, 2048, 128, dtype=torch.bfloat16)]", "mem", None),
    ("softmax", "softmax rows 8192x8192 fp32", "def forward(self, x):\n        return torch.softmax(x, -1)",
     "[torch.randn(8192, 8192)]", "mem", None),
    ("softmax", "softmax rows 16384x1000 bf16", "def forward(self, x):\n        return torch.softmax(x, -1)",
     "[torch.randn(16384, 1000, dtype=torch.bfloat16)]", "mem", None),
    ("norm", "layer_norm 8192x8192 fp32", "def __init__(self):\n        super().__init__()\n        self.ln = nn.LayerNorm(8192)\n    def forward(self, x):\n        return self.ln(x)",
     "[torch.randn(8192, 8192)]", "mem", None),
    ("norm", "add+layer_norm 16384x4096 bf16", "def __init__(self):\n        super().__init__()\n        self.ln = nn.LayerNorm(4096).to(torch.bfloat16)\n    def forward(self, x, r):\n        return self.ln(x + r)",
     "[torch.randn(16384, 4096, dtype=torch.bfloat16), torch.randn(16384, 4096, dtype=torch.bfloat16)]", "mem", None),
    ("reduction", "sum(-1) 8192x8192 fp32", "def forward(self, x):\n        return x.sum(-1)",
     "[torch.randn(8192, 8192)]", "mem", None),
    ("reduction", "mean(1) 4096x4096x4 fp32", "def forward(self, x):\n        return x.mean(1)",
     "[torch.randn(1024, 4096, 16)]", "mem", None),
    ("scan", "cumsum 4096x4096 fp32", "def forward(self, x):\n        return x.cumsum(-1)",
     "[torch.randn(4096, 4096)]", "mem", None),
    ("softmax", "softmax dim=1 64x256x32x32 fp16 (inner dim)", "def forward(self, x):\n        return torch.softmax(x, 1)",
     "[torch.randn(64, 256, 32, 32).half()]", "mem", None),
    ("softmax", "scale+softmax 4096x32768 fp32 (two-pass rows)",
     "def forward(self, x):\n        return torch.softmax(x * 0.125, -1)", "[torch.randn(4096, 32768)]", "mem", None),
    ("norm", "rms_norm 16384x4096 bf16", "def __init__(self):\n        super().__init__()\n        self.n = nn.RMSNorm(4096).to(torch.bfloat16)\n    def forward(self, x):\n        return self.n(x)",
     "[torch.randn(16384, 4096, dtype=torch.bfloat16)]", "mem", None),
    ("norm", "layer_norm 2048x65536 fp32 (two-pass rows)", "def __init__(self):\n        super().__init__()\n        self.ln = nn.LayerNorm(65536)\n    def forward(self, x):\n        return self.ln(x)",
     "[torch.randn(2048, 65536)]", "mem", None),
    ("norm", "group_norm(32)+silu 32x256x56x56 fp16", "def __init__(self):\n        super().__init__()\n        self.gn = nn.GroupNorm(32, 256).half()\n    def forward(self, x):\n        return F.silu(self.gn(x))",
     "[torch.randn(32, 256, 56, 56).half()]", "mem", None),
    ("norm", "batch_norm eval 64x256x56x56 fp16", "def __init__(self):\n        super().__init__()\n        self.bn = nn.BatchNorm2d(256).half()\n    def forward(self, x):\n        return self.bn(x)",
     "[torch.randn(64, 256, 56, 56).half()]", "mem", None),
    ("reduction", "mean(2,3) global pool 128x512x28x28 fp16", "def forward(self, x):\n        return x.mean((2, 3))",
     "[torch.randn(128, 512, 28, 28).half()]", "mem", None),
    ("reduction", "sum() full 256M fp32 (split + merge)", "def forward(self, x):\n        return x.sum()",
     "[torch.randn(1 << 28)]", "mem", None),
    ("reduction", "argmax(-1) 8192x8192 bf16", "def forward(self, x):\n        return x.argmax(-1)",
     "[torch.randn(8192, 8192, dtype=torch.bfloat16)]", "mem", None),
    ("reduction", "var(-1) 8192x8192 fp32", "def forward(self, x):\n        return x.var(-1)",
     "[torch.randn(8192, 8192)]", "mem", None),
    ("reduction", "logsumexp(-1) 16384x4096 fp32", "def forward(self, x):\n        return torch.logsumexp(x, -1)",
     "[torch.randn(16384, 4096)]", "mem", None),
    ("reduction", "amax(0) 65536x1024 fp16 (column reduce)", "def forward(self, x):\n        return x.amax(0)",
     "[torch.randn(65536, 1024).half()]", "mem", None),
    ("scan", "cumsum 64x1048576 fp32 (chunked carry)", "def forward(self, x):\n        return x.cumsum(-1)",
     "[torch.randn(64, 1 << 20)]", "mem", None),
    ("scan", "cumsum dim=1 64x4096x64 bf16 (inner dim)", "def forward(self, x):\n        return x.cumsum(1)",
     "[torch.randn(64, 4096, 64, dtype=torch.bfloat16)]", "mem", None),
    ("pool", "max_pool2d 3x3/2 64x128x112x112 fp16", "def forward(self, x):\n        return F.max_pool2d(x, 3, 2, 1)",
     "[torch.randn(64, 128, 112, 112).half()]", "mem", None),
    ("gather", "embedding 65536x1024 bf16", "def __init__(self):\n        super().__init__()\n        self.e = nn.Embedding(65536, 1024).to(torch.bfloat16)\n    def forward(self, i):\n        return self.e(i)",
     "[torch.randint(0, 65536, (32, 2048))]", "mem", None),
    ("pool", "max_pool2d 2x2 64x128x112x112 bf16", "def forward(self, x):\n        return F.max_pool2d(x, 2)",
     "[torch.randn(64, 128, 112, 112, dtype=torch.bfloat16)]", "mem", None),
    ("pool", "max_pool2d 3x3/2 32x128x112x112 fp32", "def forward(self, x):\n        return F.max_pool2d(x, 3, 2, 1)",
     "[torch.randn(32, 128, 112, 112)]", "mem", None),
    ("pool", "max_pool2d 2x2 32x128x112x112 fp32", "def forward(self, x):\n        return F.max_pool2d(x, 2)",
     "[torch.randn(32, 128, 112, 112)]", "mem", None),
    ("softmax", "softmax rows 65536x1000 bf16", "def forward(self, x):\n        return torch.softmax(x, -1)",
     "[torch.randn(65536, 1000, dtype=torch.bfloat16)]", "mem", None),
    ("reduction", "mean(2,3) global pool 512x512x28x28 fp16", "def forward(self, x):\n        return x.mean((2, 3))",
     "[torch.randn(512, 512, 28, 28).half()]", "mem", None),
    ("pool", "adaptive_avg_pool2d(1) 128x512x28x28 fp32", "def forward(self, x):\n        return F.adaptive_avg_pool2d(x, 1)",
     "[torch.randn(128, 512, 28, 28)]", "mem", None),
    ("gather", "pad 1,1,1,1 64x128x112x112 fp16", "def forward(self, x):\n        return F.pad(x, (1, 1, 1, 1))",
     "[torch.randn(64, 128, 112, 112).half()]", "mem", None),
    # scatter-style writes (core/kernels/scatter.py): a GNN's sum aggregation over 16 edges per node on average
    # (atomic form: init, atomic_add, no epilogue) and a label-smoothing one-hot (inverse form, J = 1, one launch)
    ("gather", "index_add 262144 edges -> 16384x128 fp32 (atomic)",
     "def forward(self, x, i, s):\n        return x.index_add(0, i, s)",
     "[torch.randn(16384, 128), torch.randint(0, 16384, (262144,)), torch.randn(262144, 128)]", "mem", None),
    ("gather", "one-hot scatter_ *0.9+0.1/C 4096x32000 bf16 (inverse)",
     "def forward(self, x, t):\n        return torch.zeros_like(x).scatter_(1, t[:, None], 1.0) * 0.9 + 0.1 / 32000",
     "[torch.randn(4096, 32000, dtype=torch.bfloat16), torch.randint(0, 32000, (4096,))]", "mem", None),
    # resampling and rearranging gathers (core/kernels/gather_resample.py, gather_rearrange.py): a U-Net decoder's
    # x2 upsampling, a spatial transformer's grid_sample, ShuffleNet's channel shuffle, F.unfold's columns
    ("gather", "upsample nearest x2 32x128x128x128 bf16", "def forward(self, x):\n        return F.interpolate(x, scale_factor=2)",
     "[torch.randn(32, 128, 128, 128, dtype=torch.bfloat16)]", "mem", None),
    ("gather", "upsample bilinear x2 32x128x128x128 bf16",
     "def forward(self, x):\n        return F.interpolate(x, scale_factor=2, mode='bilinear', align_corners=False)",
     "[torch.randn(32, 128, 128, 128, dtype=torch.bfloat16)]", "mem", None),
    ("gather", "grid_sample bilinear 32x64x128x128 fp32",
     "def forward(self, x, g):\n        return F.grid_sample(x, g, mode='bilinear', padding_mode='zeros', align_corners=False)",
     "[torch.randn(32, 64, 128, 128), torch.rand(32, 128, 128, 2) * 2 - 1]", "mem", None),
    ("gather", "channel_shuffle(8) 64x256x56x56 fp16", "def forward(self, x):\n        return F.channel_shuffle(x, 8)",
     "[torch.randn(64, 256, 56, 56).half()]", "mem", None),
    ("gather", "unfold 3x3 pad 1 16x64x56x56 fp16", "def forward(self, x):\n        return F.unfold(x, 3, padding=1)",
     "[torch.randn(16, 64, 56, 56).half()]", "mem", None),
    ("topk", "topk k=2 router 65536x64 fp32", "def forward(self, x):\n        return torch.topk(x, 2, dim=-1)",
     "[torch.randn(65536, 64)]", "mem", None),
    ("topk", "topk k=8 16384x1024 bf16", "def forward(self, x):\n        return torch.topk(x, 8)",
     "[torch.randn(16384, 1024, dtype=torch.bfloat16)]", "mem", None),
    # whole-line bitonic sorts (core/kernels/sort_bitonic.py): top-p sampling's sort over a vocabulary slice, a
    # large top-k
    ("topk", "sort 4096 per line 8192x4096 fp32", "def forward(self, x):\n        return torch.sort(x, dim=-1, descending=True)",
     "[torch.randn(8192, 4096)]", "mem", None),
    ("topk", "topk k=256 16384x2048 bf16", "def forward(self, x):\n        return torch.topk(x, 256)",
     "[torch.randn(16384, 2048, dtype=torch.bfloat16)]", "mem", None),
    # lines longer than one tile (core/kernels/sort_long.py: chunk sorts, runs ranked by binary search): top-k
    # sampling over Llama's 32000-token vocabulary, top-p's sort of it
    ("topk", "topk k=50 vocab 1024x32000 bf16", "def forward(self, x):\n        return torch.topk(x, 50)",
     "[torch.randn(1024, 32000, dtype=torch.bfloat16)]", "mem", None),
    ("topk", "sort vocab 256x32000 fp32", "def forward(self, x):\n        return torch.sort(x, dim=-1, descending=True)",
     "[torch.randn(256, 32000)]", "mem", None),
    ("gather", "bucketize 64M fp32 into 1023 boundaries", "def forward(self, x, b):\n        return torch.bucketize(x, b)",
     "[torch.randn(1 << 26), torch.randn(1023).sort()[0]]", "mem", None),
    ("elementwise", "lgamma+digamma fp32 64M", "def forward(self, x):\n        return torch.lgamma(x) + torch.digamma(x)",
     "[torch.rand(1 << 26) * 10 + 0.1]", "mem", None),
    ("loss", "mse_loss mean 8192x8192 fp32", "def forward(self, x, y):\n        return F.mse_loss(x, y)",
     "[torch.randn(8192, 8192), torch.randn(8192, 8192)]", "mem", None),
    ("loss", "cross_entropy 4096x65536 bf16", "def forward(self, x, t):\n        return F.cross_entropy(x, t)",
     "[torch.randn(4096, 65536, dtype=torch.bfloat16), torch.randint(0, 65536, (4096,))]", "mem", None),
    ("attention", "sdpa 8x16x2048x2048x128 bf16", "def forward(self, q, k, v):\n        return F.scaled_dot_product_attention(q, k, v)",
     "[torch.randn(8, 16, 2048, 128, dtype=torch.bfloat16), torch.randn(8, 16, 2048, 128, dtype=torch.bfloat16), "
     "torch.randn(8, 16, 2048, 128, dtype=torch.bfloat16)]", "flop",
     lambda s: 4 * s[0][0] * s[0][1] * s[0][2] * s[1][2] * s[0][3]),
    # attention written by hand (fusion rule R8: one flash kernel; eager runs the matmul, softmax, matmul sequence)
    ("attention", "attention by hand ViT-B/16 64x12x197x197x64 fp16",
     "def forward(self, q, k, v):\n        return torch.softmax(q @ k.transpose(-2, -1) * 0.125, -1) @ v",
     "[torch.randn(64, 12, 197, 64).half(), torch.randn(64, 12, 197, 64).half(), torch.randn(64, 12, 197, 64).half()]",
     "flop", lambda s: 4 * s[0][0] * s[0][1] * s[0][2] * s[1][3] * s[0][3]),
    ("attention", "attention by hand causal GPT-2 8x12x1024x1024x64 bf16",
     "def forward(self, q, k, v, m):\n        att = (q @ k.transpose(-2, -1)) * 0.125\n"
     "        att = att.masked_fill(m == 0, float('-inf'))\n        return torch.softmax(att, -1) @ v",
     "[torch.randn(8, 12, 1024, 64, dtype=torch.bfloat16), torch.randn(8, 12, 1024, 64, dtype=torch.bfloat16), "
     "torch.randn(8, 12, 1024, 64, dtype=torch.bfloat16), torch.tril(torch.ones(1, 1, 1024, 1024))]",
     "flop", lambda s: 4 * s[0][0] * s[0][1] * s[0][2] * s[1][3] * s[0][3]),
    # Hugging Face's eager attention (BERT-base size): an additive key mask, softmax in float32, cast back
    ("attention", "attention by hand HF float32 softmax BERT 32x12x512x512x64 fp16",
     "def forward(self, q, k, v, m):\n        w = torch.matmul(q, k.transpose(2, 3)) * 0.125 + m\n"
     "        return torch.matmul(F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype), v)",
     "[torch.randn(32, 12, 512, 64).half(), torch.randn(32, 12, 512, 64).half(), torch.randn(32, 12, 512, 64).half(), "
     "torch.randn(32, 1, 1, 512).half()]",
     "flop", lambda s: 4 * s[0][0] * s[0][1] * s[0][2] * s[1][3] * s[0][3]),
    ("attention", "sdpa causal 8x16x2048x2048x64 fp16", "def forward(self, q, k, v):\n        return F.scaled_dot_product_attention(q, k, v, is_causal=True)",
     "[torch.randn(8, 16, 2048, 64).half(), torch.randn(8, 16, 2048, 64).half(), torch.randn(8, 16, 2048, 64).half()]",
     "flop", lambda s: 2 * s[0][0] * s[0][1] * s[0][2] * s[1][2] * s[0][3]),
    ("matmul", "mm 8192^3 bf16", "def forward(self, a, b):\n        return a @ b",
     "[torch.randn(8192, 8192, dtype=torch.bfloat16), torch.randn(8192, 8192, dtype=torch.bfloat16)]", "flop",
     lambda s: 2 * s[0][0] * s[0][1] * s[1][1]),
    ("matmul", "mm 4096^3 fp16", "def forward(self, a, b):\n        return a @ b",
     "[torch.randn(4096, 4096).half(), torch.randn(4096, 4096).half()]", "flop",
     lambda s: 2 * s[0][0] * s[0][1] * s[1][1]),
    ("matmul", "linear+gelu 8192x8192x8192 bf16", "def __init__(self):\n        super().__init__()\n        self.l = nn.Linear(8192, 8192).to(torch.bfloat16)\n    def forward(self, x):\n        return F.gelu(self.l(x))",
     "[torch.randn(8192, 8192, dtype=torch.bfloat16)]", "flop", lambda s: 2 * s[0][0] * s[0][1] * s[1][0]),
    ("matmul", "bmm 64x1024x128x1024 bf16", "def forward(self, a, b):\n        return torch.bmm(a, b)",
     "[torch.randn(64, 1024, 128, dtype=torch.bfloat16), torch.randn(64, 128, 1024, dtype=torch.bfloat16)]", "flop",
     lambda s: 2 * s[0][0] * s[0][1] * s[0][2] * s[1][2]),
    ("conv", "conv2d 3x3 32x256x56x56->256 bf16", "def __init__(self):\n        super().__init__()\n        self.c = nn.Conv2d(256, 256, 3, padding=1).to(torch.bfloat16)\n    def forward(self, x):\n        return self.c(x)",
     "[torch.randn(32, 256, 56, 56, dtype=torch.bfloat16)]", "flop",
     lambda s: 2 * s[0][0] * 256 * s[0][1] * 9 * s[0][2] * s[0][3]),
    ("conv", "conv2d 7x7/2+bn+relu 64x3x224x224->64 fp16 (stem)", "def __init__(self):\n        super().__init__()\n        self.c = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False).half()\n        self.b = nn.BatchNorm2d(64).half()\n    def forward(self, x):\n        return torch.relu(self.b(self.c(x)))",
     "[torch.randn(64, 3, 224, 224).half()]", "flop", lambda s: 2 * s[0][0] * 64 * s[0][1] * 49 * 112 * 112),
    ("conv", "conv2d+bn+relu 1x1 64x512x28x28 fp16", "def __init__(self):\n        super().__init__()\n        self.c = nn.Conv2d(512, 512, 1).half()\n        self.b = nn.BatchNorm2d(512).half()\n    def forward(self, x):\n        return torch.relu(self.b(self.c(x)))",
     "[torch.randn(64, 512, 28, 28).half()]", "flop", lambda s: 2 * s[0][0] * 512 * s[0][1] * s[0][2] * s[0][3]),
]


def print_table(rows: list[list[str]]) -> None:
    """Print rows of strings as left-aligned columns (the first row is the header)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


# Device time, not launch gaps: before each timed call a spin kernel (torch.cuda._sleep) keeps the GPU busy for
# longer than the host takes to enqueue the start event, the call and the end event, so the events bracket only
# the device work. Timing an idle GPU instead adds the host's enqueue time (tens of microseconds for a Python
# ct.launch wrapper) to every call; BENCH_TIMING=wall restores that for comparison. host_us() reports the host
# side separately.
TIMING = os.environ.get("BENCH_TIMING", "device")
_cycles_per_ms = spin_cycles_per_ms  # (core/gpu_timing.py; launch_overhead.py imports it from here)


def host_us(fn, arg_sets, reps=20) -> float:
    """Median host time of one call (enqueue only: the GPU is kept busy so the call never waits on it), µs."""
    times = []
    for i in range(reps):
        torch.cuda._sleep(int(_cycles_per_ms() * 2))
        t0 = time.perf_counter()
        fn(*arg_sets[i % len(arg_sets)])
        times.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
    return statistics.median(times)


def median_ms(fn, arg_sets, reps=20, warmup=3) -> float:
    """Median device time of fn(*args) in ms (CUDA events; see TIMING above), arg sets rotated between calls."""
    for i in range(warmup):
        fn(*arg_sets[i % len(arg_sets)])
    torch.cuda.synchronize()
    lead = 0
    if TIMING != "wall":
        t0 = time.perf_counter()
        fn(*arg_sets[0])
        host_ms = (time.perf_counter() - t0) * 1e3
        torch.cuda.synchronize()
        lead = int(_cycles_per_ms() * (3 * host_ms + 0.2))
    times = []
    for i in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if lead:
            torch.cuda._sleep(lead)
        s.record()
        fn(*arg_sets[i % len(arg_sets)])
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def ceilings() -> tuple[float, float]:
    x = torch.randn(1 << 28, device="cuda")
    y = torch.empty_like(x)
    copy_ms = median_ms(lambda a: y.copy_(a), [(x,)])
    copy_gbs = 2 * x.numel() * 4 / copy_ms / 1e6
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    mm_ms = median_ms(lambda p, q: p @ q, [(a, b)])
    return copy_gbs, 2 * 8192 ** 3 / mm_ms / 1e9


def set_knob(key: str, value: str) -> None:
    """--set KEY=VALUE of the bench scripts: one generator knob (a key of rowwise.TUNING, indexing.MEMORY_TUNING,
    gemm_common.TILES or sort_bitonic.SORT_TUNING) set to a Python literal before any case is generated."""
    import ast

    from tilestudio.core.kernels.gemm_common import TILES
    from tilestudio.core.kernels.indexing import MEMORY_TUNING
    from tilestudio.core.kernels.rowwise import TUNING
    from tilestudio.core.kernels.sort_bitonic import SORT_TUNING

    tables = [t for t in (TUNING, MEMORY_TUNING, TILES, SORT_TUNING) if key in t]
    if not tables:
        raise SystemExit(f"--set {key}: not a key of TUNING, MEMORY_TUNING, TILES or SORT_TUNING")
    tables[0][key] = ast.literal_eval(value)


def spec_for(body: str, inputs: str):
    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "case.py")
        with open(path, "w") as f:
            f.write(HEADER + "class Model(nn.Module):\n    " + body.replace("\n", "\n") +
                    f"\n\n\ndef get_inputs():\n    return {inputs}\n")
        dec = analyze_graph(capture_file(path), "case.py")
    if len(dec.kernels) != 1:
        raise RuntimeError(f"expected one fused kernel, got {dec.execution_order}")
    return dec.kernels[0]


def prepare_case(case):
    """(spec, source, namespace, check) of one case: generated, loaded, JIT-compiled and checked once against the
    float64 reference (namespace and check are None for a skeleton)."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import load_source
    from tilestudio.core.kernels.checking import check_launch

    spec = spec_for(case[2], case[3])
    src = generate_kernel(spec)
    if src.skeleton:
        return spec, src, None, None
    ns = load_source(src)
    return spec, src, ns, check_launch(spec, ns, src.launch_name, src.prepare_name, "cuda", seed=3,
                                       make_input=_index_inputs(spec, case[1]))


def run_case(case, copy_gbs, mm_tflops):
    from tilestudio.core.kernels.checking import launch_args, make_inputs

    family, label, body, inputs, kind, flops = case
    spec, src, ns, check = prepare_case(case)
    if src.skeleton:
        return [family, label, "skeleton", "", "", "", "", "", ""]
    sets = []
    for seed in range(3):
        ins = make_inputs(spec, "cuda", seed, _index_inputs(spec, label))
        sets.append(launch_args(spec, ns, src.prepare_name, ins))
    ms = median_ms(ns[src.launch_name], sets)
    ref_ns = {"torch": torch, "math": math}
    exec(spec.reference, ref_ns)  # noqa: S102
    ref_sets = [make_inputs(spec, "cuda", s, _index_inputs(spec, label)) for s in range(3)]
    eager_ms = median_ms(ref_ns[spec.reference_name], ref_sets)
    same_size = ""
    if kind == "mem":
        nbytes = moved_bytes(ns[src.launch_name], sets[0])
        rate = nbytes / ms / 1e6
        metric, frac = f"{rate:8.0f} GB/s", rate / copy_gbs
        same_size = f"{copy_ms(nbytes) / ms:.2f}"
    else:
        shapes = [t.shape for t in spec.inputs]
        tf = flops(shapes) / ms / 1e9
        metric, frac = f"{tf:8.1f} TFLOP/s", tf / mm_tflops
    host = f"{host_us(ns[src.launch_name], sets):.0f}/{host_us(ref_ns[spec.reference_name], ref_sets):.0f}"
    return [family, label, "ok" if check.ok else f"WRONG {check.message}", f"{ms:.3f}", metric, f"{frac:.2f}",
            same_size, f"{eager_ms / ms:.2f}x", host]


def moved_bytes(fn, args) -> int:
    """Bytes a call fn(*args) moves at least once: its tensor arguments read plus its outputs written (one call)."""
    out = fn(*args)
    outs = out if isinstance(out, tuple) else (out,)
    return (sum(t.numel() * t.element_size() for t in args if isinstance(t, torch.Tensor))
            + sum(o.numel() * o.element_size() for o in outs))


def copy_ms(nbytes: int) -> float:
    """A device copy moving the same bytes as a kernel (half read, half written): below a few hundred MB even a
    copy stays under the large-copy ceiling (launch, ramp-up and tail), so this is the fair bound at that size."""
    n = max(1, nbytes // 2)
    src = torch.randint(1, 255, (n,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return median_ms(lambda a: dst.copy_(a), [(src,)])


# inputs whose values or layout shape the work, by case label: input name -> the tensor made from its shape and
# the set's generator (GPT-2's causal tril buffer: the masked_fill and softmax run on real masked rows, a random mask
# would mask none; a query viewed per head from a (b, s, h, d) projection: strided)
SHAPED_INPUTS = {
    "index_add 262144 edges -> 16384x128 fp32 (atomic)": {"i": lambda shape, gen: torch.randint(0, 16384, shape,
                                                                                                generator=gen)},
    "one-hot scatter_ *0.9+0.1/C 4096x32000 bf16 (inverse)": {
        "unsqueeze": lambda shape, gen: torch.randint(0, 32000, shape, generator=gen)},
    "attention by hand causal GPT-2 8x12x1024x1024x64 bf16": {"m": lambda shape, gen: torch.tril(torch.ones(shape))},
    "rotary q strided (b,s,h,d).transpose(1,2) 4x32x2048x128 bf16": {
        "q": lambda shape, gen: torch.randn(shape[0], shape[2], shape[1], shape[3], generator=gen).transpose(1, 2)},
}


def _index_inputs(spec, label=""):
    shaped = SHAPED_INPUTS.get(label, {})
    bound = 65536  # embedding rows / classes of the cases
    if any("cross_entropy" in op or "nll_loss" in op for op in spec.operations):  # targets below the class count
        bound = min(bound, next(t.shape[1] for t in spec.inputs if t.dtype not in ("int64", "int32")))

    def make(t, gen):
        from tilestudio.core.kernels.checking import random_input

        if t.name in shaped:
            return shaped[t.name](t.shape, gen).to(getattr(torch, t.dtype)).cuda()
        if t.dtype in ("int64", "int32") and t.role == "activation":
            return torch.randint(0, bound, t.shape, generator=gen, dtype=getattr(torch, t.dtype)).cuda()
        return random_input(t, "cuda", gen)
    return make


def _warm(index: int) -> str:
    """Generate, JIT-compile and check one case in a worker process: the kernels land in cuTile's on-disk cache,
    so the timing pass (one process, one case at a time) finds them compiled. Nothing is timed here."""
    case = CASES[index]
    try:
        prepare_case(case)
        return ""
    except Exception as exc:  # noqa: BLE001 - the timing pass reports it
        return f"{case[1]}: {type(exc).__name__}"


def warm_cache(cases, jobs: int) -> None:
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(jobs) as pool:
        for err in pool.imap_unordered(_warm, [CASES.index(c) for c in cases]):
            if err:
                print(f"warm-up: {err}", file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--family", default=None, help="family name(s), comma-separated")
    parser.add_argument("--only", default=None, help="substring of the case labels to run")
    parser.add_argument("--warm-jobs", type=int, default=0,
                        help="compile every case first in this many processes (fills cuTile's disk cache)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench/kernels.py needs a CUDA GPU", file=sys.stderr)
        return 2
    cases = [c for c in CASES if (not args.family or c[0] in args.family.split(",")) and (not args.only or args.only in c[1])]
    if args.warm_jobs > 1:
        warm_cache(cases, args.warm_jobs)
    copy_gbs, mm_tflops = ceilings()
    print(f"ceilings on {torch.cuda.get_device_name()}: copy {copy_gbs:.0f} GB/s, cuBLAS bf16 {mm_tflops:.0f} TFLOP/s")
    print(f"timing: {TIMING} (device = spin-fronted CUDA events, launch gaps excluded; host us = enqueue time of one "
          "call, ours/eager)")
    rows = [["family", "case", "check", "ms", "achieved", "of ceiling", "of same-size copy", "vs eager",
             "host us"]]
    for case in cases:
        try:
            rows.append(run_case(case, copy_gbs, mm_tflops))
        except Exception as exc:  # noqa: BLE001 - one case never stops the table
            rows.append([case[0], case[1], f"ERROR {type(exc).__name__}: {str(exc)[:80]}", "", "", "", "", "", ""])
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
