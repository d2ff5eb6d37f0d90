"""One test per fusion rule (see core/fusion.py for the rules)."""

import textwrap

import pytest

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"


@pytest.fixture
def decompose(tmp_path):
    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file

    def run(body: str, inputs: str = "[torch.randn(4, 16)]", init: str = "[]"):
        path = tmp_path / "m.py"
        path.write_text(HEADER + textwrap.dedent(body) +
                        f"\n\ndef get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return {init}\n")
        return analyze_graph(capture_file(str(path)), "m.py")

    return run


def groups(dec):
    return [k.operations for k in dec.kernels]


def test_r1_gemm_epilogue_bias_activation_scale_residual(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 16)
        def forward(self, x):
            return torch.clamp(F.gelu(self.lin(x)) * 0.5 + x, -1, 1)
    """)
    assert groups(dec) == [["linear", "gelu", "mul", "add", "clamp"]]
    assert "R1" in dec.kernels[0].fusion_rules


def test_r1_elementwise_chain_is_one_kernel(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, x, y):
            return torch.sigmoid(x * 2 + 1) * y - 0.25
    """, inputs="[torch.randn(4, 16), torch.randn(4, 16)]")
    assert groups(dec) == [["mul", "add", "sigmoid", "mul", "sub"]]


def test_r1_does_not_fuse_a_value_used_twice(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 16)
        def forward(self, x):
            h = self.lin(x)
            return h.relu(), h.sigmoid()
    """)
    assert groups(dec) == [["linear"], ["relu"], ["sigmoid"]]
    assert dec.parallel_groups == [["lin_linear"], ["relu", "sigmoid"]]


def test_r1_does_not_grow_the_anchor_output_by_broadcasting(decompose):
    # (a reduction over the leading dim: not a row statistic, so R7 leaves it too)
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, x, y):
            return x.sum(dim=0, keepdim=True) + y
    """, inputs="[torch.randn(4, 16), torch.randn(4, 16)]")
    assert groups(dec) == [["sum"], ["add"]]


def test_r7_row_statistics_broadcast_back_join_their_reduction(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(64))
        def forward(self, x, y):
            rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w
            return rms, x.sum(dim=1, keepdim=True) + y
    """, inputs="[torch.randn(4, 64), torch.randn(4, 64)]")
    assert groups(dec) == [["pow", "mean", "add", "rsqrt", "mul", "mul"], ["sum", "add"]]
    assert all("R7" in k.fusion_rules for k in dec.kernels)


def test_r7_takes_in_a_cast_whose_every_use_is_in_the_row_kernel(decompose):
    # a Hugging Face style RMS norm: the float32 cast is read by the statistic and by the broadcast-back product
    dec = decompose("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(64, dtype=torch.bfloat16))
        def forward(self, x):
            h = x.to(torch.float32)
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
            return self.w * h.to(x.dtype), x.to(torch.float32).relu()
    """, inputs="[torch.randn(4, 64, dtype=torch.bfloat16)]")
    assert len(dec.kernels) == 2 and dec.kernels[0].operations[:3] == ["to", "pow", "mean"]
    assert {"R2", "R7"} <= set(dec.kernels[0].fusion_rules)


@pytest.mark.parametrize("forward,inputs", [
    ("s = x.sum(-1, keepdim=True)\n            return x * s, s", "[torch.randn(4, 64)]"),  # statistic used twice
    ("return x / x.sum(-1, keepdim=True)", "[torch.randn(4, 10000)]"),  # rows over ROW_STAT_MAX
    ("return x / x.sum(1, keepdim=True)", "[torch.randn(4, 64, 3)]"),  # a middle dim: not a row
    ("return x - x.argmax(-1, keepdim=True)", "[torch.randn(4, 64)]"),  # indices, not a statistic
])
def test_r7_leaves_what_is_not_a_single_use_row_statistic(decompose, forward, inputs):
    dec = decompose(f"""
    class Model(nn.Module):
        def forward(self, x):
            {forward}
    """, inputs=inputs)
    assert all("R7" not in k.fusion_rules for k in dec.kernels)
    assert len(dec.kernels) == 2


def test_r2_residual_add_fuses_into_layernorm(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(16)
        def forward(self, x, r):
            return self.ln(x + r)
    """, inputs="[torch.randn(4, 16), torch.randn(4, 16)]")
    assert groups(dec) == [["add", "layer_norm"]]
    assert dec.kernels[0].fusion_rules == ["R2"]


def test_r2_residual_stream_is_a_second_output(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(16)
        def forward(self, x, r):
            s = x + r
            return self.ln(s), s.sum(-1)
    """, inputs="[torch.randn(4, 16), torch.randn(4, 16)]")
    fused = dec.kernels[0]
    assert groups(dec) == [["add", "layer_norm"], ["sum"]]
    assert [o.name for o in fused.outputs] == ["add", "layer_norm"]
    assert any("residual stream" in n for n in fused.notes)


def test_r2_softmax_absorbs_single_use_elementwise_prologue(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, x):
            return torch.softmax(x * 0.125, dim=-1)
    """)
    assert groups(dec) == [["mul", "softmax"]]


def test_r3_mask_computation_joins_the_consumer(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", torch.tril(torch.ones(16, 16)))
        def forward(self, q, k):
            s = q @ k.transpose(-2, -1)
            return s.masked_fill(self.mask == 0, float("-inf"))
    """, inputs="[torch.randn(16, 8), torch.randn(16, 8)]")
    assert groups(dec) == [["matmul", "eq", "masked_fill"]]
    assert "R3" in dec.kernels[0].fusion_rules


def test_r3_rescans_after_a_merge_makes_a_second_use_local(decompose):
    """v is read by the log (one kernel) and by the division (another, until the add joins them): once the add
    merges the division's kernel in, both uses of v are local and v's producer joins too, so Gaussian NLL is one
    kernel (the analyzer traces F.gaussian_nll_loss past its value check, see core/capture_shims.py)."""
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, a, b, var):
            v = var.clamp(min=1e-6)
            return (torch.log(v) + (a - b) ** 2 / v).mean()
    """, inputs="[torch.randn(4, 16), torch.randn(4, 16), torch.rand(4, 16)]")
    assert groups(dec) == [["clamp", "log", "sub", "pow", "div", "add", "mean"]]
    assert "R3" in dec.kernels[0].fusion_rules
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, mu, target, var):
            return F.gaussian_nll_loss(mu, target, var, full=True)
    """, inputs="[torch.randn(4, 16), torch.randn(4, 16), torch.rand(4, 16)]")
    assert len(dec.kernels) == 1 and dec.kernels[0].operations[0] == "clamp"
    assert dec.kernels[0].operations[-1] == "mean"


def test_r3_value_used_twice_by_one_kernel_joins_it(decompose):
    """A GRU cell: the candidate n (one elementwise kernel) is read twice by the update h' = n + z * (h - n); all
    of its uses are in that kernel, so the two gate kernels are one. A value also used elsewhere stays apart."""
    dec = decompose("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = nn.GRUCell(8, 16)
        def forward(self, x, h):
            return self.cell(x, h)
    """, inputs="[torch.randn(4, 8), torch.randn(4, 16)]")
    assert [k.family for k in dec.kernels].count("elementwise") == 1
    gates = next(k for k in dec.kernels if k.family == "elementwise")
    assert "R3" in gates.fusion_rules and gates.operations.count("tanh") == 1
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, x, z):
            a = torch.tanh(x + 1)
            return a * z + a, a.sum()
    """, inputs="[torch.randn(4, 16), torch.randn(4, 16)]")
    assert groups(dec)[0] == ["add", "tanh"] and len(dec.kernels) == 3  # a also feeds the sum: written once


def test_r4_glue_is_not_a_kernel_and_dropout_is_transparent(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 16)
            self.drop = nn.Dropout(0.1)
        def forward(self, x):
            h = F.relu(self.drop(self.lin(x)))
            return h.view(4, 4, 4).permute(0, 2, 1).sum(-1)
    """)
    assert groups(dec) == [["linear", "relu"], ["sum"]]
    assert {g.op for g in dec.glue} == {"view", "permute"}  # dropout in eval is an identity: never executed
    assert all(e.glue for e in dec.completeness if e.op in ("view", "permute", "dropout"))


def test_r4_a_cast_to_the_dtype_it_already_has_is_transparent(decompose):
    """T5's `x.to(torch.float32)` on a float32 x (PyTorch returns x itself) is no kernel; the float32 softmax
    cast back with `.type_as` no longer keeps the attention from being one flash kernel."""
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, x, q, k, v):
            var = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
            h = x * torch.rsqrt(var + 1e-6)
            s = torch.matmul(q, k.transpose(-1, -2))
            a = F.softmax(s.float(), dim=-1).type_as(s)
            return h + x, torch.matmul(a, v)
    """, "[torch.randn(4, 16), torch.randn(2, 3, 8, 4), torch.randn(2, 3, 8, 4), torch.randn(2, 3, 8, 4)]")
    assert groups(dec) == [["pow", "mean", "add", "rsqrt", "mul", "add"],
                           ["matmul", "softmax", "matmul"]], groups(dec)
    assert all(e.glue for e in dec.completeness if e.op in ("to", "type_as"))


def test_r4_a_real_cast_stays_a_kernel_op(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, x):
            return x.to(torch.float32) * 2, x.type_as(torch.ones(1, dtype=torch.float32))
    """, "[torch.randn(4, 16).half()]")
    assert sorted(op for ops in groups(dec) for op in ops if op in ("to", "type_as")) == ["to", "type_as"]


def test_r7_f_normalize_divides_inside_its_norm_kernel(decompose):
    """F.normalize is `x / norm(x).clamp_min(eps).expand_as(x)`: the expand, read only by the division that
    broadcasts anyway, is an alias, so the division joins the norm's row kernel (R7)."""
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, x, v):
            e = v.unsqueeze(0).expand(4, -1)
            return F.normalize(x, dim=-1) * 2, e, torch.tanh(x + e)
    """, "[torch.randn(4, 16), torch.randn(16)]")
    assert groups(dec)[0] == ["linalg_vector_norm", "clamp_min", "div", "mul"], groups(dec)
    # an expand that is itself an output stays glue (its consumers are not all there is)
    assert "expand" in {g.op for g in dec.glue}
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, x, v):
            return torch.relu(v.unsqueeze(0).expand(4, -1)) + x
    """, "[torch.randn(4, 16), torch.randn(16)]")
    # relu alone would not broadcast v back to (4, 16): that expand stays glue
    assert "expand" in {g.op for g in dec.glue} and groups(dec) == [["relu", "add"]]


def test_r5_independent_branches_are_a_parallel_group(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Conv2d(3, 4, 1)
            self.b = nn.Conv2d(3, 4, 3, padding=1)
        def forward(self, x):
            return torch.cat([self.a(x), self.b(x)], dim=1).relu()
    """, inputs="[torch.randn(2, 3, 9, 9)]")
    assert dec.parallel_groups == [["a_conv2d", "b_conv2d"], ["relu"]]
    assert dec.kernel("a_conv2d").shared_with == ["b_conv2d"]
    assert "a_conv2d || b_conv2d" in __import__("tilestudio.core.render_text", fromlist=["x"]).render_text(dec)


def test_r6_eval_batch_norm_folds_into_conv_but_not_after_relu(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)
            self.bn = nn.BatchNorm2d(8)
            self.bn2 = nn.BatchNorm2d(8)
        def forward(self, x):
            return self.bn2(F.relu(self.bn(self.conv(x))))
    """, inputs="[torch.randn(2, 3, 9, 9)]")
    assert groups(dec) == [["conv2d", "batch_norm", "relu"], ["batch_norm"]]
    assert "R6" in dec.kernels[0].fusion_rules
    assert any("fold" in n for n in dec.kernels[0].notes)


def test_anchors_never_merge(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 16)
        def forward(self, x):
            return torch.softmax(self.lin(x), -1).sum(-1)
    """)
    assert groups(dec) == [["linear"], ["softmax"], ["sum"]]


def test_fusion_never_creates_a_cycle(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(1, 1)
        def forward(self, x):
            vals, idx = x.max(dim=1)
            g = self.lin(idx.float().unsqueeze(-1)).squeeze(-1)
            return vals + g
    """)
    position = {k: i for i, k in enumerate(dec.execution_order)}
    for k in dec.kernels:
        assert all(position[d] < position[k.id] for d in k.dependencies)
    assert groups(dec) == [["max", "to"], ["linear"], ["add"]]  # add cannot join max: linear sits between


def test_unsupported_op_becomes_its_own_spec_and_a_gap(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, x):
            return torch.histc(x, 10).relu()
    """)
    bad = [k for k in dec.kernels if k.unsupported]
    assert len(bad) == 1 and bad[0].operations == ["histc"]
    assert dec.gaps and "aten.histc" in dec.gaps[0]
    assert "Gaps: NONE" not in __import__("tilestudio.core.render_text", fromlist=["x"]).render_text(dec)


def test_unused_results_are_eliminated_not_kernels(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, x):
            unused = x.sum()
            return x.relu()
    """)
    assert groups(dec) == [["relu"]]
    dead = [e for e in dec.completeness if e.eliminated]
    assert [e.op for e in dead] == ["sum"]
    assert "(result unused: eliminated)" in __import__("tilestudio.core.render_text", fromlist=["x"]).render_text(dec)


def test_r8_attention_written_by_hand_is_one_kernel(decompose):
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, q, k, v, m):
            att = (q @ k.transpose(-2, -1)) * 0.125
            att = att.masked_fill(m == 0, float('-inf'))
            att = F.dropout(torch.softmax(att, dim=-1), 0.1, training=False)
            return att @ v
    """, inputs="[torch.randn(2, 3, 8, 16), torch.randn(2, 3, 8, 16), torch.randn(2, 3, 8, 16), "
                "torch.tril(torch.ones(8, 8))]")
    assert groups(dec) == [["matmul", "mul", "eq", "masked_fill", "softmax", "matmul"]]
    assert "R8" in dec.kernels[0].fusion_rules and dec.kernels[0].family == "attention"


def test_r8_takes_hugging_face_float32_softmax_cast_back(decompose):
    """Hugging Face's eager attention: softmax(..., dtype=float32).to(q.dtype) before the probabilities' matmul."""
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, q, k, v, m):
            w = torch.matmul(q, k.transpose(2, 3)) * 0.125 + m
            w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
            return torch.matmul(F.dropout(w, 0.1, training=False), v)
    """, inputs="[torch.randn(2, 3, 8, 16).half(), torch.randn(2, 3, 8, 16).half(), torch.randn(2, 3, 8, 16).half(), "
                "torch.randn(2, 1, 8, 8).half()]")
    assert groups(dec) == [["matmul", "mul", "add", "softmax", "to", "matmul"]]
    assert "R8" in dec.kernels[0].fusion_rules and dec.kernels[0].family == "attention"


@pytest.mark.parametrize("forward,ops", [
    # latent diffusion: einsum with k as stored
    ("return torch.einsum('b i j, b j d -> b i d', (torch.einsum('b i d, b j d -> b i j', q, k) * 0.1).softmax(-1), v)",
     [["einsum", "mul", "softmax", "einsum"]]),
    # diffusers: baddbmm into an empty tensor with beta=0 (the tensor ignored), alpha the scale
    ("e = torch.empty(q.shape[0], q.shape[1], k.shape[1], device=q.device)\n"
     "            return torch.bmm(torch.baddbmm(e, q, k.transpose(-1, -2), beta=0, alpha=0.1).softmax(-1), v)",
     [["baddbmm", "softmax", "bmm"]]),
    # baddbmm adding its input (beta=1) into a softmax: lowered to bmm + the input as an additive mask (ALiBi)
    ("return torch.bmm(torch.baddbmm(q @ k.transpose(-1, -2), q, k.transpose(-1, -2)).softmax(-1), v)",
     [["matmul"], ["bmm", "add", "softmax", "bmm"]]),
    # ALiBi (BLOOM): a (batch * heads, 1, keys) bias, beta and alpha both applied
    ("bias = torch.arange(9, device=q.device).float().expand(6, 1, 9)\n"
     "            return torch.bmm(torch.baddbmm(bias, q, k.transpose(-1, -2), beta=0.5, alpha=0.25).softmax(-1), v)",
     [["to"], ["bmm", "mul", "mul", "add", "softmax", "bmm"]]),
    # a baddbmm with an addend that no softmax reads stays one matmul kernel with its bias
    ("return torch.baddbmm(q @ k.transpose(-1, -2), q, k.transpose(-1, -2), beta=2.0) * 3",
     [["matmul"], ["baddbmm", "mul"]]),
])
def test_r8_takes_einsum_and_baddbmm_attention(decompose, forward, ops):
    dec = decompose(f"""
    class Model(nn.Module):
        def forward(self, q, k, v):
            {forward}
    """, inputs="[torch.randn(6, 8, 16), torch.randn(6, 9, 16), torch.randn(6, 9, 16)]")
    assert groups(dec) == ops
    attention = [k for k in dec.kernels if "softmax" in k.operations]
    assert all("R8" in k.fusion_rules and k.family == "attention" for k in attention)


@pytest.mark.parametrize("forward", [
    "p = torch.softmax(q @ k.transpose(-2, -1), -1)\n            return p @ v, p",  # probabilities returned
    "s = q @ k.transpose(-2, -1)\n            return torch.softmax(s, -1) @ v, s",  # scores returned
    "return torch.softmax(q @ k.transpose(-2, -1), 1) @ v",  # softmax over the queries
    "return torch.log_softmax(q @ k.transpose(-2, -1), -1) @ v",
    # the float32 probabilities are also returned: the cast back is not their only use
    "p = F.softmax(q @ k.transpose(-2, -1), -1, dtype=torch.float32)\n            return p.to(q.dtype) @ v, p",
    # a softmax in float16 of float32 scores: not the float32 softmax the flash kernel computes
    "return F.softmax((q @ k.transpose(-2, -1)).float(), -1, dtype=torch.float16) @ v",
    # einsum scores transposed (keys by queries)
    "return torch.einsum('bhij,bhjd->bhid', torch.einsum('bhid,bhjd->bhji', q, k).softmax(-1), v)",
])
def test_r8_leaves_what_is_not_attention(decompose, forward):
    dec = decompose(f"""
    class Model(nn.Module):
        def forward(self, q, k, v):
            {forward}
    """, inputs="[torch.randn(2, 3, 8, 16).half(), torch.randn(2, 3, 8, 16).half(), torch.randn(2, 3, 8, 16).half()]")
    assert all("R8" not in k.fusion_rules for k in dec.kernels)
    assert len(dec.kernels) >= 3  # the scores' matmul, the softmax and the probabilities' matmul stay apart


@pytest.mark.parametrize("inputs", [
    "[torch.randn(2, 8, 300), torch.randn(2, 8, 300), torch.randn(2, 8, 300)]",  # head dim over 256
    "[torch.randn(2, 8, 16), torch.randn(1, 8, 16), torch.randn(1, 8, 16)]",  # batch broadcast
])
def test_r8_leaves_operands_the_flash_kernel_does_not_take(decompose, inputs):
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, q, k, v):
            return torch.softmax(q @ k.transpose(-2, -1), -1) @ v
    """, inputs=inputs)
    assert all("R8" not in k.fusion_rules for k in dec.kernels) and len(dec.kernels) == 3


@pytest.mark.parametrize("equation,form", [
    ("b i j, b j d -> b i d", "a @ b"),
    ("bhqd,bhdk->bhqk", "a @ b"),
    ("b i d, b j d -> b i j", "a @ b^T"),
    ("...qd,...kd->...qk", "a @ b^T"),
    ("bhid,bhjd->bhji", None),    # the product transposed
    ("bij,bjd->bdi", None),
    ("bid,bjd->bij,", None),      # malformed
    ("bi,bj->bij", None),         # an outer product
    ("bii,bid->bid", None),       # a repeated subscript
    ("bhid,hbjd->bhij", None),    # batch dims in another order
    ("...id,bjd->...ij", None),   # an ellipsis that is not the common batch prefix
    ("bid,bjd", None),            # no output given
])
def test_batched_matmul_forms(equation, form):
    from tilestudio.core.einsum_forms import batched_matmul_form

    assert batched_matmul_form(equation) == form


ROTATE_HALF = """
    def rotate_half(x):
        x1 = x[..., : x.shape[-1] // 2]
        x2 = x[..., x.shape[-1] // 2 :]
        return torch.cat((-x2, x1), dim=-1)
"""


@pytest.mark.parametrize("rotate", [
    "rotate_half(q)",
    "torch.cat((-q[..., 16:], q[..., :16]), dim=3)",  # the cat's dim as a positive number
])
def test_r9_rotary_embedding_is_one_elementwise_kernel(decompose, rotate):
    dec = decompose(ROTATE_HALF + f"""
    class Model(nn.Module):
        def forward(self, q, cos, sin):
            return q * cos + {rotate} * sin
    """, inputs="[torch.randn(2, 3, 8, 32), torch.randn(1, 1, 8, 32), torch.randn(1, 1, 8, 32)]")
    (kernel,) = dec.kernels
    assert kernel.family == "elementwise" and "R9" in kernel.fusion_rules
    assert [t.name for t in kernel.inputs] == ["q", "cos", "sin"]  # q itself, not its halves
    assert sorted(kernel.operations) == ["add", "cat", "mul", "mul", "neg", "slice", "slice"]


@pytest.mark.parametrize("rotate", [
    "torch.cat((-q[..., 16:], q[..., :16]), dim=2)",  # along another dim
    "torch.cat((q[..., 16:], q[..., :16]), dim=-1)",  # no negation: a plain roll
    "torch.cat((-q[..., 8:16], q[..., :8]), dim=-1)",  # halves of a part of q
    "torch.cat((-q[..., 16:], (h := q[..., :16])), dim=-1) * h.sum()",  # a half read again
])
def test_r9_leaves_what_is_not_rotate_half(decompose, rotate):
    dec = decompose(f"""
    class Model(nn.Module):
        def forward(self, q):
            return {rotate}
    """, inputs="[torch.randn(2, 3, 32, 32)]")
    assert all("R9" not in k.fusion_rules for k in dec.kernels)


REPEAT_KV = "x[:, :, None, :, :].expand(2, 2, 3, 8, 16).reshape(2, 6, 8, 16)"


def test_r8_reads_grouped_query_heads_in_place(decompose):
    """Hugging Face's repeat_kv (unsqueeze, expand, reshape) joins the attention kernel: its inputs are the
    unrepeated keys and values (2 heads for 6 query heads); the repeated copies are never made."""
    dec = decompose(f"""
    class Model(nn.Module):
        def forward(self, q, k, v):
            rep = lambda x: {REPEAT_KV}
            return torch.softmax(q @ rep(k).transpose(2, 3) * 0.25, -1) @ rep(v)
    """, inputs="[torch.randn(2, 6, 8, 16), torch.randn(2, 2, 8, 16), torch.randn(2, 2, 8, 16)]")
    (kernel,) = dec.kernels
    assert "R8" in kernel.fusion_rules
    assert sorted(t.name for t in kernel.inputs) == ["k", "q", "v"]
    assert kernel.operations.count("expand") == 2


def test_r8_leaves_repeated_heads_used_elsewhere_to_glue(decompose):
    dec = decompose(f"""
    class Model(nn.Module):
        def forward(self, q, k, v):
            x = k
            kr = {REPEAT_KV}
            return torch.softmax(q @ kr.transpose(2, 3) * 0.25, -1) @ v + kr.sum()
    """, inputs="[torch.randn(2, 6, 8, 16), torch.randn(2, 2, 8, 16), torch.randn(2, 6, 8, 16)]")
    attention = next(k for k in dec.kernels if "R8" in k.fusion_rules)
    assert "expand" not in attention.operations and "k" not in [t.name for t in attention.inputs]


def test_attention_writes_its_heads_back_beside_the_features(decompose):
    """nanoGPT's `(att @ v).transpose(1, 2).contiguous().view(B, T, C)`: the transpose joins the attention kernel,
    whose output is the (B, T, H, D) tensor (written directly; the .contiguous() copies nothing), and nothing joins
    after it: the multiply after the view is its own kernel. scaled_dot_product_attention's result too."""
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, q, k, v):
            y = torch.softmax(q @ k.transpose(-2, -1) * 0.25, -1) @ v
            return y.transpose(1, 2).contiguous().view(2, 8, 48) * 2.0
    """, inputs="[torch.randn(2, 3, 8, 16), torch.randn(2, 3, 8, 16), torch.randn(2, 3, 8, 16)]")
    attention, mul = dec.kernels
    assert attention.operations[-1] == "transpose" and "R8" in attention.fusion_rules
    assert [o.shape for o in attention.outputs] == [[2, 8, 3, 16]]
    assert mul.operations == ["mul"]
    dec = decompose("""
    class Model(nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)
    """, inputs="[torch.randn(2, 3, 8, 16), torch.randn(2, 3, 8, 16), torch.randn(2, 3, 8, 16)]")
    (kernel,) = dec.kernels
    assert kernel.operations == ["scaled_dot_product_attention", "transpose"]
    assert [o.shape for o in kernel.outputs] == [[2, 8, 3, 16]]


@pytest.mark.parametrize("forward", [
    "y = F.scaled_dot_product_attention(q, k, v)\n            return y.transpose(1, 2), y",  # y used twice
    "return F.scaled_dot_product_attention(q, k, v).transpose(2, 3)",  # not the heads and the sequence
])
def test_attention_keeps_other_transposes_in_glue(decompose, forward):
    dec = decompose(f"""
    class Model(nn.Module):
        def forward(self, q, k, v):
            {forward}
    """, inputs="[torch.randn(2, 3, 8, 16), torch.randn(2, 3, 8, 16), torch.randn(2, 3, 8, 16)]")
    (kernel,) = dec.kernels
    assert "transpose" not in kernel.operations and [o.shape for o in kernel.outputs] == [[2, 3, 8, 16]]
