"""Attention family (CPU; corpus specs: test_corpus_compile.py): one scaled_dot_product_attention snippet per
variant generates, trace and compile ahead of time for sm_90 and sm_100; the snippets are also executed by the CPU emulator
against their references."""

from __future__ import annotations

import pytest
import torch

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
    # a causal buffer over 150 keys: 64x64 tiles above the diagonal are all -inf
    "manual_tril_fill_skips_tiles_fp16": (forward("(q @ k.transpose(-2, -1) * 0.125).masked_fill(m == 0, "
                                                  "float('-inf')).softmax(-1) @ v", "q, k, v, m"),
                                          f"[{qkv(1, 2, 150, 150, 16, dtype='.half()')}, "
                                          "torch.tril(torch.ones(150, 150))]"),
    "manual_additive_mask_epilogue": (forward("(torch.softmax(q @ k.transpose(-2, -1) * 0.3 + m, -1) @ v) * 2.0 + q",
                                              "q, k, v, m"),
                                      f"[{qkv(2, 2, 9, 19, 16)}, torch.randn(2, 1, 1, 19)]"),
    # Hugging Face's eager attention: an additive mask, softmax in float32, cast back to the query's dtype
    "manual_hf_float32_softmax_fp16": (forward("torch.matmul(F.softmax(torch.matmul(q, k.transpose(2, 3)) * 0.125 + m, "
                                               "dim=-1, dtype=torch.float32).to(q.dtype), v)", "q, k, v, m"),
                                       f"[{qkv(2, 2, 21, 21, 32, dtype='.half()')}, "
                                       "torch.randn(2, 1, 21, 21).half()]"),
    # latent diffusion's einsum attention (k as stored), an einsum with k^T, and diffusers' baddbmm(beta=0) form
    "manual_einsum_k_stored_fp16": (forward("torch.einsum('b i j, b j d -> b i d', (torch.einsum("
                                            "'b i d, b j d -> b i j', q, k) * 0.125).softmax(dim=-1), v)", "q, k, v"),
                                    f"[{qkv(6, 0, 77, 90, 40, dtype='.half()')}]"),
    "manual_einsum_kt_rank4": (forward("torch.einsum('bhqk,bhkd->bhqd', torch.einsum('...qd,...dk->...qk', q, "
                                       "k.transpose(-2, -1)).softmax(-1), v)", "q, k, v"),
                               f"[{qkv(2, 3, 13, 21, 12)}]"),
    "manual_baddbmm_beta0_bf16": (forward("torch.bmm(torch.baddbmm(torch.empty(q.shape[0], q.shape[1], k.shape[1], "
                                          "dtype=q.dtype, device=q.device), q, k.transpose(-1, -2), beta=0, "
                                          "alpha=0.125).softmax(dim=-1), v)", "q, k, v"),
                                  f"[{qkv(4, 0, 50, 70, 24, dtype='.to(torch.bfloat16)')}]"),
    # score side inputs over 64 keys (16-byte rows): loaded as (BM | 1, BN) tiles, not gathered; the last one a slice
    # of a larger causal buffer (strided: the wrapper makes it contiguous)
    "manual_tile_additive_mask_bf16": (forward("torch.matmul(F.softmax(torch.matmul(q, k.transpose(2, 3)) * 0.125 + m, "
                                               "dim=-1, dtype=torch.float32).to(q.dtype), v)", "q, k, v, m"),
                                       f"[{qkv(2, 2, 40, 64, 32, dtype='.to(torch.bfloat16)')}, "
                                       "torch.randn(1, 1, 40, 64).to(torch.bfloat16)]"),
    "manual_tile_key_padding_fill": (forward("(q @ k.transpose(-2, -1) * 0.125).masked_fill(m == 0, float('-inf'))"
                                             ".softmax(-1) @ v", "q, k, v, m"),
                                     f"[{qkv(2, 3, 21, 64, 16)}, (torch.rand(2, 1, 1, 64) > 0.3).float()]"),
    "manual_tile_sliced_buffer_fp16": (forward("(q @ k.transpose(-2, -1) * 0.125).masked_fill(m[:40, :64] == 0, "
                                               "float('-inf')).softmax(-1) @ v", "q, k, v, m"),
                                       f"[{qkv(2, 2, 40, 64, 32, dtype='.half()')}, torch.tril(torch.ones(96, 96))]"),
    # grouped-query heads (Hugging Face's repeat_kv): key/value head h // 2, the repeated copies never made
    "manual_gqa_repeat_kv_bf16": (forward("(lambda r: torch.matmul(F.softmax(torch.matmul(q, r(k).transpose(2, 3)) "
                                          "* 0.125 + m, dim=-1, dtype=torch.float32).to(q.dtype), r(v)))(lambda x: "
                                          "x[:, :, None, :, :].expand(x.shape[0], x.shape[1], 2, x.shape[2], "
                                          "x.shape[3]).reshape(x.shape[0], 2 * x.shape[1], x.shape[2], x.shape[3]))",
                                          "q, k, v, m"),
                                  f"[{qkv(2, 4, 21, 64, 32, hk=2, dtype='.to(torch.bfloat16)')}, "
                                  "torch.randn(2, 1, 21, 64).to(torch.bfloat16)]"),
    # the output's transpose(1, 2) joins the kernel, which stores through a strided view of the (B, L, H, D) result
    "manual_head_transpose_fp16": (forward("(torch.softmax(q @ k.transpose(-2, -1) * 0.125, -1) @ v).transpose(1, 2)",
                                           "q, k, v"), f"[{qkv(2, 3, 21, 37, 32, dtype='.half()')}]"),
    "head_transpose_epilogue": (forward(f"({SDPA}(q, k, v, is_causal=True) * 0.5).transpose(1, 2)", "q, k, v"),
                                f"[{qkv(2, 2, 13, 13, 16)}]"),
    "manual_bmm_rank3_bf16": (forward("torch.bmm(torch.softmax(torch.bmm(q, k.transpose(1, 2)), -1), v)", "q, k, v"),
                              f"[{qkv(3, 0, 70, 50, 24, ev=40, dtype='.to(torch.bfloat16)')}]"),
    # a causal mask built in the forward: its triu joins the score epilogue, evaluated at (query, key) positions
    "manual_triu_mask_in_forward_fp16": (forward("(q @ k.transpose(-2, -1) * 0.125 + torch.full((q.shape[-2], "
                                                 "k.shape[-2]), float('-inf'), device=q.device, dtype=q.dtype)"
                                                 ".triu(1)).softmax(-1) @ v", "q, k, v"),
                                         f"[{qkv(2, 3, 21, 37, 32, dtype='.half()')}]"),
}
BOTH_ARCHES = {"causal_fp16_rect", "key_padding_mask_fp16", "manual_causal_fill_fp16",
               "manual_triu_mask_in_forward_fp16"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_attention_variant_compiles_and_emulates(name):
    body, inputs = CASES[name]
    spec = snippet_spec(body, inputs, FAMILY)
    source = compile_spec(spec, ("sm_90", "sm_100") if name in BOTH_ARCHES else ("sm_90",))
    result = check_emulated(spec, source, make_input=make_inputs())
    assert result.ok, result.message


@pytest.mark.parametrize("name,tiled", [("manual_tile_additive_mask_bf16", True), ("manual_tile_key_padding_fill", True),
                                        ("manual_tile_sliced_buffer_fp16", True),
                                        ("manual_hf_float32_softmax_fp16", False)])  # 21 keys: rows off 16 bytes
def test_score_side_inputs_load_as_tiles_where_rows_are_aligned(name, tiled):
    from tilestudio.core.kernels import generate_kernel

    code = generate_kernel(snippet_spec(*CASES[name], FAMILY)).code
    assert ("ct.gather" not in code and ".contiguous()" in code) == tiled
    assert ("shape=(1, 1, BM, BN)" in code or "shape=(BM, BN)" in code or "shape=(1, 1, 1, BN)" in code) == tiled


def test_repeated_kv_heads_are_read_in_place():
    """R8 takes Hugging Face's repeat_kv: the kernel's inputs are the unrepeated k and v, read at head h // 2."""
    from tilestudio.core.kernels import generate_kernel

    spec = snippet_spec(*CASES["manual_gqa_repeat_kv_bf16"], FAMILY)
    assert [t.shape for t in spec.inputs if t.shape[1:2] == [2]] == [[2, 2, 64, 32], [2, 2, 64, 32]]
    code = generate_kernel(spec).code
    assert code.count("h // 2") == 2


def test_head_dim_128_tiles_take_8_worker_warps_and_do_not_spill(monkeypatch):
    """TILES["attn_d128_long"] 128x128 on attn_worker_warps (8) at occupancy 1 (unmasked, over attn_long_keys
    keys: 260 here): spill-free on sm_90 (a zero stack frame; at the compiler's warp count and occupancy 2 the same
    tile spills). Smaller tiles (head dim 64: 64 x 64) and float32 keep the compiler's warp count."""
    from tilestudio.core.kernels import gemm_common, generate_kernel
    from tilestudio.core.kernels.aot import compile_cubin, kernel_resources, trace_launches

    monkeypatch.setitem(gemm_common.TILES, "attn_long_keys", 256)
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


def test_tiling_by_sequence_length_and_head_dim():
    """fp16/bf16 sequences of <= TILES["attn_short_keys"] keys: 64x64 tiles at occupancy 4 (head dims <= 64) or
    64x128 at 2 (<= 128); longer ones 64x64 at 3 (<= 64) or 64x128 at 2 (<= 128), unmasked past 1024 keys
    64x128 at 2 (<= 64) or 128x128 on 8 worker warps (<= 128); float32 64x64."""
    from tilestudio.core.kernels.attention import tiling

    assert tiling(197, 197, 64, 64, "float16") == (64, 64, None, 4)
    assert tiling(77, 77, 64, 64, "bfloat16") == (64, 64, None, 4)
    assert tiling(2048, 2048, 64, 64, "float16", masked=True) == (64, 64, None, 3)
    assert tiling(2048, 2048, 64, 64, "float16") == (64, 128, None, 2)  # unmasked past attn_long_keys
    assert tiling(512, 512, 64, 64, "bfloat16") == (64, 64, None, 3)
    assert tiling(197, 197, 128, 128, "float16") == (64, 128, None, 2)
    assert tiling(2048, 2048, 128, 128, "bfloat16") == (128, 128, 8, 1)  # unmasked past attn_long_keys
    assert tiling(2048, 2048, 128, 128, "bfloat16", masked=True) == (64, 128, None, 2)
    assert tiling(1024, 1024, 128, 128, "bfloat16") == (64, 128, None, 2)
    assert tiling(512, 512, 80, 80, "float16") == (64, 128, None, 2)
    assert tiling(197, 197, 256, 256, "float16") == (64, 32, None, 1)
    assert tiling(197, 197, 64, 64, "float32") == (64, 64, None, 2)
    assert tiling(13, 9, 16, 16, "float16") == (16, 16, None, 4)  # shrunk to the sequence


@pytest.mark.parametrize("keys,dtype,kind,copied", [
    (37, torch.float16, "row-major", True),    # rows of 74 bytes: no TMA for the transposed tile -> copy to k
    (21, torch.float32, "row-major", True),
    (64, torch.float16, "row-major", False),   # 128-byte rows: TMA takes the transposed tile
    (37, torch.float16, "view", False),        # k.transpose(-2, -1) of a contiguous k: k's rows, read as they are
])
def test_row_major_k_transpose_off_16_bytes_is_copied_to_rows_of_k(keys, dtype, kind, copied):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import intercept_launches, load_source

    name = {torch.float16: ".half()", torch.float32: ""}[dtype]
    spec = snippet_spec(forward("torch.softmax((q @ k.transpose(-2, -1)) * 0.125, dim=-1) @ v", "q, k, v"),
                        f"[{qkv(2, 3, 13, keys, 64, dtype=name)}]", FAMILY)
    source = generate_kernel(spec)
    ns = load_source(source)
    q, v = torch.randn(2, 3, 13, 64, dtype=dtype), torch.randn(2, 3, keys, 64, dtype=dtype)
    k = torch.randn(2, 3, keys, 64, dtype=dtype)
    kt = k.transpose(-2, -1).contiguous() if kind == "row-major" else k.transpose(-2, -1)
    records = []
    with intercept_launches(records):
        ns[source.launch_name](q, kt, v)
    (record,) = records
    passed = record.args[1]
    assert torch.equal(passed, k)
    assert (passed.stride(-1) == 1) == (copied or kind == "view")
    assert (passed.data_ptr() != k.data_ptr()) == (kind == "row-major")
    assert (passed.data_ptr() == kt.data_ptr()) == (not copied)
