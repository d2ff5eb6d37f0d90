"""Long layer / rms norm rows split over cooperating blocks that read once (TUNING["norm_split_elems"], off by
default) on the GPU: thousands of blocks, each waiting on its row's other segments through atomics while the
rest of the grid runs, fresh random inputs per seed, poisoned outputs, float64 references. (The CPU test,
test_norm_split.py, runs the blocks as concurrent threads in the emulator.)"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

CASES = [  # name, init, forward, input shape, dtype, elements per block
    ("layer_norm_long", "self.n = nn.LayerNorm(65536)", "self.n(x)", (2048, 65536), "float32", 8192),
    ("layer_norm_4k_blocks", "self.n = nn.LayerNorm(65536)", "self.n(x)", (512, 65536), "float32", 4096),
    ("rms_norm_bf16", "", "F.rms_norm(x, (32768,))", (1024, 32768), "bfloat16", 8192),
    # ragged: 5 segments of 2 chunks (the last chunk padded), a prologue held in registers
    # group norm groups: channel rows (8 x 3136, 7 ragged chunks) and instance norm rows
    ("group_norm_silu", "self.g = nn.GroupNorm(32, 256).half()", "F.silu(self.g(x))", (32, 256, 56, 56),
     "float16", 8192),
    ("instance_norm", "self.i = nn.InstanceNorm2d(64, affine=True)", "self.i(x)", (8, 64, 200, 200), "float32",
     8192),
    ("layer_norm_prologue_unaligned", "self.n = nn.LayerNorm(20000)", "self.n(x * 2.0 + 1.0)", (999, 20000),
     "float32", 4096),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name,init,forward,shape,dtype,elems", CASES, ids=[c[0] for c in CASES])
def test_split_rows_on_gpu(name, init, forward, shape, dtype, elems, seed, monkeypatch):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.checking import check_kernel
    from tilestudio.core.kernels.rowwise import TUNING

    from .helpers_gemm import module_model, snippet_spec

    monkeypatch.setitem(TUNING, "norm_split_elems", elems)
    s = ", ".join(map(str, shape))
    spec = snippet_spec(module_model(init, forward, "x"), f"[torch.randn({s}).to(torch.{dtype})]", "norm")
    source = generate_kernel(spec)
    assert "read once" in source.notes[0] or "read once" in source.code, source.notes
    result = check_kernel(spec, source, seed=seed)
    assert result.ok, f"{name} seed {seed}: {result.message}"
