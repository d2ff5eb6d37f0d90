"""Attention family on the GPU: scaled_dot_product_attention variants on three problem sizes (unaligned sequence
lengths and head dims included) in float32/float16/bfloat16, checked against the float64 reference with poisoned
outputs."""

from __future__ import annotations

import pytest

from .helpers import case_ids, run_check
from .helpers_indexed import DT, forward, gpu_cases, make_inputs, snippet_spec

pytestmark = pytest.mark.gpu
CHECK = None  # checking.check_kernel; swapped for the CPU emulator when validating this file without a GPU
SDPA = "F.scaled_dot_product_attention"


def _qkv(shape, dt):
    """shape = (B, H, L, S, E[, Ev[, Hk]]); H == 0 means rank-3 inputs."""
    b, h, lq, s, e, *rest = shape
    ev = rest[0] if rest else e
    hk = rest[1] if len(rest) > 1 else h
    lq_, lk_ = (f"{b}, {h}, ", f"{b}, {hk}, ") if h else (f"{b}, ", f"{b}, ")
    return (f"torch.randn({lq_}{lq}, {e}){dt}, torch.randn({lk_}{s}, {e}){dt}, "
            f"torch.randn({lk_}{s}, {ev}){dt}")


def _with_mask(mask):
    def build(shape, dt):
        b, h, lq, s = shape[:4]
        return _qkv(shape, dt) + ", " + mask.format(B=b, H=h, L=lq, S=s, dt=dt)
    return build


SHAPES = [(2, 3, 13, 13, 12), (4, 8, 1024, 1024, 64), (1, 2, 77, 300, 80)]
REPEAT_KV = ("lambda x: x[:, :, None, :, :].expand(x.shape[0], x.shape[1], q.shape[1] // x.shape[1], x.shape[2], "
             "x.shape[3]).reshape(x.shape[0], q.shape[1], x.shape[2], x.shape[3])")
# name → (forward expression, args, input builder, shapes)
VARIANTS = {
    "plain": (f"{SDPA}(q, k, v)", "q, k, v", _qkv, SHAPES),
    "causal": (f"{SDPA}(q, k, v, is_causal=True)", "q, k, v", _qkv,
               [(2, 3, 21, 37, 64), (2, 8, 1000, 1000, 128), (1, 1, 300, 77, 16)]),
    "scale": (f"{SDPA}(q, k, v, scale=0.3)", "q, k, v", _qkv, SHAPES),
    "bool_mask": (f"{SDPA}(q, k, v, attn_mask=m)", "q, k, v, m", _with_mask("torch.rand({L}, {S}) > 0.3"),
                  [(2, 2, 7, 9, 16), (2, 4, 500, 700, 64), (1, 1, 1, 1, 8)]),
    "key_padding_mask": (f"{SDPA}(q, k, v, attn_mask=m)", "q, k, v, m",
                         _with_mask("torch.rand({B}, 1, 1, {S}) > 0.2"),
                         [(2, 4, 33, 70, 32), (8, 8, 512, 512, 64), (1, 1, 3, 5, 8)]),
    "float_mask": (f"{SDPA}(q, k, v, attn_mask=m)", "q, k, v, m",
                   _with_mask("torch.randn({B}, 1, {L}, {S}){dt}"),
                   [(2, 3, 10, 20, 24), (2, 8, 600, 600, 64), (1, 1, 1, 3, 8)]),
    "gqa": (f"{SDPA}(q, k, v, enable_gqa=True)", "q, k, v", _qkv,
            [(2, 4, 7, 9, 16, 40, 2), (2, 32, 512, 512, 128, 128, 8), (1, 2, 5, 5, 8, 8, 1)]),
    "rank3": (f"{SDPA}(q, k, v)", "q, k, v", _qkv, [(3, 0, 5, 11, 8), (16, 0, 500, 300, 96), (1, 0, 1, 1, 4)]),
    "head_dim_256": (f"{SDPA}(q, k, v)", "q, k, v", _qkv, [(1, 2, 40, 50, 256), (2, 4, 512, 512, 256),
                                                           (1, 1, 3, 3, 200)]),
    "epilogue_residual": (f"{SDPA}(q, k, v) * 0.5 + q", "q, k, v", _qkv,
                          [(2, 2, 9, 9, 16), (2, 8, 512, 512, 64), (1, 1, 1, 1, 8)]),
    # attention written by hand (fusion rule R8)
    "manual_scaled": ("torch.softmax((q @ k.transpose(-2, -1)) * 0.125, dim=-1) @ v", "q, k, v", _qkv, SHAPES),
    "manual_causal_fill": ("(q @ k.transpose(-2, -1) / 8.0).masked_fill(m == 0, float('-inf')).softmax(-1) @ v",
                           "q, k, v, m", _with_mask("(torch.rand({L}, {S}) > 0.4).float()"),
                           [(2, 2, 37, 37, 64), (4, 12, 197, 197, 64), (1, 1, 300, 77, 16)]),
    # a causal tril buffer: key tiles filled whole with -inf (the online softmax's running max stays -inf)
    "manual_tril_fill": ("(q @ k.transpose(-2, -1) * 0.125).masked_fill(m == 0, float('-inf')).softmax(-1) @ v",
                         "q, k, v, m", _with_mask("torch.tril(torch.ones({L}, {S}))"),
                         [(2, 4, 300, 300, 64), (1, 2, 1000, 1000, 32), (1, 1, 77, 300, 16)]),
    # the causal mask built in the forward (torch.full(-inf).triu(1)): computed per score tile from its positions
    "manual_triu_mask_in_forward": ("(q @ k.transpose(-2, -1) * 0.125 + torch.full((q.shape[-2], k.shape[-2]), "
                                    "float('-inf'), device=q.device, dtype=q.dtype).triu(1)).softmax(-1) @ v",
                                    "q, k, v", _qkv, [(2, 2, 37, 37, 64), (4, 12, 1024, 1024, 64), (1, 1, 77, 300, 16)]),
    "manual_additive_mask_epilogue": ("(torch.softmax(q @ k.transpose(-2, -1) * 0.3 + m, -1) @ v) * 2.0 + q",
                                      "q, k, v, m", _with_mask("torch.randn({B}, 1, 1, {S}){dt}"),
                                      [(2, 2, 9, 19, 16), (8, 12, 197, 197, 64), (1, 1, 1, 3, 8)]),
    "manual_hf_float32_softmax": ("torch.matmul(F.softmax(torch.matmul(q, k.transpose(2, 3)) * 0.125 + m, dim=-1, "
                                  "dtype=torch.float32).to(q.dtype), v)", "q, k, v, m",
                                  _with_mask("torch.randn({B}, 1, {L}, {S}){dt}"),
                                  [(2, 2, 21, 21, 32), (8, 12, 197, 197, 64), (2, 8, 77, 300, 80)]),
    # latent diffusion's einsum attention (k as stored) and diffusers' baddbmm(beta=0) form (rank-3 operands)
    "manual_einsum_k_stored": ("torch.einsum('b i j, b j d -> b i d', (torch.einsum('b i d, b j d -> b i j', q, k) "
                               "* 0.125).softmax(dim=-1), v)", "q, k, v", _qkv,
                               [(6, 0, 77, 90, 40), (16, 0, 1024, 77, 64), (2, 0, 4096, 4096, 64)]),
    "manual_baddbmm": ("torch.bmm(torch.baddbmm(torch.empty(q.shape[0], q.shape[1], k.shape[1], dtype=q.dtype, "
                       "device=q.device), q, k.transpose(-1, -2), beta=0, alpha=0.125).softmax(dim=-1), v)",
                       "q, k, v", _qkv, [(4, 0, 50, 70, 24), (16, 0, 1024, 1024, 64), (8, 0, 197, 197, 80)]),
    # grouped-query heads repeated as Hugging Face's repeat_kv writes it: the kernel reads key/value head h // n_rep
    "manual_gqa_repeat_kv": (f"(lambda r: torch.matmul(F.softmax(torch.matmul(q, r(k).transpose(2, 3)) * 0.125 + m, "
                             f"dim=-1, dtype=torch.float32).to(q.dtype), r(v)))({REPEAT_KV})", "q, k, v, m",
                             _with_mask("torch.randn({B}, 1, {L}, {S}){dt}"),
                             [(2, 8, 40, 40, 32, 32, 2), (2, 16, 1024, 1024, 128, 128, 4), (1, 6, 77, 300, 80, 80, 3)]),
    # the output's transpose(1, 2) joined to the kernel: it stores into the (B, L, H, D) tensor through a strided view
    "head_transpose": (f"({SDPA}(q, k, v, is_causal=True) * 0.5).transpose(1, 2)", "q, k, v", _qkv,
                       [(2, 3, 21, 37, 64), (4, 16, 1024, 1024, 128), (1, 2, 77, 300, 80)]),
    "manual_head_transpose": ("(torch.softmax(q @ k.transpose(-2, -1) * 0.125, -1) @ v).transpose(1, 2)", "q, k, v",
                              _qkv, [(2, 3, 13, 21, 12), (8, 12, 1024, 1024, 64), (2, 8, 197, 197, 80)]),
}
CORE = {"plain", "causal", "key_padding_mask", "manual_causal_fill"}
CASES = gpu_cases({name: v[3] for name, v in VARIANTS.items()}, CORE)
IDS = case_ids(CASES)


@pytest.mark.parametrize("name,shape,dtype", CASES, ids=IDS)
def test_attention_kernel_matches_reference(name, shape, dtype):
    expr, args, build, _ = VARIANTS[name]
    spec = snippet_spec(forward(expr, args), f"[{build(shape, DT[dtype])}]", "attention")
    result = run_check(spec, make_inputs(), CHECK)
    assert result.ok, result.message


STRIDED = [("causal", (2, 8, 1000, 1000, 128), "float16"), ("float_mask", (2, 8, 600, 600, 64), "bfloat16"),
           ("plain", (2, 3, 13, 13, 12), "float32")]


@pytest.mark.parametrize("name,shape,dtype", STRIDED, ids=[s[0] for s in STRIDED])
def test_attention_kernel_strided_inputs(name, shape, dtype):
    """q/k/v (and mask) as non-contiguous views (dims stored in reverse order), as after a transpose."""
    expr, args, build, _ = VARIANTS[name]
    spec = snippet_spec(forward(expr, args), f"[{build(shape, DT[dtype])}]", "attention")
    result = run_check(spec, make_inputs(strided=True), CHECK)
    assert result.ok, result.message
