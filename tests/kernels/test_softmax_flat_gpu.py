"""softmax / log_softmax of long rows off 16-byte alignment through aligned tiles of the flat tensor
(softmax_flat.py) on the GPU: thousands of blocks, each waiting for the other blocks of its two rows through
atomics while the rest of the grid runs, fresh random inputs per seed, poisoned outputs, float64 references.
(The CPU test, test_softmax_flat.py, runs the blocks as concurrent threads in the emulator.)"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

CASES = [  # name, forward, input shape, dtype, TUNING overrides
    ("vocab_fp32", "torch.softmax(x, -1)", (1024, 50257), "float32", {}),
    ("vocab_log_bf16", "torch.log_softmax(x, -1)", (512, 50257), "bfloat16", {}),
    ("vocab_tma_loads", "torch.softmax(x, -1)", (1024, 50257), "float32", {"softmax_flat_tma": True}),
    # 3d, 2 bytes off, the last block partly past the tensor
    ("rows_3d_fp16", "F.softmax(x, dim=-1)", (4, 8, 33001), "float16", {}),
    # small blocks (2 x 2048): a row touches 10 or 11 blocks, windows of 32
    ("small_blocks_bf16", "torch.softmax(x, -1)", (256, 40001), "bfloat16",
     {"softmax_flat_tile": 2048, "softmax_flat_elems": 4096}),
    # 16-byte rows whose split rows would be ragged (13 chunks of 4096)
    ("aligned_ragged_fp32", "torch.softmax(x, -1)", (1024, 50256), "float32", {}),
    ("tiles_2k_log_fp32", "torch.log_softmax(x, -1)", (512, 50257), "float32", {"softmax_flat_tile": 2048}),
    # odd row counts: not a multiple of 16 elements in all, the last flat tile gathered and scattered
    ("odd_rows_fp32", "torch.softmax(x, -1)", (1023, 50257), "float32", {}),
    ("odd_rows_log_bf16", "torch.log_softmax(x, -1)", (511, 50257), "bfloat16", {}),
    ("few_odd_rows_fp16", "torch.softmax(x, -1)", (7, 50257), "float16", {}),
    ("odd_rows_small_blocks_bf16", "torch.softmax(x, -1)", (5, 40001), "bfloat16",
     {"softmax_flat_tile": 2048, "softmax_flat_tma": False}),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name,forward,shape,dtype,tuning", CASES, ids=[c[0] for c in CASES])
def test_flat_softmax_on_gpu(name, forward, shape, dtype, tuning, seed, monkeypatch):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.checking import check_kernel
    from tilestudio.core.kernels.rowwise import TUNING

    from .helpers_indexed import forward as model, snippet_spec

    monkeypatch.setitem(TUNING, "softmax_flat", True)
    for key, value in tuning.items():
        monkeypatch.setitem(TUNING, key, value)
    s = ", ".join(map(str, shape))
    spec = snippet_spec(model(forward), f"[torch.randn({s}).to(torch.{dtype})]", "softmax")
    source = generate_kernel(spec)
    assert "flat tensor" in source.notes[0], source.notes
    result = check_kernel(spec, source, seed=seed)
    assert result.ok, f"{name} seed {seed}: {result.message}"
