"""Attention family (CPU; corpus specs: test_corpus_compile.py): one scaled_dot_product_attention snippet per
variant generates, trace and compile ahead of time for sm_90 and sm_100; the snippets are also executed by the CPU emulator
against their references."""

from __future__ import annotations

import pytest

from .cutile_emulator import check_emulated
from .helpers import compile_spec
from .helpers_indexed import forward, make_inputs, snippet_spec

FAMILY = "attention"
SDPA = "F.scaled_dot_product_attention"


def qkv(b, h, lq, s, e, ev=None, dtype="", hk=None):
    ev = ev or e
    hk = hk or h
    lead_q = f"{b}, {h}, " if h else f"{b}, "
    lead_k = f"{b}, {hk}, " if h else f"{b}, "
    return (f"torch.randn({lead_q}{lq}, {e}){dtype}, torch.randn({lead_k}{s}, {e}){dtype}, "
            f"torch.randn({lead_k}{s}, {ev}){dtype}")


# name → (forward body, inputs)
CASES = {
    "plain_fp32": (forward(f"{SDPA}(q, k, v)", "q, k, v"), f"[{qkv(2, 3, 13, 13, 12)}]"),
    "causal_fp16_rect": (forward(f"{SDPA}(q, k, v, is_causal=True)", "q, k, v"),
                         f"[{qkv(2, 3, 21, 37, 64, dtype='.half()')}]"),
    "causal_long_bf16": (forward(f"{SDPA}(q, k, v, is_causal=True)", "q, k, v"),
                         f"[{qkv(1, 2, 300, 300, 80, dtype='.to(torch.bfloat16)')}]"),
    "bool_mask_2d_scale": (forward(f"{SDPA}(q, k, v, attn_mask=m, scale=0.3)", "q, k, v, m"),
                           f"[{qkv(2, 2, 7, 9, 16)}, torch.rand(7, 9) > 0.3]"),
    "key_padding_mask_fp16": (forward(f"{SDPA}(q, k, v, attn_mask=m)", "q, k, v, m"),
                              f"[{qkv(2, 4, 33, 70, 32, dtype='.half()')}, torch.rand(2, 1, 1, 70) > 0.2]"),
    "float_mask": (forward(f"{SDPA}(q, k, v, attn_mask=m)", "q, k, v, m"),
                   f"[{qkv(2, 3, 10, 20, 24)}, torch.randn(2, 1, 10, 20)]"),
    "gqa_value_dim": (forward(f"{SDPA}(q, k, v, enable_gqa=True)", "q, k, v"),
                      f"[{qkv(2, 4, 7, 9, 16, ev=40, hk=2)}]"),
    "rank3": (forward(f"{SDPA}(q, k, v)", "q, k, v"), f"[{qkv(3, 0, 5, 11, 8)}]"),
    "head_dim_256_fp16": (forward(f"{SDPA}(q, k, v)", "q, k, v"), f"[{qkv(1, 2, 40, 50, 256, dtype='.half()')}]"),
    # 128 x 128 tiles on 8 worker warps at occupancy 1 (head dims 65..128, fp16/bf16)
    "d128_bf16_8warps": (forward(f"{SDPA}(q, k, v)", "q, k, v"),
                         f"[{qkv(1, 2, 200, 260, 128, dtype='.to(torch.bfloat16)')}]"),
    "epilogue_residual": (forward(f"{SDPA}(q, k, v) * 0.5 + q", "q, k, v"), f"[{qkv(2, 2, 9, 9, 16)}]"),
    # attention written by hand (fusion rule R8): one flash kernel, the score epilogue applied per tile
    "manual_scaled": (forward("torch.softmax((q @ k.transpose(-2, -1)) * 0.125, dim=-1) @ v", "q, k, v"),
                      f"[{qkv(2, 3, 13, 21, 12)}]"),
    "manual_causal_fill_fp16": (forward("(q @ k.transpose(-2, -1) / 8.0).masked_fill(m == 0, float('-inf'))"
                                        ".softmax(-1) @ v", "q, k, v, m"),
                                f"[{qkv(2, 2, 37, 37, 64, dtype='.half()')}, torch.tril(torch.ones(37, 37))]"),
    "manual_additive_mask_epilogue": (forward("(torch.softmax(q @ k.transpose(-2, -1) * 0.3 + m, -1) @ v) * 2.0 + q",
                                              "q, k, v, m"),
                                      f"[{qkv(2, 2, 9, 19, 16)}, torch.randn(2, 1, 1, 19)]"),
    "manual_bmm_rank3_bf16": (forward("torch.bmm(torch.softmax(torch.bmm(q, k.transpose(1, 2)), -1), v)", "q, k, v"),
                              f"[{qkv(3, 0, 70, 50, 24, ev=40, dtype='.to(torch.bfloat16)')}]"),
}
BOTH_ARCHES = {"causal_fp16_rect", "key_padding_mask_fp16", "manual_causal_fill_fp16"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_attention_variant_compiles_and_emulates(name):
    body, inputs = CASES[name]
    spec = snippet_spec(body, inputs, FAMILY)
    source = compile_spec(spec, ("sm_90", "sm_100") if name in BOTH_ARCHES else ("sm_90",))
    result = check_emulated(spec, source, make_input=make_inputs())
    assert result.ok, result.message


def test_head_dim_128_tiles_take_8_worker_warps_and_do_not_spill(monkeypatch):
    """TILES["attn_d128"] 128x128 on attn_worker_warps (8) at occupancy 1: spill-free on sm_90 (a zero stack frame;
    at the compiler's warp count and occupancy 2 the same tile spills). Smaller tiles (head dim 64: 64 x 128) and
    float32 keep the compiler's warp count."""
    from tilestudio.core.kernels import gemm_common, generate_kernel
    from tilestudio.core.kernels.aot import compile_cubin, kernel_resources, trace_launches

    spec = snippet_spec(*CASES["d128_bf16_8warps"], FAMILY)
    frames = {}
    for warps in (None, 8):
        monkeypatch.setitem(gemm_common.TILES, "attn_worker_warps", warps)
        source = generate_kernel(spec)
        assert ("@ct.kernel(occupancy=1, num_worker_warps=8)" in source.code) == (warps == 8), source.code[:200]
        (record,) = trace_launches(source, spec)
        frames[warps] = kernel_resources(compile_cubin(record, "sm_90", specialize=True))["frame"]
    assert frames[None] > 0 and frames[8] == 0, frames
    assert "128 queries x 128 keys" in source.notes[0] and "8 worker warps" in source.notes[0], source.notes
    for name in ("causal_fp16_rect", "plain_fp32"):
        code = generate_kernel(snippet_spec(*CASES[name], FAMILY)).code
        assert "num_worker_warps" not in code, name


def test_dropout_is_unsupported():
    from tilestudio.core.kernels import generate_kernel

    spec = snippet_spec(forward(f"{SDPA}(q, k, v, dropout_p=0.1)", "q, k, v"), f"[{qkv(1, 1, 4, 4, 8)}]", FAMILY)
    source = generate_kernel(spec)
    assert source.skeleton and "dropout" in source.notes[0]


@pytest.mark.parametrize("name", ["causal_fp16_rect", "float_mask", "rank3", "gqa_value_dim"])
def test_attention_strided_inputs(name):
    """Transposed (non-contiguous) q/k/v/mask views are loaded through their strides."""
    spec = snippet_spec(*CASES[name], FAMILY)
    result = check_emulated(spec, compile_spec(spec, ("sm_90",)), make_input=make_inputs(strided=True))
    assert result.ok, result.message
