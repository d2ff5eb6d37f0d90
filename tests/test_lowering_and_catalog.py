"""Recurrent layers lower to matmul + recurrence/gate kernels; the catalog covers the required op families."""

import textwrap

import pytest

from kernels.helpers import decompose_source


def test_multilayer_bidirectional_lstm_gru_rnn_and_cells_lower_and_verify(tmp_path):
    import json

    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file
    from tilestudio.core.verify_run import verify_file

    path = tmp_path / "rnns.py"
    path.write_text(textwrap.dedent("""
        import torch, torch.nn as nn
        class Model(nn.Module):
            def __init__(s):
                super().__init__()
                s.gc = nn.GRUCell(4, 6); s.lc = nn.LSTMCell(4, 6); s.cell = nn.RNNCell(4, 6, nonlinearity="relu")
                s.rnn = nn.RNN(4, 6, num_layers=2, bidirectional=True)
                s.gru = nn.GRU(4, 6, batch_first=True)
                s.lstm = nn.LSTM(4, 5, num_layers=2, bidirectional=True, batch_first=True)
            def forward(s, x, h):
                a = s.gc(x[:, 0], h); b, c = s.lc(x[:, 0]); e = s.cell(x[:, 1], h)
                r, hn = s.rnn(x); g, gh = s.gru(x, h.unsqueeze(0)); y, (lh, lc) = s.lstm(x)
                return a, b, c, e, r, hn, g, gh, y, lh, lc
        def get_inputs():
            return [torch.randn(3, 5, 4), torch.randn(3, 6)]
    """))
    graph = capture_file(str(path))
    dec = analyze_graph(graph, "rnns.py")
    families = [k.family for k in dec.kernels]
    assert "recurrent" in families and "matmul" in families
    assert not any(k.unsupported for k in dec.kernels)
    recur = [k for k in dec.kernels if k.family == "recurrent"]
    assert len(recur) == 2 * 2 + 1 + 2 * 2  # rnn 2 layers x 2 dirs, gru 1, lstm 2 x 2
    assert all(k.operations == [k.operations[0]] for k in recur)
    for k in recur:  # the recurrence reference is self-contained (nested def)
        assert "def " + k.operations[0] in k.reference
    # cells become a projection matmul per operand and one fused gate kernel
    gates = [k for k in dec.kernels if k.family == "elementwise"]
    assert any({"sigmoid", "tanh"} <= set(k.operations) for k in gates)
    bundle = tmp_path / "b.json"
    bundle.write_text(json.dumps({"graph": graph.model_dump(mode="json"), "decomposition": dec.model_dump(mode="json")}))
    report = verify_file(str(path), None, str(bundle))
    assert report["ok"], report


def test_glu_lowers_to_a_sigmoid_gate_over_the_two_halves(tmp_path):
    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file

    path = tmp_path / "glu.py"
    path.write_text(textwrap.dedent("""
        import torch, torch.nn as nn, torch.nn.functional as F
        class Model(nn.Module):
            def __init__(s):
                super().__init__()
                s.glu = nn.GLU(dim=1)
            def forward(s, x):
                return F.glu(x, -1) * 2, s.glu(x)
        def get_inputs():
            return [torch.randn(3, 6, 10)]
    """))
    dec = analyze_graph(capture_file(str(path)), "glu.py")
    assert not dec.gaps and not any(k.unsupported for k in dec.kernels)
    assert [k.operations for k in dec.kernels] == [["sigmoid", "mul", "mul"], ["sigmoid", "mul"]]
    assert [k.outputs[0].shape for k in dec.kernels] == [[3, 6, 5], [3, 3, 10]]
    slices = [(g.args[1:4]) for g in dec.glue if g.op == "slice"]
    assert slices == [[2, 0, 5], [2, 5, 10], [1, 0, 3], [1, 3, 6]]


@pytest.mark.parametrize("p,batched,kernels", [
    (2.0, False, [["mul", "sum"], ["mul", "sum"], ["matmul", "mul", "add", "add", "clamp_min", "sqrt"]]),
    (2.0, True, [["mul", "sum"], ["mul", "sum"], ["matmul", "mul", "add", "add", "clamp_min", "sqrt"]]),
    (1.0, False, [["sub", "abs", "sum"]]), (1.0, True, [["sub", "abs", "sum"]]),
    ("float('inf')", False, [["sub", "abs", "amax"]]), (3.0, False, [["sub", "abs", "pow", "sum", "pow"]]),
])
def test_cdist_lowers_to_generated_kernels(tmp_path, p, batched, kernels):
    """cdist with p = 2: two sum-of-squares row kernels and one matmul whose epilogue adds them, clamps and takes
    the root (PyTorch's own matrix form); other p: one reduction over the features of the broadcast difference (its
    prologue); every kernel generated and emulated, the whole verified against the model."""
    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file

    lead = "4, " if batched else ""
    path = tmp_path / "cd.py"
    path.write_text(textwrap.dedent(f"""
        import torch, torch.nn as nn
        class Model(nn.Module):
            def forward(s, x, y):
                return torch.cdist(x, y, p={p})
        def get_inputs():
            return [torch.randn({lead}30, 16), torch.randn({lead}27, 16).round()]
    """))
    dec = analyze_graph(capture_file(str(path)), "cd.py")
    assert [k.operations for k in dec.kernels] == kernels
    _generated_emulated_and_verified(path, dec)


@pytest.mark.parametrize("eq,shapes,kernels", [
    ("bij,bjk,bkl->bil", [(2, 5, 6), (2, 6, 7), (2, 7, 3)], 2),
    ("ab,bc,cd,de->ae", [(5, 6), (6, 7), (7, 8), (8, 3)], 3),
    ("bhid,bhjd,bhje->bhie", [(2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7)], 2),
])
def test_einsum_of_many_operands_lowers_to_a_chain_of_matmuls(tmp_path, eq, shapes, kernels):
    """An einsum of three or more operands is a left-to-right chain of two-operand einsums (each a matmul kernel,
    none a skeleton), verified against the model and run on the emulator."""
    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file

    names = [f"t{i}" for i in range(len(shapes))]
    path = tmp_path / "es.py"
    path.write_text(textwrap.dedent(f"""
        import torch, torch.nn as nn
        class Model(nn.Module):
            def forward(s, {', '.join(names)}):
                return torch.einsum({eq!r}, {', '.join(names)})
        def get_inputs():
            return [{', '.join(f'torch.randn{s!r}' for s in shapes)}]
    """))
    dec = analyze_graph(capture_file(str(path)), "es.py")
    assert [k.operations for k in dec.kernels] == [["einsum"]] * kernels
    _generated_emulated_and_verified(path, dec)


def test_multihead_attention_decomposes_into_matmul_and_softmax():
    dec = decompose_source("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = nn.MultiheadAttention(16, 2, batch_first=True)
        def forward(self, x):
            return self.mha(x, x, x)[0]
    """, "[torch.randn(2, 5, 16)]")
    families = {k.family for k in dec.kernels}
    assert {"matmul", "softmax"} <= families
    assert not dec.gaps


REQUIRED = """linear matmul bmm baddbmm einsum conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d
max_pool1d max_pool2d max_pool3d avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool2d adaptive_max_pool2d
batch_norm layer_norm group_norm instance_norm softmax log_softmax sum mean max min prod argmax argmin logsumexp
norm linalg_vector_norm var std cumsum cumprod relu relu6 leaky_relu elu selu celu gelu silu mish softplus hardtanh
hardswish hardsigmoid sigmoid tanh clamp where masked_fill abs exp log sqrt rsqrt pow minimum maximum dropout
embedding cat stack view reshape permute transpose flatten unsqueeze expand contiguous slice select index mse_loss
l1_loss smooth_l1_loss huber_loss cross_entropy_loss nll_loss kl_div hinge_embedding_loss cosine_similarity
triplet_margin_loss lstm gru""".split()


@pytest.mark.parametrize("op", REQUIRED)
def test_required_op_is_catalogued(op):
    from tilestudio.core.catalog import catalog_ops

    assert op in catalog_ops()


def test_parent_side_analysis_never_imports_torch(analyses):
    """The GUI process analyses captured graphs without paying torch's import (seconds)."""
    import subprocess
    import sys

    from corpus import corpus_files

    graph, _ = analyses(corpus_files("op_lstm")[0])
    code = ("import sys, json\nfrom tilestudio.core.opgraph import OpGraph\nfrom tilestudio.core.analyzer import "
            "analyze_graph\nfrom tilestudio.core.render_text import render_text\n"
            "g = OpGraph.model_validate_json(sys.stdin.read())\nrender_text(analyze_graph(g, 'm.py'))\n"
            "print('torch' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], input=graph.model_dump_json(), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


@pytest.mark.parametrize("body,ops", [
    ("y = x.clone(); y[y < 0] = 0.5; return y", [["lt", "where"]]),
    ("y = x.clone(); y[:, m] = float('-inf'); return y.softmax(-1)", [["where", "softmax"]]),
    ("y = x.clone(); y.index_put_((r,), v, accumulate=True); return y", [["where", "add"]]),
])
def test_index_put_with_a_boolean_mask_lowers_to_where(tmp_path, body, ops):
    """x[mask] = v / x.index_put_((mask,), v, accumulate=True) with values broadcast over the dims after the
    mask's is elementwise: where (+ add), fused with its neighbours, verified against the model and emulated."""
    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file

    path = tmp_path / "ip.py"
    path.write_text(textwrap.dedent(f"""
        import torch, torch.nn as nn
        class Model(nn.Module):
            def forward(s, x, m, r, v):
                {body}
        def get_inputs():
            return [torch.randn(3, 7, 9), torch.rand(7, 9) > 0.6, torch.rand(3) > 0.5, torch.randn(9)]
    """))
    dec = analyze_graph(capture_file(str(path)), "ip.py")
    assert [k.operations for k in dec.kernels] == ops
    _generated_emulated_and_verified(path, dec)


def test_index_put_forms_that_are_not_generated_stay_explicit(tmp_path):
    """Values with one row per selected element (a count only the mask's values give) and two index tensors:
    explicit unsupported specs naming index_put."""
    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file
    from tilestudio.core.kernels import generate_kernel

    path = tmp_path / "ipu.py"
    path.write_text(textwrap.dedent("""
        import torch, torch.nn as nn
        class Model(nn.Module):
            def forward(s, x, m, i, rows):
                y = x.clone()
                y.index_put_((m,), rows)
                z = x.clone()
                z[i, i] = 1.0
                return y * 2, z
        def get_inputs():
            return [torch.randn(6, 6), torch.tensor([1, 0, 1, 0, 0, 1]).bool(), torch.tensor([0, 3]),
                    torch.randn(3, 6)]
    """))
    dec = analyze_graph(capture_file(str(path)), "ipu.py")
    bad = [k for k in dec.kernels if "index_put" in k.operations]
    assert len(bad) == 2 and all(generate_kernel(k).skeleton for k in bad), [k.operations for k in dec.kernels]


def _generated_emulated_and_verified(path, dec) -> None:
    """Every kernel generated (no skeleton) and right on the emulator; `analyze --verify` passes on the model."""
    import subprocess
    import sys

    from kernels.cutile_emulator import check_emulated
    from tilestudio.core.kernels import generate_kernel

    for spec in dec.kernels:
        source = generate_kernel(spec)
        assert not source.skeleton, source.notes
        assert check_emulated(spec, source).ok
    r = subprocess.run([sys.executable, "-m", "tilestudio", "analyze", str(path), "--verify"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "verify: PASS" in r.stderr, r.stderr[-2000:]


ORDER_STATS = {
    "median_dim": ("torch.median(x, dim=1)", [["sort"], ["isnan", "logical_not", "sum"], ["lt", "where"], ["gather"],
                                              ["gather"]]),
    "median_keepdim_values": ("x.median(dim=-1, keepdim=True).values * 2", None),
    "median_all": ("x.median()", None),
    "nanmedian_dim": ("torch.nanmedian(x, 1)", None),
    "kthvalue": ("torch.kthvalue(x, 5, dim=1)", [["sort"]]),
    "kthvalue_keepdim_dim0": ("x.kthvalue(2, dim=0, keepdim=True)", [["sort"]]),
}


@pytest.mark.parametrize("name", sorted(ORDER_STATS))
def test_order_statistics_lower_to_a_sort_and_a_pick(tmp_path, name, analyses):
    """kthvalue / median / nanmedian: a stable sort (the topk family) and a pick at one position, verified against
    the model and the composed file run on the emulator against PyTorch on lines holding NaN (median propagates
    the first NaN, kthvalue sorts NaN last, nanmedian skips them). (Among equal values PyTorch's pick is
    unspecified: the sort's is the first.)"""
    import torch

    from kernels.composed_emulator import run_composed
    from tilestudio.core.composer import compose_model

    expr, kernels = ORDER_STATS[name]
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(f"""
        import torch, torch.nn as nn
        class Model(nn.Module):
            def forward(s, x):
                return {expr}
        def get_inputs():
            torch.manual_seed(3)
            x = torch.randn(12, 37)
            x[::3, 5] = float('nan')
            x[1, 9] = float('nan')
            x[4, :8] = float('nan')
            return [x]
    """))
    dec = analyses(path)[1]
    if kernels is not None:
        assert [k.operations for k in dec.kernels] == kernels
    _generated_emulated_and_verified(path, dec)
    run = run_composed(compose_model(str(path), dec).text, calls=1)
    for i, (out, ref) in enumerate(zip(run.outputs[0], run.reference)):
        assert out.shape == ref.shape and out.dtype == ref.dtype
        torch.testing.assert_close(out, ref, rtol=0, atol=0, equal_nan=True)


def test_embedding_bag_lowers_to_bags_rows_and_an_index_add(tmp_path, analyses):
    """nn.EmbeddingBag (mean with offsets, sum over 2-D bags, per-sample weights, include_last_offset, an empty
    bag): bucketize / embedding / index_add kernels, verified against the model and as a whole composed file on
    the emulator; mode='max' stays an explicit unsupported op."""
    from kernels.composed_emulator import run_composed
    from tilestudio.core.composer import compose_model
    from tilestudio.core.kernels import generate_kernel

    path = tmp_path / "bags.py"
    path.write_text(textwrap.dedent("""
        import torch, torch.nn as nn
        class Model(nn.Module):
            def __init__(s):
                super().__init__()
                s.e = nn.EmbeddingBag(50, 8, mode="mean")
                s.f = nn.EmbeddingBag(50, 8, mode="sum")
                s.g = nn.EmbeddingBag(50, 8, mode="sum", include_last_offset=True)
            def forward(s, i, o, j, w):
                return s.e(i, o), s.f(j), s.f(i, o, per_sample_weights=w), s.g(i, torch.cat([o, o.new_full((1,), 20)]))
        def get_inputs():
            return [torch.randint(0, 50, (20,)), torch.tensor([0, 3, 3, 10]), torch.randint(0, 50, (4, 5)),
                    torch.rand(20)]
    """))
    dec = analyses(path)[1]
    assert "embedding_bag" not in {op for k in dec.kernels for op in k.operations}
    assert sum("index_add" in k.operations for k in dec.kernels) == 4
    _generated_emulated_and_verified(path, dec)
    run = run_composed(compose_model(str(path), dec).text, calls=1)
    assert run.max_diff(0) < 1e-5

    path = tmp_path / "bag_max.py"
    path.write_text(textwrap.dedent("""
        import torch, torch.nn as nn
        class Model(nn.Module):
            def __init__(s):
                super().__init__()
                s.e = nn.EmbeddingBag(50, 8, mode="max")
            def forward(s, i, o):
                return s.e(i, o)
        def get_inputs():
            return [torch.randint(0, 50, (20,)), torch.tensor([0, 3, 10])]
    """))
    dec = analyses(path)[1]
    assert [k.operations for k in dec.kernels] == [["embedding_bag"]] and generate_kernel(dec.kernels[0]).skeleton
