"""Gather family on the GPU: each op on three shapes (unaligned ones included) in float32/float16/bfloat16 (index
tensors drawn from their valid range), checked against the float64 reference with poisoned outputs."""

from __future__ import annotations

import pytest

from .helpers import run_check
from .helpers_indexed import DT, forward, gpu_cases, make_inputs, shape_str, snippet_spec

pytestmark = pytest.mark.gpu
CHECK = None  # checking.check_kernel; swapped for the CPU emulator when validating this file without a GPU


def _idx(lo: int, hi: int, shape) -> str:
    return f"torch.randint({lo}, {hi}, ({shape_str(shape)},))"


# name → (forward expression, args, per-shape builder: shape → (inputs, int ranges), shapes)
def _embedding(shape, dt):
    vocab, dim, ids = shape
    return f"torch.randn({vocab}, {dim}){dt}, {_idx(0, vocab, ids)}", {"i": (0, vocab)}


def _index_select(shape, dt):
    x, n = shape
    return f"torch.randn({shape_str(x)}){dt}, {_idx(0, x[1], (n,))}", {"i": (0, x[1])}


def _gather(shape, dt):
    x, k = shape
    return f"torch.randn({shape_str(x)}){dt}, {_idx(0, x[1], (x[0], k))}", {"i": (0, x[1])}


def _index2(shape, dt):
    x, n = shape
    return (f"torch.randn({shape_str(x)}){dt}, {_idx(-x[1], x[1], (n,))}, {_idx(0, x[2], (n,))}",
            {"i": (-x[1], x[1]), "j": (0, x[2])})


def _take(shape, dt):
    x, n = shape
    total = 1
    for s in x:
        total *= s
    return f"torch.randn({shape_str(x)}){dt}, {_idx(-total, total, n)}", {"i": (-total, total)}


def _plain(shape, dt):
    return f"torch.randn({shape_str(shape)}){dt}", {}


def _grid(shape, dt):
    """An (N, C, H, W) input and an (N, Ho, Wo, 2) grid (standard normal: a third of it past the input's edges)."""
    x, (ho, wo) = shape
    return f"torch.randn({shape_str(x)}){dt}, torch.randn({x[0]}, {ho}, {wo}, 2){dt}", {}


def _one_hot(shape, dt):
    ids, c = shape
    return _idx(0, c, ids), {"x": (0, c)}


def _embedding_add(shape, dt):
    vocab, dim, ids = shape
    return (f"torch.randn({vocab}, {dim}){dt}, {_idx(0, vocab, ids)}, torch.randn({ids[-1]}, {dim}){dt}",
            {"i": (0, vocab)})


VARIANTS = {
    "embedding": ("F.embedding(i, w)", "w, i", _embedding,
                  [(37, 45, (3, 7)), (32000, 1024, (4, 513)), (5, 1, (2,))]),
    "embedding_add_relu": ("torch.relu(F.embedding(i, w) + b)", "w, i, b", _embedding_add,
                           [(30, 19, (4, 6)), (5000, 768, (8, 127)), (3, 2, (1,))]),
    "index_select": ("torch.index_select(x, 1, i)", "x, i", _index_select,
                     [((3, 15, 23), 5), ((64, 1000, 33), 700), ((1, 1, 1), 3)]),
    "gather": ("torch.gather(x, 1, i)", "x, i", _gather, [((6, 11), 5), ((512, 1000), 333), ((1, 3), 7)]),
    "index_adjacent": ("x[:, i, j]", "x, i, j", _index2, [((3, 6, 5, 4), 3), ((16, 300, 200, 9), 1000),
                                                          ((1, 2, 2, 1), 1)]),
    "take": ("torch.take(x, i)", "x, i", _take, [((6, 5), (3, 4)), ((300, 301), (1000, 17)), ((1,), (2,))]),
    "flip": ("x.flip(0, 2)", "x", _plain, [(3, 4, 5), (64, 129, 300), (1, 1, 1)]),
    "roll": ("torch.roll(x, (2, -1), (1, 2))", "x", _plain, [(3, 4, 5), (64, 129, 300), (1, 2, 2)]),
    "roll_flat": ("torch.roll(x, 7)", "x", _plain, [(3, 4, 5), (64, 129, 300), (2, 1, 3)]),
    "repeat": ("x.repeat(2, 1, 3)", "x", _plain, [(4, 5), (300, 257), (1, 1)]),
    "pad_constant": ("F.pad(x, (1, 2, 3, 0), value=0.5)", "x", _plain, [(2, 3, 4, 5), (8, 32, 100, 101),
                                                                        (1, 1, 1, 1)]),
    "pad_reflect": ("F.pad(x, (1, 2, 3, 0), mode='reflect')", "x", _plain, [(2, 3, 4, 5), (8, 32, 100, 101),
                                                                            (1, 1, 4, 3)]),
    "pad_replicate": ("F.pad(x, (3, 2), mode='replicate')", "x", _plain, [(2, 3, 5), (16, 64, 1001), (1, 1, 1)]),
    "pad_circular": ("F.pad(x, (1, 2), mode='circular')", "x", _plain, [(2, 3, 5), (16, 64, 1001), (1, 1, 2)]),
    "one_hot": ("F.one_hot(x, {C})", "x", _one_hot, [((3, 5), 7), ((64, 513), 100), ((1,), 1)]),
    "pixel_shuffle": ("F.pixel_shuffle(x, 2)", "x", _plain, [(2, 8, 3, 5), (4, 64, 56, 57), (1, 4, 1, 1)]),
    "pixel_unshuffle": ("F.pixel_unshuffle(x, 2)", "x", _plain, [(2, 2, 4, 6), (4, 16, 112, 114),
                                                                 (1, 1, 2, 2)]),
    "upsample_nearest_x2": ("F.interpolate(x, scale_factor=2, mode='nearest')", "x", _plain,
                            [(2, 3, 4, 5), (4, 64, 56, 57), (1, 1, 1, 1)]),
    "upsample_nearest_size": ("F.interpolate(x, size=(7, 9), mode='nearest')", "x", _plain,
                              [(2, 3, 4, 5), (8, 64, 5, 6), (1, 1, 3, 3)]),
    "upsample_bilinear_x2": ("F.interpolate(x, scale_factor=2, mode='bilinear')", "x", _plain,
                             [(2, 3, 5, 6), (4, 64, 56, 57), (1, 1, 1, 1)]),
    "upsample_bilinear_size_corners": ("F.interpolate(x, size=(7, 9), mode='bilinear', align_corners=True)", "x",
                                       _plain, [(2, 3, 4, 5), (8, 32, 17, 19), (1, 1, 3, 3)]),
    "upsample_nearest_1d": ("F.interpolate(x, scale_factor=3, mode='nearest')", "x", _plain,
                            [(2, 3, 7), (8, 64, 4001), (1, 1, 1)]),
    "upsample_nearest_exact_3d": ("F.interpolate(x, scale_factor=2, mode='nearest-exact')", "x", _plain,
                                  [(2, 3, 4, 5, 6), (2, 32, 16, 33, 31), (1, 1, 1, 1, 1)]),
    "upsample_linear_1d": ("F.interpolate(x, scale_factor=2, mode='linear')", "x", _plain,
                           [(2, 3, 7), (8, 64, 4001), (1, 1, 1)]),
    "upsample_trilinear_corners": ("F.interpolate(x, size=(5, 9, 7), mode='trilinear', align_corners=True)", "x",
                                   _plain, [(2, 3, 4, 5, 6), (2, 32, 16, 33, 31), (1, 1, 1, 1, 1)]),
    "upsample_bicubic_x2": ("F.interpolate(x, scale_factor=2, mode='bicubic')", "x", _plain,
                            [(2, 3, 5, 6), (4, 64, 56, 57), (1, 1, 1, 1)]),
    "grid_sample_bilinear_border": ("F.grid_sample(x, g, padding_mode='border', align_corners=False)", "x, g",
                                    _grid, [((2, 3, 5, 7), (4, 6)), ((8, 64, 56, 57), (32, 33)),
                                            ((1, 1, 1, 1), (1, 1))]),
    "grid_sample_nearest_zeros": ("F.grid_sample(x, g, mode='nearest', align_corners=True)", "x, g", _grid,
                                  [((2, 3, 5, 7), (4, 6)), ((4, 32, 100, 101), (64, 65)), ((1, 2, 3, 1), (2, 2))]),
    "channel_shuffle": ("F.channel_shuffle(x, 4)", "x", _plain, [(2, 12, 5, 3), (32, 232, 28, 28), (1, 4, 1, 1)]),
    "unfold_3x3_pad": ("F.unfold(x, 3, padding=1)", "x", _plain, [(2, 3, 6, 7), (8, 64, 56, 57), (1, 1, 1, 1)]),
    "unfold_strided_dilated": ("F.unfold(x, (2, 3), dilation=(2, 1), padding=(1, 0), stride=(2, 3))", "x", _plain,
                               [(2, 3, 9, 11), (4, 32, 100, 101), (1, 1, 3, 3)]),
    "fold_3x3_pad": ("F.fold(x, (56, 57), 3, padding=1)", "x", _plain, [(2, 27, 3192), (8, 576, 3192),
                                                                        (1, 9, 3192)]),
    "diff_order2": ("torch.diff(x, n=2, dim=1)", "x", _plain, [(4, 9, 5), (64, 1001, 65), (1, 3, 1)]),
    "cross_relu": ("torch.relu(torch.cross(x, torch.sin(x), dim=1))", "x", _plain, [(4, 3, 5), (4096, 3, 257),
                                                                                 (1, 3, 1)]),
    "repeat_interleave": ("x.repeat_interleave(3, dim=1)", "x", _plain, [(2, 3, 4), (64, 100, 257), (1, 1, 1)]),
    "diagonal": ("torch.diagonal(x, 1, 0, 1) * 2", "x", _plain, [(5, 6), (1000, 1001), (2, 2)]),
    "diag_embed": ("torch.diag_embed(x, 1)", "x", _plain, [(3, 4), (64, 129), (1, 1)]),
}
CORE = {"embedding", "index_select", "gather", "flip", "pad_constant"}
CASES = [c for c in gpu_cases({name: v[3] for name, v in VARIANTS.items()}, CORE) if c[0] != "one_hot"]
CASES += [("one_hot", shape, "int64") for shape in VARIANTS["one_hot"][3]]
IDS = [f"{n}-{VARIANTS[n][3].index(s)}-{d}" for n, s, d in CASES]


@pytest.mark.parametrize("name,shape,dtype", CASES, ids=IDS)
def test_gather_kernel_matches_reference(name, shape, dtype):
    expr, args, build, _ = VARIANTS[name]
    inputs, ranges = build(shape, DT.get(dtype, ""))
    if name == "one_hot":
        expr = expr.format(C=shape[1])
    spec = snippet_spec(forward(expr, args), f"[{inputs}]", "gather")
    result = run_check(spec, make_inputs(int_ranges=ranges), CHECK)
    assert result.ok, result.message


SEARCH = [("torch.bucketize(x, b)", (5, 7), 3, "float32"), ("torch.bucketize(x, b)", (4096, 1001), 1023, "float32"),
          ("torch.bucketize(x, b, right=True)", (4096, 1001), 1023, "bfloat16"),
          ("torch.searchsorted(b, x, side='right')", (64, 100003), 255, "float16"),
          ("torch.searchsorted(b, x)", (2,), 1, "float32")]


@pytest.mark.parametrize("expr,shape,n_bounds,dtype", SEARCH, ids=[f"{i}-{c[3]}" for i, c in enumerate(SEARCH)])
def test_search_matches_reference(expr, shape, n_bounds, dtype):
    """bucketize / searchsorted (gather_search.py, under MEMORY_TUNING["gather_occupancy"]) over fresh sorted
    boundaries (repeats at 16-bit widths), values past both ends included."""
    dt = DT.get(dtype, "")
    spec = snippet_spec(forward(expr, "x, b"), f"[torch.randn({shape_str(shape)}){dt}, torch.randn({n_bounds}){dt}]",
                        "gather")
    result = run_check(spec, make_inputs(ascending=("b",)), CHECK)
    assert result.ok, result.message


STRIDED = [("embedding_add_relu", (5000, 768, (8, 127)), "float16"), ("gather", ((512, 1000), 333), "float32"),
           ("pad_reflect", (8, 32, 100, 101), "bfloat16"), ("index_adjacent", ((16, 300, 200, 9), 1000), "float16")]


@pytest.mark.parametrize("name,shape,dtype", STRIDED, ids=[s[0] for s in STRIDED])
def test_gather_kernel_strided_inputs(name, shape, dtype):
    """Sources and index tensors as non-contiguous views (dims stored in reverse order)."""
    expr, args, build, _ = VARIANTS[name]
    inputs, ranges = build(shape, DT[dtype])
    spec = snippet_spec(forward(expr, args), f"[{inputs}]", "gather")
    result = run_check(spec, make_inputs(int_ranges=ranges, strided=True), CHECK)
    assert result.ok, result.message


PAD_WORDS = [("F.pad(x, (1, 1, 1, 1))", (64, 128, 112, 112)), ("F.pad(x, (1, 1, 1, 1))", (3, 5, 7, 10)),
             ("F.pad(x, (2, 0, 3, 1))", (4, 33, 50)), ("F.pad(x, (3, 5))", (17, 1000))]


@pytest.mark.parametrize("expr,shape", PAD_WORDS, ids=[f"{e[8:-1]}-{'x'.join(map(str, s))}" for e, s in PAD_WORDS])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("flat", [False, True], ids=["rows", "flat"])
def test_pad_as_word_copies(expr, shape, dtype, flat, monkeypatch):
    """Zero padding as shifted 32-bit word copies (MEMORY_TUNING["pad_words"], the default; forced on here), as
    row tiles or as one flat run of output words (MEMORY_TUNING["pad_words_flat"])."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "pad_words", True)
    monkeypatch.setitem(MEMORY_TUNING, "pad_words_flat", flat)
    spec = snippet_spec(forward(expr), f"[torch.randn({shape_str(shape)}){DT.get(dtype, '')}]", "gather")
    result = run_check(spec, make_inputs(), CHECK)
    assert result.ok, result.message


EMBED_WORDS = [(37, 64, (3, 7)), (32000, 1024, (4, 513)), (50, 6, (11,)), (8, 4096, (300,))]


@pytest.mark.parametrize("shape", EMBED_WORDS, ids=lambda s: f"{s[0]}x{s[1]}-{'x'.join(map(str, s[2]))}")
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("words", [True, False], ids=["words", "elements"])
def test_embedding_as_word_copies(shape, dtype, words, monkeypatch):
    """Embedding rows copied as 64/32-bit words (MEMORY_TUNING["embedding_words"], the default) and, switched off,
    as element tiles."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "embedding_words", words)
    inputs, ranges = _embedding(shape, DT.get(dtype, ""))
    spec = snippet_spec(forward("F.embedding(i, w)", "w, i"), f"[{inputs}]", "gather")
    result = run_check(spec, make_inputs(int_ranges=ranges), CHECK)
    assert result.ok, result.message


UPSCALE = [("F.interpolate(x, scale_factor=2)", (32, 128, 128, 128)), ("F.interpolate(x, scale_factor=2)", (3, 5, 7, 9)),
           ("F.interpolate(x, scale_factor=(2, 4))", (2, 16, 33, 65)),
           ("F.interpolate(x, scale_factor=2, mode='bilinear')", (32, 128, 128, 128)),
           ("F.interpolate(x, scale_factor=2, mode='bilinear')", (3, 5, 7, 9)),
           ("F.interpolate(x, scale_factor=2, mode='bilinear')", (2, 16, 1, 257))]


@pytest.mark.parametrize("expr,shape", UPSCALE, ids=[f"{'bilinear' if 'bil' in e else 'nearest'}-{'x'.join(map(str, s))}"
                                                     for e, s in UPSCALE])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_upscale_at_input_resolution(expr, shape, dtype, monkeypatch):
    """Whole-number upscaling at input resolution (MEMORY_TUNING["upscale_whole"], forced on here)."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "upscale_whole", True)
    spec = snippet_spec(forward(expr), f"[torch.randn({shape_str(shape)}){DT.get(dtype, '')}]", "gather")
    result = run_check(spec, make_inputs(), CHECK)
    assert result.ok, result.message
