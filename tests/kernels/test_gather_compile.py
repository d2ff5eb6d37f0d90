"""Gather family (CPU; corpus specs: test_corpus_compile.py): one snippet per op variant generates, trace and compile ahead
of time for sm_90 and sm_100; the snippets are also executed by the CPU emulator against their references."""

from __future__ import annotations

import math

import pytest

from . import test_gather_gpu as G
from .cutile_emulator import check_emulated
from .helpers import compile_spec
from .helpers_indexed import check_emulated_both_layouts, forward, make_inputs, snippet_spec

FAMILY = "gather"

# name → (forward body, inputs, make_input kwargs)
CASES = {
    "embedding": (forward("F.embedding(i, w)", "w, i"), "[torch.randn(37, 45), torch.randint(0, 37, (3, 7))]",
                  {"int_ranges": {"i": (0, 37)}}),
    "embedding_fp16_pad_idx": (forward("F.embedding(i, w, padding_idx=0) * 2.0", "w, i"),
                               "[torch.randn(50, 24).half(), torch.randint(0, 50, (5,))]",
                               {"int_ranges": {"i": (0, 50)}}),
    "embedding_bf16_wide": (forward("F.embedding(i, w)", "w, i"),
                            "[torch.randn(20, 1100).to(torch.bfloat16), torch.randint(0, 20, (2, 3))]",
                            {"int_ranges": {"i": (0, 20)}}),
    "index_select": (forward("torch.index_select(x, 2, i)", "x, i"),
                     "[torch.randn(3, 5, 13), torch.randint(0, 13, (9,))]", {"int_ranges": {"i": (0, 13)}}),
    "gather": (forward("torch.gather(x, 1, i)", "x, i"), "[torch.randn(6, 11), torch.randint(0, 11, (6, 5))]",
               {"int_ranges": {"i": (0, 11)}}),
    "index_one": (forward("x[i]", "x, i"), "[torch.randn(9, 7).half(), torch.randint(-9, 9, (3, 4))]",
                  {"int_ranges": {"i": (-9, 9)}}),
    "index_adjacent": (forward("x[:, i, j]", "x, i, j"),
                       "[torch.randn(3, 6, 5, 4), torch.randint(0, 6, (3,)), torch.randint(0, 5, (2, 3))]",
                       {"int_ranges": {"i": (0, 6), "j": (0, 5)}}),
    "index_split": (forward("x[i, :, j]", "x, i, j"),
                    "[torch.randn(6, 3, 5), torch.randint(0, 6, (2, 3)), torch.randint(0, 5, (3,))]",
                    {"int_ranges": {"i": (0, 6), "j": (-5, 5)}}),
    "take": (forward("torch.take(x, i)", "x, i"), "[torch.randn(6, 5), torch.randint(-30, 30, (3, 4))]",
             {"int_ranges": {"i": (-30, 30)}}),
    "flip": (forward("x.flip(0, 2)"), "[torch.randn(3, 4, 5).to(torch.bfloat16)]", {}),
    "roll_dims": (forward("torch.roll(x, (2, -1), (1, 2))"), "[torch.randn(3, 4, 5)]", {}),
    "roll_flat": (forward("torch.roll(x, 7)"), "[torch.randn(3, 4, 5)]", {}),
    "repeat": (forward("x.repeat(2, 1, 3)"), "[torch.randn(4, 5)]", {}),
    "tile": (forward("x.tile(2, 2)"), "[torch.randn(4, 5).half()]", {}),
    "pad_constant": (forward("F.pad(x, (1, 2, 3, 0), value=0.5)"), "[torch.randn(2, 3, 4, 5)]", {}),
    "pad_negative": (forward("F.pad(x, (-1, 2))"), "[torch.randn(2, 3, 6)]", {}),
    "pad_reflect": (forward("F.pad(x, (1, 2, 3, 0), mode='reflect')"), "[torch.randn(2, 3, 4, 5)]", {}),
    "pad_replicate": (forward("F.pad(x, (1, 2), mode='replicate')"), "[torch.randn(2, 3, 5)]", {}),
    "pad_circular": (forward("F.pad(x, (1, 2), mode='circular')"), "[torch.randn(2, 3, 5)]", {}),
    "one_hot": (forward("F.one_hot(x, 7)"), "[torch.randint(0, 7, (3, 5))]", {"int_ranges": {"x": (0, 7)}}),
    "pixel_shuffle": (forward("F.pixel_shuffle(x, 2)"), "[torch.randn(2, 8, 3, 5)]", {}),
    "pixel_unshuffle": (forward("F.pixel_unshuffle(x, 2)"), "[torch.randn(2, 2, 4, 6)]", {}),
    "upsample_scale": (forward("F.interpolate(x, scale_factor=2, mode='nearest')"), "[torch.randn(2, 3, 4, 5)]",
                       {}),
    "upsample_size": (forward("F.interpolate(x, size=(7, 9), mode='nearest')"), "[torch.randn(2, 3, 4, 5)]", {}),
    "bilinear_x2": (forward("F.interpolate(x, scale_factor=2, mode='bilinear')"), "[torch.randn(2, 3, 5, 6)]", {}),
    "bilinear_size_corners_fp16": (forward("F.interpolate(x, size=(7, 9), mode='bilinear', align_corners=True)"),
                                   "[torch.randn(2, 3, 5, 6).half()]", {}),
    "bilinear_down_relu_bf16": (forward("torch.relu(F.interpolate(x, size=(3, 1), mode='bilinear'))"),
                                "[torch.randn(2, 3, 8, 9).to(torch.bfloat16)]", {}),
    "bilinear_scales_2_5_by_0_5": (forward("F.interpolate(x, scale_factor=(2.5, 0.5), mode='bilinear')"),
                                   "[torch.randn(2, 2, 5, 8)]", {}),
    "repeat_interleave_dim": (forward("x.repeat_interleave(3, dim=1)"), "[torch.randn(2, 3, 4)]", {}),
    "repeat_interleave_flat": (forward("x.repeat_interleave(2)"), "[torch.randn(2, 3)]", {}),
    "diagonal_mul": (forward("torch.diagonal(x, 1, 0, 1) * 2"), "[torch.randn(5, 6)]", {}),
    "diagonal_3d": (forward("torch.diagonal(x, -1, 1, 2)"), "[torch.randn(3, 5, 4)]", {}),
    "diag_embed": (forward("torch.diag_embed(x, 1)"), "[torch.randn(3, 4)]", {}),
    "embedding_add_relu": (forward("torch.relu(F.embedding(i, w) + b)", "w, i, b"),
                           "[torch.randn(30, 19), torch.randint(0, 30, (4, 6)), torch.randn(6, 19)]",
                           {"int_ranges": {"i": (0, 30)}}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gather_variant_compiles_and_emulates(name):
    body, inputs, kw = CASES[name]
    spec = snippet_spec(body, inputs, FAMILY)
    source = compile_spec(spec, ("sm_90",) if name not in ("embedding", "pad_constant") else ("sm_90", "sm_100"))
    result = check_emulated(spec, source, make_input=make_inputs(**kw))
    assert result.ok, result.message


def test_unsupported_gather_ops_become_skeletons():
    from tilestudio.core.kernels import generate_kernel

    # index_put with two index tensors (a point-wise scatter into a matrix): one index tensor is generated
    spec = snippet_spec(forward("torch.zeros(5, 4, device=x.device).index_put((i, i), x, accumulate=True)", "x, i"),
                        "[torch.randn(3), torch.randint(0, 4, (3,))]", FAMILY)
    source = generate_kernel(spec)
    assert source.skeleton and "index_put" in source.notes[0] and "2 index tensors" in source.notes[0]



@pytest.mark.parametrize("name", ["embedding_add_relu", "gather", "flip", "index_split", "pad_reflect", "take",
                                  "bilinear_x2"])
def test_gather_strided_inputs(name):
    """Non-contiguous sources and index tensors are read through their strides."""
    body, inputs, kw = CASES[name]
    spec = snippet_spec(body, inputs, FAMILY)
    result = check_emulated(spec, compile_spec(spec, ("sm_90",)), make_input=make_inputs(strided=True, **kw))
    assert result.ok, result.message


def test_bilinear_matches_pytorch_in_float32_to_rounding():
    """Bilinear upsampling reproduces PyTorch's float32 result to a few ulp (same float32 scale, same source index
    rule, same blend order), corner modes and fractional scales included."""
    import torch
    import torch.nn.functional as F

    from .cutile_emulator import emulation, load_emulated
    from tilestudio.core.kernels import generate_kernel

    for kw in ({"scale_factor": 2}, {"size": (11, 3), "align_corners": True}, {"scale_factor": (1.7, 0.6)}):
        args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
        spec = snippet_spec(forward(f"F.interpolate(x, {args}, mode='bilinear')"), "[torch.randn(2, 3, 6, 7)]",
                            FAMILY)
        source = generate_kernel(spec)
        x = torch.randn(2, 3, 6, 7, generator=torch.Generator().manual_seed(1))
        with emulation():
            out = load_emulated(source)[source.launch_name](x)
        torch.testing.assert_close(out, F.interpolate(x, mode="bilinear", **kw), rtol=1e-6, atol=1e-6)


# zero padding as shifted word copies (MEMORY_TUNING["pad_words"], the default, as row tiles or as a flat run of
# output words, "pad_words_flat", the default): odd and even left pads, 1-d and 2-d, 16-bit
# and float32, several column blocks, pads wider than a word
PAD_WORDS = {
    "odd_2d_fp16": ("F.pad(x, (1, 1, 1, 1))", "[torch.randn(2, 3, 6, 8).half()]"),
    "even_2d_bf16": ("F.pad(x, (2, 0, 1, 2))", "[torch.randn(2, 3, 5, 6).to(torch.bfloat16)]"),
    "odd_wide_fp16": ("F.pad(x, (3, 5, 0, 2))", "[torch.randn(2, 7, 10).half()]"),
    "one_d_fp32": ("F.pad(x, (1, 3))", "[torch.randn(3, 7)]"),
    "two_d_fp32_value0": ("F.pad(x, (2, 1, 3, 3), value=0.0)", "[torch.randn(2, 4, 5)]"),
    "column_blocks_fp16": ("F.pad(x, (1, 1))", "[torch.randn(2, 3, 600).half()]"),
    "column_blocks_bf16_2d": ("F.pad(x, (5, 1, 1, 0))", "[torch.randn(3, 2, 700).to(torch.bfloat16)]"),
}


@pytest.mark.parametrize("name", sorted(PAD_WORDS))
def test_pad_as_word_copies(name, monkeypatch):
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pad_words", True)
    monkeypatch.setitem(MEMORY_TUNING, "pad_words_flat", False)
    expr, inputs = PAD_WORDS[name]
    spec = snippet_spec(forward(expr), inputs, FAMILY)
    source = compile_spec(spec, ("sm_90",))
    assert "ct.Slice(" in source.code and "ct.gather(" not in source.code
    check_emulated_both_layouts(spec, source)


@pytest.mark.parametrize("name", sorted(PAD_WORDS))
def test_pad_as_flat_word_runs(name, monkeypatch):
    """MEMORY_TUNING["pad_words_flat"] (the default): the output as one flat run of words, each gathered from its input row
    (odd left pads splice two words): compiled for sm_90, matched in the emulator on contiguous and strided
    inputs, with blocks that straddle output rows and planes."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pad_words", True)
    monkeypatch.setitem(MEMORY_TUNING, "pad_words_flat", True)
    monkeypatch.setitem(MEMORY_TUNING, "pad_flat_tile", 64)
    expr, inputs = PAD_WORDS[name]
    spec = snippet_spec(forward(expr), inputs, FAMILY)
    source = compile_spec(spec, ("sm_90",))
    assert "the output as" in source.notes[0] and "ct.Slice(" not in source.code, source.notes
    check_emulated_both_layouts(spec, source)


@pytest.mark.parametrize("expr,inputs", [
    ("F.pad(x, (1, 1), value=0.5)", "[torch.randn(2, 6).half()]"),  # a non-zero value
    ("F.pad(x, (1, 1), mode='reflect')", "[torch.randn(2, 6).half()]"),
    ("F.pad(x, (-1, 1))", "[torch.randn(2, 6).half()]"),  # cropping
    ("F.pad(x, (1, 0))", "[torch.randn(2, 6).half()]"),  # odd output width: not whole words
    ("F.pad(x, (0, 0, 0, 0, 1, 1))", "[torch.randn(2, 3, 4, 6).half()]"),  # a third padded dim
    ("torch.relu(F.pad(x, (1, 1)))", "[torch.randn(2, 6).half()]"),  # a fused epilogue
])
@pytest.mark.parametrize("flat", [False, True], ids=["rows", "flat"])
def test_pad_words_falls_back_to_gathers(expr, inputs, flat, monkeypatch):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pad_words", True)
    monkeypatch.setitem(MEMORY_TUNING, "pad_words_flat", flat)
    spec = snippet_spec(forward(expr), inputs, FAMILY)
    source = generate_kernel(spec)
    assert "ct.gather(" in source.code and "ct.Slice(" not in source.code
    assert "32-bit words" not in " ".join(source.notes), source.notes


# embedding lookups as word copies of the table rows (MEMORY_TUNING["embedding_words"], forced on)
EMBED_WORDS = {
    "bf16_int64_words": ("F.embedding(i, w)", "[torch.randn(37, 64).to(torch.bfloat16), torch.randint(0, 37, (3, 7))]"),
    "fp16_int32_words": ("F.embedding(i, w)", "[torch.randn(20, 6).half(), torch.randint(0, 20, (11,))]"),
    "fp32_int32_words": ("F.embedding(i, w)", "[torch.randn(9, 3), torch.randint(0, 9, (2, 3, 4))]"),
    "fp32_column_blocks": ("F.embedding(i, w)", "[torch.randn(5, 1100), torch.randint(0, 5, (7,))]"),
    "int32_ids_padding_idx": ("F.embedding(i, w, padding_idx=0)", "[torch.randn(30, 16), torch.randint(0, 30, (5, 3)).int()]"),
}


@pytest.mark.parametrize("name", sorted(EMBED_WORDS))
def test_embedding_as_word_copies(name, monkeypatch):
    import torch

    from .cutile_emulator import emulation, load_emulated
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "embedding_words", True)
    expr, inputs = EMBED_WORDS[name]
    spec = snippet_spec(forward(expr, "w, i"), inputs, FAMILY)
    source = compile_spec(spec, ("sm_90",))
    assert any("copied as" in n for n in source.notes), source.notes
    vocab = spec.inputs[0].shape[0]
    check_emulated_both_layouts(spec, source, int_ranges={"i": (0, vocab)})
    gen = torch.Generator().manual_seed(5)
    w = torch.randn(spec.inputs[0].shape, generator=gen).to(getattr(torch, spec.inputs[0].dtype))
    i = torch.randint(0, vocab, spec.inputs[1].shape, generator=gen).to(getattr(torch, spec.inputs[1].dtype))
    w[1, 0] = float("nan")
    offset = torch.empty(w.numel() + 1, dtype=w.dtype)[1:].view(w.shape)  # a table one element into its buffer
    offset.copy_(w)
    with emulation():
        ns = load_emulated(source)
        for table in (w, offset):
            torch.testing.assert_close(ns[source.launch_name](table, i), w[i.long()], rtol=0, atol=0, equal_nan=True)


def test_embedding_words_fall_back(monkeypatch):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "embedding_words", True)
    for expr, inputs in (("torch.relu(F.embedding(i, w))", "[torch.randn(9, 8), torch.randint(0, 9, (4,))]"),
                         ("F.embedding(i, w)", "[torch.randn(9, 5).half(), torch.randint(0, 9, (4,))]")):  # 10 B
        notes = generate_kernel(snippet_spec(forward(expr, "w, i"), inputs, FAMILY)).notes
        assert not any("copied as" in n for n in notes), expr


RESAMPLE = [
    ("nearest", (2, 3, 7), [{"scale_factor": 2}, {"size": 5}]),
    ("nearest", (2, 3, 4, 5, 6), [{"scale_factor": 2}, {"size": (3, 7, 4)}]),
    ("nearest-exact", (2, 3, 6, 7), [{"scale_factor": 1.5}, {"size": (4, 11)}]),
    ("nearest-exact", (2, 3, 9), [{"scale_factor": 0.5}]),
    ("linear", (2, 3, 7), [{"scale_factor": 2}, {"size": 11, "align_corners": True}, {"scale_factor": 0.6}]),
    ("trilinear", (2, 3, 4, 5, 6), [{"scale_factor": 2}, {"size": (3, 7, 4), "align_corners": True}]),
    ("bicubic", (2, 3, 6, 7), [{"scale_factor": 2}, {"size": (11, 3), "align_corners": True},
                               {"scale_factor": (1.7, 0.6)}]),
]


@pytest.mark.parametrize("mode,shape,kws", RESAMPLE, ids=[f"{m}-{len(s) - 2}d" for m, s, _ in RESAMPLE])
def test_resampling_modes_match_pytorch_in_float32(mode, shape, kws):
    """nearest / nearest-exact over 1-3 spatial dims, linear, trilinear and bicubic (gather_resample.py) give
    PyTorch's float32 result to rounding, from scale factors and sizes, both corner modes; each compiles."""
    import torch
    import torch.nn.functional as F

    from .cutile_emulator import emulation, load_emulated
    from tilestudio.core.kernels import generate_kernel

    for kw in kws:
        args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
        dims = ", ".join(map(str, shape))
        spec = snippet_spec(forward(f"F.interpolate(x, {args}, mode={mode!r})"), f"[torch.randn({dims})]", FAMILY)
        source = generate_kernel(spec)
        assert not source.skeleton, source.notes
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
        with emulation():
            out = load_emulated(source)[source.launch_name](x)
        torch.testing.assert_close(out, F.interpolate(x, mode=mode, **kw), rtol=1e-5, atol=1e-5)
    compile_spec(spec, ("sm_90",))


REARRANGE = [
    ("F.channel_shuffle(x, 4)", "x", [(2, 12, 5, 3)]),
    ("F.unfold(x, 3, padding=1)", "x", [(2, 3, 6, 7)]),
    ("F.unfold(x, (2, 3), dilation=(2, 1), padding=(1, 0), stride=(2, 3))", "x", [(2, 3, 9, 11)]),
    ("F.fold(x, (6, 7), 3, padding=1)", "x", [(2, 27, 42)]),
    ("F.fold(x, (9, 11), (2, 3), dilation=(2, 1), padding=(1, 0), stride=(2, 3))", "x", [(2, 18, 15)]),
    ("F.fold(x, (5, 5), 2, stride=2) * 2", "x", [(12, 4)]),
    ("torch.diff(x, dim=1)", "x", [(4, 9, 5)]),
    ("torch.diff(x, n=3)", "x", [(4, 9)]),
    ("torch.diff(x, dim=0)", "x", [(6, 5, "bool")]),
    ("torch.relu(torch.cross(x, y, dim=1))", "x, y", [(4, 3, 5), (4, 3, 5)]),
    ("torch.linalg.cross(x, y)", "x, y", [(7, 3), (7, 3)]),
]


@pytest.mark.parametrize("expr,args,shapes", REARRANGE, ids=[e for e, _, _ in REARRANGE])
def test_rearranging_gathers_match_pytorch(expr, args, shapes):
    """channel_shuffle, im2col (F.unfold: padding, dilation, stride), col2im (F.fold: overlapping, strided and
    dilated windows, an unbatched input), diff (orders 1 and 3, bool) and cross
    (gather_rearrange.py) give PyTorch's float32 values on the emulator and compile."""
    import torch
    import torch.nn.functional as F  # noqa: F401 - used by eval

    from .cutile_emulator import emulation, load_emulated
    from tilestudio.core.kernels import generate_kernel

    def tensor(s, gen=None):  # a trailing "bool": a bool tensor (x > 0)
        dims = [d for d in s if isinstance(d, int)]
        return (torch.randn(*dims, generator=gen) > 0) if "bool" in s else torch.randn(*dims, generator=gen)

    inputs = "[" + ", ".join(f"torch.randn{tuple(d for d in s if isinstance(d, int))!r}" + (" > 0" if "bool" in s else "")
                             for s in shapes) + "]"
    spec = snippet_spec(forward(expr, args), inputs, FAMILY)
    source = compile_spec(spec, ("sm_90",))
    assert not generate_kernel(spec).skeleton
    gen = torch.Generator().manual_seed(3)
    vals = [tensor(s, gen) for s in shapes]
    with emulation():
        out = load_emulated(source)[source.launch_name](*vals)
    want = eval(expr, {"torch": torch, "F": F}, dict(zip(args.split(", "), vals)))
    torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(n for n in G.VARIANTS if n != "one_hot"))
def test_gpu_gather_cases_pass_on_the_emulator(name, monkeypatch):
    """The GPU file's first shape of each variant (small and unaligned), float32, on the emulator."""

    monkeypatch.setattr(G, "CHECK", check_emulated)
    G.test_gather_kernel_matches_reference(name, G.VARIANTS[name][3][0], "float32")


@pytest.mark.parametrize("case", [c for c in G.SEARCH if math.prod(c[1]) <= 4096], ids=lambda c: f"{c[0]}-{c[1]}")
def test_gpu_search_cases_pass_on_the_emulator(case, monkeypatch):
    """The GPU file's small bucketize / searchsorted cases on the emulator (sorted boundaries reach the check)."""
    monkeypatch.setattr(G, "CHECK", check_emulated)
    G.test_search_matches_reference(*case)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_matches_pytorch(mode, padding, align):
    """F.grid_sample (gather_resample.grid_sample) at a grid reaching 30% past the input on every side: PyTorch's
    float32 values for each interpolation, padding and corner mode."""
    import torch
    import torch.nn.functional as F

    from .cutile_emulator import emulation, load_emulated
    from tilestudio.core.kernels import generate_kernel

    expr = f"F.grid_sample(x, g, mode={mode!r}, padding_mode={padding!r}, align_corners={align})"
    spec = snippet_spec(forward(expr, "x, g"), "[torch.randn(2, 3, 5, 7), torch.rand(2, 4, 6, 2)]", FAMILY)
    source = generate_kernel(spec)
    assert not source.skeleton, source.notes
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(2, 3, 5, 7, generator=gen)
    g = torch.rand(2, 4, 6, 2, generator=gen) * 2.6 - 1.3
    g[0, 0, :3] = torch.tensor([[-1.0, -1.0], [1.0, 1.0], [0.0, 0.0]])  # corners and the centre exactly
    with emulation():
        out = load_emulated(source)[source.launch_name](x, g)
    want = F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    if mode == "bilinear" and padding == "reflection" and align:
        compile_spec(spec, ("sm_90",))


@pytest.mark.parametrize("epilogue", [False, True])
def test_grid_sample_tiles_channels_per_output_row_unless_fused(epilogue):
    """Without an epilogue grid_sample takes channel-major tiles (gather_channels.py: one output row's grid,
    coordinates and weights per block, 32 channels x 128 pixels): channel and pixel counts off the tile (70
    channels, rows of 130) give PyTorch's values; with a fused epilogue the generic (rows, columns) layout does."""
    import torch
    import torch.nn.functional as F

    from .cutile_emulator import emulation, load_emulated
    from tilestudio.core.kernels import generate_kernel

    expr = "F.grid_sample(x, g, align_corners=False)"
    expr = f"torch.relu({expr}) * 2.0" if epilogue else expr
    spec = snippet_spec(forward(expr, "x, g"), "[torch.randn(2, 70, 9, 11), torch.rand(2, 3, 130, 2)]", FAMILY)
    source = compile_spec(spec, ("sm_90",))
    assert ("channel-major" in " ".join(source.notes)) is not epilogue
    gen = torch.Generator().manual_seed(7)
    x, g = torch.randn(2, 70, 9, 11, generator=gen), torch.rand(2, 3, 130, 2, generator=gen) * 2.4 - 1.2
    with emulation():
        out = load_emulated(source)[source.launch_name](x, g)
    want = eval(expr, {"torch": torch, "F": F, "x": x, "g": g})  # noqa: S307 - our own expression
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
