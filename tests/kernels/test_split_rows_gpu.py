"""Long norm and softmax rows split over cooperating blocks that read once (split_rows.py; TUNING
["norm_split_elems"] / ["softmax_split_elems"], group norm groups with ["norm_split_groups"]) on the GPU:
thousands of blocks, each waiting on its row's other segments through atomics while the rest of the grid runs,
fresh random inputs per seed, poisoned outputs, float64 references. (The CPU test, test_split_rows.py, runs the
blocks as concurrent threads in the emulator.)"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

CASES = [  # name, family, init, forward, input shape, dtype, elements per block
    ("layer_norm_long", "norm", "self.n = nn.LayerNorm(65536)", "self.n(x)", (1024, 65536), "float32", 16384),
    ("layer_norm_4k_blocks", "norm", "self.n = nn.LayerNorm(65536)", "self.n(x)", (512, 65536), "float32", 4096),
    ("rms_norm_bf16", "norm", "", "F.rms_norm(x, (32768,))", (1024, 32768), "bfloat16", 8192),
    # group norm groups as channel rows (8 x 3136, 7 ragged chunks), instance norm rows
    ("group_norm_silu", "norm", "self.g = nn.GroupNorm(32, 256).half()", "F.silu(self.g(x))", (32, 256, 56, 56),
     "float16", 4096),
    ("instance_norm", "norm", "self.i = nn.InstanceNorm2d(64, affine=True)", "self.i(x)", (8, 64, 200, 200),
     "float32", 8192),
    # ragged: 5 segments of 2 chunks (the last chunk padded), a prologue held in registers
    ("layer_norm_prologue_unaligned", "norm", "self.n = nn.LayerNorm(20000)", "self.n(x * 2.0 + 1.0)",
     (999, 20000), "float32", 4096),
    # (sizes kept to a few GB of device memory with the float64 reference: the GPU tests run 14 processes at once)
    ("softmax_vocab", "softmax", "", "torch.softmax(x, -1)", (512, 131072), "float32", 16384),
    ("log_softmax_bf16_16k", "softmax", "", "torch.log_softmax(x * 0.5, -1)", (512, 131072), "bfloat16", 16384),
    ("softmax_unaligned", "softmax", "", "torch.softmax(x, -1)", (301, 50257), "float32", 4096),
    # TUNING["softmax_split_ragged"]: 4-chunk segments, the last one short (its slots repeat the last chunk)
    ("ragged_vocab", "softmax", "", "torch.softmax(x, -1)", (1024, 50257), "float32", 16384),
    ("ragged_exact_log_bf16", "softmax", "", "torch.log_softmax(x, -1)", (512, 53248), "bfloat16", 16384),
    # TUNING["norm_split_ragged"]: group norm groups of 7 chunks in 2 segments of 4, the last short
    ("ragged_group_norm_silu", "norm", "self.g = nn.GroupNorm(32, 256).half()", "F.silu(self.g(x))",
     (32, 256, 56, 56), "float16", 16384),
    # 13 whole chunks of 2048 in 4 segments of 4 (the last: 1 chunk, 3 repeats), rows off zero mean
    ("ragged_layer_norm_offset_bf16", "norm", "self.n = nn.LayerNorm(26624).to(torch.bfloat16)", "self.n(x + 3.0)",
     (1024, 26624), "bfloat16", 8192),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name,family,init,forward,shape,dtype,elems", CASES, ids=[c[0] for c in CASES])
def test_split_rows_on_gpu(name, family, init, forward, shape, dtype, elems, seed, monkeypatch):
    _check(name, family, init, forward, shape, dtype, elems, seed, monkeypatch)


@pytest.mark.parametrize("name,family,init,forward,shape,dtype,elems", CASES, ids=[c[0] for c in CASES])
def test_split_rows_with_lane_stats_on_gpu(name, family, init, forward, shape, dtype, elems, monkeypatch):
    """TUNING["split_lane_stats"]: the segments' statistics folded lane-wise, one reduction per statistic."""
    from tilestudio.core.kernels.rowwise import TUNING

    monkeypatch.setitem(TUNING, "split_lane_stats", True)
    _check(name, family, init, forward, shape, dtype, elems, 3, monkeypatch)


def _check(name, family, init, forward, shape, dtype, elems, seed, monkeypatch):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.checking import check_kernel
    from tilestudio.core.kernels.rowwise import TUNING

    from .helpers_gemm import module_model, snippet_spec

    monkeypatch.setitem(TUNING, f"{family}_split_elems", elems)
    monkeypatch.setitem(TUNING, "norm_split_groups", True)
    monkeypatch.setitem(TUNING, f"{family}_split_ragged", name.startswith("ragged"))
    monkeypatch.setitem(TUNING, "softmax_flat", False)  # (rows off 16 bytes: test_softmax_flat_gpu.py)
    s = ", ".join(map(str, shape))
    spec = snippet_spec(module_model(init, forward, "x"), f"[torch.randn({s}).to(torch.{dtype})]", family)
    source = generate_kernel(spec)
    assert "read once" in source.notes[0], source.notes
    result = check_kernel(spec, source, seed=seed)
    assert result.ok, f"{name} seed {seed}: {result.message}"
