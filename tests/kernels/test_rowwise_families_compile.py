"""Row-wise families (reduction, softmax, norm, scan) on the CPU: every corpus spec and every variant snippet
generates, traces on meta tensors and compiles ahead of time for sm_90 and sm_100, and matches the float64
PyTorch reference in the cuTile CPU emulator. The long variants (last shape) take the chunked / split /
segmented paths and compile for LONG_ARCHES only."""

from __future__ import annotations

import functools

import pytest

from corpus import corpus_files

from .cutile_emulator import check_emulated
from .helpers import compile_spec
from .helpers_rowwise import (ALL_CASES, LONG_ARCHES, ROWWISE_FAMILIES, combined_specs, family_specs, input_maker,
                              long_cases)

ARCHES = ("sm_90", "sm_100")
MODELS = [p for p in corpus_files() if not p.name.startswith("big_")]

CORPUS_RUNS = [(family, path) for family in ROWWISE_FAMILIES for path in MODELS]
VARIANT_RUNS = [(family, case) for family in ROWWISE_FAMILIES for case in ALL_CASES[family]]
LONG_RUNS = [(family, case) for family in ROWWISE_FAMILIES for case in long_cases(family)]


@functools.lru_cache(maxsize=None)
def variant_specs(family: str, long: bool = False):
    """All of a family's cases combined into one model, decomposed once (per worker)."""
    if long:  # the last shape of each case: chunked / split / segmented paths
        return combined_specs(long_cases(family), (family,), shape_index=3)
    return combined_specs(ALL_CASES[family], (family,))


@pytest.mark.parametrize("family,path", CORPUS_RUNS, ids=[f"{f}-{p.stem}" for f, p in CORPUS_RUNS])
def test_corpus_specs(family, path, analyses):
    _, decomposition = analyses(path)
    for spec in family_specs(decomposition, (family,)):
        source = compile_spec(spec, ARCHES)
        result = check_emulated(spec, source)
        assert result.ok, f"{path.name} {spec.id}: {result.message}"


@pytest.mark.parametrize("family,case", VARIANT_RUNS, ids=[f"{f}-{c.name}" for f, c in VARIANT_RUNS])
def test_variant(family, case):
    specs = variant_specs(family)[case.name]
    assert specs, f"{case.name}: the snippet produced no {family} spec"
    for spec in specs:
        source = compile_spec(spec, ARCHES)
        result = check_emulated(spec, source, make_input=input_maker(case))
        assert result.ok, f"{case.name} {spec.id}: {result.message}"


@pytest.mark.parametrize("family,case", LONG_RUNS, ids=[f"{f}-{c.name}" for f, c in LONG_RUNS])
def test_variant_long(family, case):
    specs = variant_specs(family, long=True)[case.name]
    assert specs, f"{case.name}: the snippet produced no {family} spec"
    for spec in specs:
        source = compile_spec(spec, LONG_ARCHES)
        result = check_emulated(spec, source, make_input=input_maker(case))
        assert result.ok, f"{case.name} (long) {spec.id}: {result.message}"


@pytest.mark.parametrize("shape,exact", [((64, 1024), True), ((33, 1000), False)])
def test_unchecked_exact_loads(shape, exact, monkeypatch):
    """TUNING["unchecked_exact"] (off by default: slower on the H200): when the tiles cover the view exactly, the
    main input loads with check_bounds=False (the emulator raises if a tile leaves the array); else it keeps its
    zero padding. Both compute the reference's values."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.rowwise import TUNING

    from .helpers import decompose_source

    spec_src = "class Model(nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, -1)\n"
    (spec,) = decompose_source(spec_src, f"[torch.randn{shape}]").kernels
    assert "check_bounds" not in generate_kernel(spec).code
    monkeypatch.setitem(TUNING, "unchecked_exact", True)
    source = compile_spec(spec, ("sm_90",))
    assert ("check_bounds=False" in source.code) == exact
    assert ("padding_mode=ct.PaddingMode.ZERO" in source.code) != exact
    result = check_emulated(spec, source)
    assert result.ok, result.message


def _emulate_where(family: str, cases, marker: str, long: bool = False, **overrides) -> int:
    """Generate every variant spec of `cases` with the TUNING `overrides`; those whose code contains `marker` are
    compiled for sm_90 and must match the reference in the emulator. Returns how many did."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.rowwise import tuned

    taken = 0
    for case in cases:
        for spec in variant_specs(family, long=long)[case.name]:
            with tuned(**overrides):
                if marker not in generate_kernel(spec).code:
                    continue
                source = compile_spec(spec, ("sm_90",))
            taken += 1
            result = check_emulated(spec, source, make_input=input_maker(case))
            assert result.ok, f"{case.name} {spec.id}: {result.message}"
    return taken


@pytest.mark.parametrize("family", ["reduction", "softmax"])
def test_persistent_column_layouts(family, monkeypatch):
    """TUNING["persistent_col"]: kernels over a reduced middle dim loop over (row tile, inner window) pairs in a
    grid of NUM_SM * occupancy blocks. With one SM at occupancy 1 the variant snippets of more than one tile take
    the loop; each compiles and matches the reference in the emulator."""
    from tilestudio.core.kernels import rowwise

    monkeypatch.setattr(rowwise, "NUM_SM", 1)
    looped = _emulate_where(family, ALL_CASES[family], "for t in range(ct.bid(0),", persistent_col=True,
                            occupancy=1, occupancy_stacked=1)
    assert looped, f"no {family} variant took the persistent column loop"


def test_scan_load_latency_hint(monkeypatch):
    """MEMORY_TUNING["scan_latency"]: the chunk loops of the long (chunked / segmented) scans load with the latency
    hint; each still compiles and matches the reference in the emulator."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "scan_latency", 10)
    assert _emulate_where("scan", long_cases("scan"), "latency=10", long=True) >= 2


def test_lookback_scans_in_one_pass(monkeypatch):
    """MEMORY_TUNING["scan_lookback"]: long float cumsums (rows, a first dim of 20000 with 3 inner lanes, exclusive)
    take the one-pass decoupled look-back form (ticket-ordered chunks, 64-bit flag/value words); compiled for sm_90 and
    matched to the reference in the emulator (which runs kernels that take a ticket as concurrent threads started
    in block order; the GPU tests real concurrency)."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "scan_lookback", True)
    assert _emulate_where("scan", long_cases("scan"), "decoupled look-back", long=True) >= 3


def test_lookback_rows_read_every_earlier_total(monkeypatch):
    """MEMORY_TUNING["scan_lookback_all"]: the look-back's rows read all earlier chunk totals in one vector of
    atomic reads and wait until each is published (the middle-dim form keeps walking back); compiled for sm_90
    and matched in the emulator with concurrent blocks; rows of more chunks than scan_lookback_all_max walk."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "scan_lookback", True)
    monkeypatch.setitem(MEMORY_TUNING, "scan_lookback_all", True)
    assert _emulate_where("scan", long_cases("scan"), "every earlier chunk's published total", long=True) >= 2
    monkeypatch.setitem(MEMORY_TUNING, "scan_lookback_all_max", 1)
    assert _emulate_where("scan", long_cases("scan"), "every earlier chunk's published total", long=True) == 0


@pytest.mark.parametrize("defer", [1, 3])
def test_lookback_walks_past_chunks_with_only_their_totals(defer, monkeypatch):
    """The emulator holds back each block's running-prefix publication for `defer` later blocks, so look-backs
    meet chunks that have published only their totals (flag 1) and must add them and walk further back, as
    concurrent blocks do on a GPU; the scans still match the reference."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    from . import cutile_emulator

    monkeypatch.setitem(MEMORY_TUNING, "scan_lookback", True)
    monkeypatch.setattr(cutile_emulator, "DEFER_PREFIX_BLOCKS", defer)
    assert _emulate_where("scan", long_cases("scan"), "decoupled look-back", long=True) >= 3


@pytest.mark.parametrize("chunk_major,window", [(True, 1), (False, 4), (True, 8)])
@pytest.mark.parametrize("defer", [0, 3])
def test_lookback_chunk_major_tickets_and_window_walks(chunk_major, window, defer, monkeypatch):
    """MEMORY_TUNING["scan_lookback_chunk_major"] / ["scan_lookback_window"]: tickets taken chunk-major across scan
    lines, and walks reading several status words per round trip (rows and middle-dim lanes), with running
    prefixes held back for `defer` later blocks so the windows meet unpublished and total-only words; compiled
    for sm_90 and matched in the emulator."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    from . import cutile_emulator

    monkeypatch.setitem(MEMORY_TUNING, "scan_lookback", True)
    monkeypatch.setitem(MEMORY_TUNING, "scan_lookback_chunk_major", chunk_major)
    monkeypatch.setitem(MEMORY_TUNING, "scan_lookback_window", window)
    monkeypatch.setattr(cutile_emulator, "DEFER_PREFIX_BLOCKS", defer)
    marker = "tickets chunk-major" if chunk_major else f"reading {window} words per round trip"
    assert _emulate_where("scan", long_cases("scan"), marker, long=True) >= 3


@pytest.mark.parametrize("defer", [0, 2])
def test_fused_segment_scans(defer, monkeypatch):
    """MEMORY_TUNING["scan_fused_segments"]: segmented cumsums in one kernel (each block reduces its segment, takes
    the earlier segments' total by look-back, scans the segment), rows and middle-dim lanes, with running prefixes
    held back for `defer` later blocks; compiled for sm_90 and matched in the emulator."""
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    from . import cutile_emulator

    monkeypatch.setitem(MEMORY_TUNING, "scan_lookback_rows", False)
    monkeypatch.setitem(MEMORY_TUNING, "scan_fused_segments", 2)
    monkeypatch.setattr(cutile_emulator, "DEFER_PREFIX_BLOCKS", defer)
    assert _emulate_where("scan", long_cases("scan"), "in one kernel, each starting from", long=True) >= 2


def test_persistent_single_tile_scans(monkeypatch):
    """MEMORY_TUNING["scan_persistent"]: single-tile scans loop over their row blocks in a persistent grid (one SM
    at occupancy 1 here, so every snippet of more than one block loops); compiled and emulated."""
    from tilestudio.core.kernels import rowwise
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "scan_persistent", True)
    monkeypatch.setattr(rowwise, "NUM_SM", 1)
    assert _emulate_where("scan", ALL_CASES["scan"], "for pid in range(ct.bid(0),", occupancy=1,
                          occupancy_stacked=1)


@pytest.mark.parametrize("resident", [4096, 1 << 20])
@pytest.mark.parametrize("lanes", [False, True])
def test_norm_chunks_kept_in_registers(resident, lanes, monkeypatch):
    """TUNING["norm_resident_elems"]: the long two-pass norm variants keep their first chunks in registers from
    the statistics pass to the normalizing one (all but one chunk when the budget exceeds the row), with either
    statistics form; each compiles for sm_90 and matches the reference in the emulator. With one SM the long
    rows take the one-block-per-row two-pass form instead of row segments."""
    from tilestudio.core.kernels import norm, rowwise

    monkeypatch.setattr(norm, "NUM_SM", 1)
    monkeypatch.setattr(rowwise, "NUM_SM", 1)
    kept = _emulate_where("norm", long_cases("norm"), "kept in registers", long=True, norm_resident_elems=resident,
                          lane_norm=lanes)
    assert kept, "no long norm variant kept chunks in registers"


def test_chunks_kept_in_registers_after_a_prologue(monkeypatch):
    """A prologue whose values are neither stored nor read by the epilogue (layer_norm(2x + 1), softmax(x / 8))
    keeps its transformed chunks; compiled for sm_90 and emulated."""
    from tilestudio.core.kernels import generate_kernel, norm, rowwise
    from tilestudio.core.kernels.rowwise import tuned

    from .helpers_gemm import module_model, snippet_spec

    monkeypatch.setattr(norm, "NUM_SM", 1)
    monkeypatch.setattr(rowwise, "NUM_SM", 1)
    for family, init, forward in [("norm", "self.n = nn.LayerNorm(20000)", "self.n(x * 2.0 + 1.0)"),
                                  ("softmax", "", "torch.softmax(x * 0.125, -1)")]:
        spec = snippet_spec(module_model(init, forward, "x"), "[torch.randn(3, 20000)]", family)
        with tuned(norm_resident_elems=8192, softmax_resident_elems=8192, softmax_wide_single=None,
                   softmax_split_ragged=False):  # two passes (ragged splits would take the 20000-float rows)
            assert "kept in registers" in generate_kernel(spec).code, forward
            source = compile_spec(spec, ("sm_90",))
        result = check_emulated(spec, source)
        assert result.ok, f"{forward}: {result.message}"


def test_wide_softmax_rows_run_one_pass_on_8_worker_warps():
    """TUNING["softmax_wide_single"]: rows longer than max_single up to 32768 (padded) elements are one tile on 8
    worker warps, one block per row; the 32768-float row compiles for sm_90 without spills (a zero stack frame;
    the compiler's warp count spills), and a ragged 20000-element row with a prologue matches the reference in
    the emulator. Longer rows take a split over cooperating blocks (40000 floats: ragged segments) or, without
    it, the two passes."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import compile_cubin, kernel_resources, trace_launches
    from tilestudio.core.kernels.rowwise import tuned

    from .helpers_gemm import module_model, snippet_spec

    model = module_model("", "torch.softmax(x * 0.125, -1)", "x")
    spec = snippet_spec(model, "[torch.randn(3, 20000)]", "softmax")
    source = compile_spec(spec, ("sm_90",))
    assert "num_worker_warps=8" in source.code and "one pass" in source.code and "persistent" not in source.code
    result = check_emulated(spec, source)
    assert result.ok, result.message
    big = snippet_spec(model, "[torch.randn(4096, 32768)]", "softmax")
    frames = {}
    for warps in (8, None):
        with tuned(softmax_wide_worker_warps=warps):
            src = generate_kernel(big)
            (record,) = trace_launches(src, big)
            frames[warps] = kernel_resources(compile_cubin(record, "sm_90", specialize=True))["frame"]
    assert frames[8] == 0 and frames[None] > 0, frames
    longer_spec = snippet_spec(model, "[torch.randn(3, 40000)]", "softmax")
    assert "read once" in generate_kernel(longer_spec).code
    with tuned(softmax_split_ragged=False):
        longer = generate_kernel(longer_spec).code
    assert "two passes" in longer and "num_worker_warps" not in longer


@pytest.mark.parametrize("resident,lanes", [(4096, True), (16384, False)])
def test_softmax_chunks_kept_in_registers(resident, lanes):
    """TUNING["softmax_resident_elems"]: the long two-pass softmax variants (rows, an inner dim, a masked_fill
    prologue) keep their first chunks in registers between the max/sum pass and the normalizing one; compiled
    for sm_90 and matched to the reference in the emulator."""
    kept = _emulate_where("softmax", long_cases("softmax"), "kept in registers", long=True,
                          softmax_resident_elems=resident, lane_softmax=lanes, softmax_split_ragged=False)
    assert kept >= 2, f"{kept} long softmax variants kept chunks in registers"


@pytest.mark.parametrize("family", ["softmax", "norm", "scan"])
def test_plain_chunk_loads(family):
    """TUNING["chunk_load_tma"] = False: the chunk loops of the long (multi-chunk) variants load without TMA (no
    shared-memory staging); each compiles for sm_90 and matches the reference in the emulator."""
    plain = _emulate_where(family, long_cases(family), "allow_tma=False).astype(", long=True, chunk_load_tma=False)
    assert plain, f"no long {family} variant took plain chunk loads"


@pytest.mark.parametrize("body,inputs,occupancy,tma,tile", [
    ("return torch.softmax(x, -1)", "[torch.randn(512, 200).half()]", 3, True, (32, 256)),  # 400-byte rows: TMA
    ("return torch.softmax(x, -1)", "[torch.randn(512, 197).half()]", 6, False, (32, 256)),  # 394 bytes: plain
    ("return torch.softmax(x, -1)", "[torch.randn(512, 256).half()]", 6, False, (32, 256)),  # no masked columns
    ("return F.layer_norm(x, (768,))", "[torch.randn(96, 768).bfloat16()]", 4, True, (8, 1024)),
    ("return torch.softmax(x, -1)", "[torch.randn(2048, 50).half()]", 6, False, (32, 64)),  # 32 rows, not 128
])
def test_stacked_rows_of_masked_columns(body, inputs, occupancy, tma, tile, monkeypatch):
    """Stacked short rows whose tile is wider than the row store through TMA (no allow_tma) at their own
    occupancy when every output row is a whole number of 16-byte units (TUNING["stacked_masked_tma_occupancy"],
    ["norm_masked_tma_occupancy"]), else plainly at "occupancy_stacked"; no tile stacks more than
    TUNING["stack_max_rows"] rows. One SM, so each shape takes the persistent loop; compiled and emulated."""
    from tilestudio.core.kernels import generate_kernel, rowwise

    from .helpers import decompose_source

    monkeypatch.setattr(rowwise, "NUM_SM", 1)
    (spec,) = decompose_source(f"class Model(nn.Module):\n    def forward(self, x):\n        {body}\n", inputs).kernels
    code = generate_kernel(spec).code
    assert f"@ct.kernel(occupancy={occupancy})" in code
    stores = [line for line in code.splitlines() if "ct.store(" in line]
    assert stores and all(("allow_tma" not in line) == tma for line in stores), stores
    assert f"tile {tile}" in code, code
    result = check_emulated(spec, compile_spec(spec, ("sm_90",)))
    assert result.ok, result.message
