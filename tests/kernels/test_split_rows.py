"""Long layer / rms norm rows and group norm groups split over cooperating blocks that read once (norm_split.py,
TUNING["norm_split_elems"]; groups only with ["norm_split_groups"]): compiled for sm_90 without spills, and run
in the emulator with blocks as concurrent threads started in block order, so each block really waits for its
row's segments that start after it. With fewer block slots than segments per row the same kernel deadlocks,
which the emulator reports: the ticket order makes S resident blocks sufficient, not fewer."""

from __future__ import annotations

import pytest

from . import cutile_emulator as emu
from .cutile_emulator import check_emulated
from .helpers import compile_spec
from .helpers_gemm import module_model, snippet_spec


@pytest.fixture(autouse=True)
def _split_rows_not_flat(monkeypatch):
    """Ragged softmax splits here stay split rows (the flat form takes them by default: test_softmax_flat.py)."""
    from tilestudio.core.kernels.rowwise import TUNING

    monkeypatch.setitem(TUNING, "softmax_flat", False)


CASES = {  # name: (init, forward, input shape, elements per block, (segments, chunks per segment))
    # 10 chunks of 2048 (the last one ragged) in 5 segments: the status reads clamp 8 lanes onto 5 segments
    "layer_norm_prologue_ragged": ("self.n = nn.LayerNorm(20000)", "self.n(x * 2.0 + 1.0)", "3, 20000", 4096,
                                   (5, 2)),
    "rms_norm_weight": ("self.w = nn.Parameter(torch.randn(16384))", "F.rms_norm(x, (16384,), self.w)", "4, 16384",
                        8192, (2, 4)),
    "layer_norm_bf16_3_segments": ("self.n = nn.LayerNorm(24576).to(torch.bfloat16)", "self.n(x)",
                                   "2, 24576", 8192, (3, 4)),
    # group norm as channel rows ((1, 8, 512) tiles: 8 x 3136 in 7 ragged chunks; 8 x 4096 in 8) and as flat
    # rows (1024 channels of 4 x 4 per group: rows of 16384)
    "group_norm_silu_channel_rows": ("self.g = nn.GroupNorm(4, 32)", "F.silu(self.g(x))", "2, 32, 56, 56", 4096,
                                     (7, 1)),
    "group_norm_channel_rows": ("self.g = nn.GroupNorm(2, 16)", "self.g(x)", "1, 16, 64, 64", 8192, (4, 2)),
    "group_norm_flat_rows": ("self.g = nn.GroupNorm(2, 2048)", "self.g(x)", "2, 2048, 4, 4", 8192, (2, 2)),
    "instance_norm_affine": ("self.i = nn.InstanceNorm2d(3, affine=True)", "self.i(x)", "2, 3, 100, 100", 4096,
                             (3, 1)),
}


def _spec(name):
    init, forward, shape, *_ = CASES[name]
    dtype = ".to(torch.bfloat16)" if "bf16" in name else ""
    return snippet_spec(module_model(init, forward, "x"), f"[torch.randn({shape}){dtype}]", "norm")


@pytest.mark.parametrize("name", sorted(CASES))
def test_split_rows_compile_and_match_with_concurrent_blocks(name, monkeypatch):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import compile_cubin, kernel_resources, trace_launches
    from tilestudio.core.kernels.rowwise import TUNING

    from tilestudio.core.kernels import norm, rowwise

    *_, elems, (segments, cps) = CASES[name]
    monkeypatch.setitem(TUNING, "norm_split_elems", elems)
    monkeypatch.setitem(TUNING, "norm_split_groups", True)
    monkeypatch.setattr(norm, "NUM_SM", 1)  # (the channel-row group layout wants a grid of NUM_SM groups)
    monkeypatch.setattr(rowwise, "NUM_SM", 1)
    spec = _spec(name)
    source = generate_kernel(spec)
    assert f"read once: {segments} blocks per row of {cps} chunks" in source.notes[0], source.notes
    assert ("tile (1, 8, 512)" in source.notes[0]) == name.endswith("channel_rows"), source.notes
    (record,) = trace_launches(source, spec)
    assert kernel_resources(compile_cubin(record, "sm_90", specialize=True))["frame"] == 0
    monkeypatch.setattr(emu, "CONCURRENT_BLOCKS", segments + 1)
    result = check_emulated(spec, source)
    assert result.ok, result.message


def test_fewer_block_slots_than_segments_deadlock(monkeypatch):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.rowwise import TUNING

    monkeypatch.setitem(TUNING, "norm_split_elems", 4096)
    spec = _spec("layer_norm_prologue_ragged")
    source = generate_kernel(spec)
    monkeypatch.setattr(emu, "CONCURRENT_BLOCKS", 4)  # < 5 segments per row: every running block waits
    monkeypatch.setattr(emu, "DEADLOCK_S", 2.0)
    with pytest.raises(RuntimeError, match="deadlocked"):
        check_emulated(spec, source)


def test_split_rows_only_where_they_apply(monkeypatch):
    """Rows that fit one tile keep the one-pass form, a prologue whose values and an epilogue
    (SameShapeGen.resident_ok: the epilogue could read the prologue's values) keeps the two passes, and group
    norm groups split only with norm_split_groups; by default rows split in 16384s."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.rowwise import TUNING

    assert "read once" not in generate_kernel(_spec("rms_norm_weight")).notes[0]
    long_rows = snippet_spec(module_model("self.n = nn.LayerNorm(65536)", "self.n(x)", "x"),
                             "[torch.randn(4, 65536)]", "norm")
    assert "read once: 4 blocks per row" in generate_kernel(long_rows).notes[0]
    groups = snippet_spec(module_model("self.g = nn.GroupNorm(2, 16)", "self.g(x)", "x"),
                          "[torch.randn(1, 16, 128, 128)]", "norm")
    assert "read once" not in generate_kernel(groups).notes[0]
    monkeypatch.setitem(TUNING, "norm_split_groups", True)
    assert "read once" in generate_kernel(groups).notes[0]
    monkeypatch.setitem(TUNING, "norm_split_elems", 8192)
    short = snippet_spec(module_model("self.n = nn.LayerNorm(4096)", "self.n(x)", "x"), "[torch.randn(8, 4096)]",
                         "norm")
    assert "read once" not in generate_kernel(short).notes[0]
    both = snippet_spec(module_model("self.n = nn.LayerNorm(20000)", "torch.relu(self.n(x * 2.0))", "x"),
                        "[torch.randn(3, 20000)]", "norm")
    assert "read once" not in generate_kernel(both).notes[0]


def test_split_plan_limits(monkeypatch):
    """Rows whose chunk count has no divisor near elems / chunk (segments of half the target or less) and rows
    needing more than split_max_segments co-resident blocks stay two-pass; softmax splits by default."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.rowwise import TUNING

    def notes(forward, shape):
        spec = snippet_spec(module_model("", forward, "x"), f"[torch.randn({shape})]", "softmax")
        return generate_kernel(spec).notes[0]

    assert "read once: 8 blocks per row of 4 chunks" in notes("torch.softmax(x, -1)", "4, 131072")
    # 13 chunks of 4096: no divisor near 4 chunks, so split evenly with a short last segment (softmax_split_ragged)
    assert "read once: 4 blocks per row of 4 chunks" in notes("torch.softmax(x, -1)", "4, 50257")
    monkeypatch.setitem(TUNING, "softmax_split_ragged", False)
    assert "read once" not in notes("torch.softmax(x, -1)", "4, 50257")  # segments of one 4096 chunk: refused
    monkeypatch.setitem(TUNING, "softmax_split_ragged", True)
    monkeypatch.setitem(TUNING, "split_max_segments", 4)
    assert "read once" not in notes("torch.softmax(x, -1)", "4, 131072")
    monkeypatch.setitem(TUNING, "split_max_segments", 8)
    assert "read once: 8 blocks" in notes("torch.softmax(x, -1)", "4, 131072")


SOFTMAX_CASES = {  # name: (init, forward, input shape, elements per block, (segments, chunks per segment))
    # 10 chunks of 4096 (the last ragged) in 5 segments of 2, a prologue held in registers
    "scaled_softmax_ragged": ("", "torch.softmax(x * 0.125, -1)", "3, 40000", 8192, (5, 2)),
    "log_softmax_bf16": ("", "torch.log_softmax(x, -1)", "2, 65536", 16384, (4, 4)),
    # whole segments of -inf (every column from 10000 on is masked: three of the five segments hold only -inf)
    "safe_softmax_masked_segments": ("self.register_buffer('m', torch.arange(40000) >= 10000)",
                                     "torch.ops.aten._safe_softmax(x.masked_fill(self.m, float('-inf')), -1)",
                                     "2, 40000", 8192, (5, 2)),
}


@pytest.mark.parametrize("name", sorted(SOFTMAX_CASES))
def test_split_softmax_rows(name, monkeypatch):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import compile_cubin, kernel_resources, trace_launches
    from tilestudio.core.kernels.rowwise import TUNING

    init, forward, shape, elems, (segments, cps) = SOFTMAX_CASES[name]
    monkeypatch.setitem(TUNING, "softmax_split_elems", elems)
    dtype = ".to(torch.bfloat16)" if "bf16" in name else ""
    spec = snippet_spec(module_model(init, forward, "x"), f"[torch.randn({shape}){dtype}]", "softmax")
    source = generate_kernel(spec)
    assert f"read once: {segments} blocks per row of {cps} chunks" in source.notes[0], source.notes
    (record,) = trace_launches(source, spec)
    assert kernel_resources(compile_cubin(record, "sm_90", specialize=True))["frame"] == 0
    monkeypatch.setattr(emu, "CONCURRENT_BLOCKS", segments + 2)
    result = check_emulated(spec, source)
    assert result.ok, result.message


RAGGED = {  # name: (forward, input, (segments, chunks per segment)) at softmax_split_elems 16384, chunks of 4096
    # 13 chunks in 4 segments of 4: the last segment's 3 slots past the row (masked by the ragged columns)
    "vocab_50257": ("torch.softmax(x, -1)", "torch.randn(3, 50257)", (4, 4)),
    # 13 whole chunks (no ragged columns): the slots past the row masked explicitly
    "exact_53248_log": ("torch.log_softmax(x * 0.5, -1)", "torch.randn(2, 53248)", (4, 4)),
    "vocab_151936_bf16": ("torch.softmax(x, -1)", "torch.randn(2, 151936).to(torch.bfloat16)", (10, 4)),
}


@pytest.mark.parametrize("skip_repeats", [False, True], ids=["repeat_stores", "skip_repeats"])
@pytest.mark.parametrize("name", sorted(RAGGED))
def test_split_softmax_ragged_segments(name, skip_repeats, monkeypatch):
    """TUNING["softmax_split_ragged"] (the default): rows whose chunk count has no divisor near the target split
    into equal segments and a short last one; compiled for sm_90 without spills, matched in the emulator with
    waiting blocks; off, the same rows stay two-pass. With TUNING["split_skip_repeats"] (off: slower on the
    H200) the short segment's slots past the row skip their stores behind a branch."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import compile_cubin, kernel_resources, trace_launches
    from tilestudio.core.kernels.rowwise import TUNING

    forward, inputs, (segments, cps) = RAGGED[name]
    spec = snippet_spec(module_model("", forward, "x"), f"[{inputs}]", "softmax")
    monkeypatch.setitem(TUNING, "split_skip_repeats", skip_repeats)
    monkeypatch.setitem(TUNING, "softmax_split_ragged", False)
    assert "read once" not in generate_kernel(spec).notes[0]
    monkeypatch.setitem(TUNING, "softmax_split_ragged", True)
    source = generate_kernel(spec)
    assert f"read once: {segments} blocks per row of {cps} chunks" in source.notes[0], source.notes
    n = int(inputs.split(", ")[-1].split(")")[0])
    chunks = -(-n // 4096)
    branches = [f"if in{i}:" in source.code for i in range(cps)]
    assert branches == [skip_repeats and (segments - 1) * cps + i >= chunks for i in range(cps)], branches
    (record,) = trace_launches(source, spec)
    assert kernel_resources(compile_cubin(record, "sm_90", specialize=True))["frame"] == 0
    result = check_emulated(spec, source)
    assert result.ok, result.message


NORM_RAGGED = {  # name: (init, forward, input, elements per block, (segments, chunks per segment))
    # group norm groups of 8 x 3136 as channel rows: 7 chunks of (8, 512) in 2 segments of 4, the last short
    "group_norm_silu_channel_rows": ("self.g = nn.GroupNorm(4, 32)", "F.silu(self.g(x))",
                                     "torch.randn(2, 32, 56, 56)", 16384, (2, 4)),
    # 10 chunks of 2048 in 3 segments of 4 (the last: 2 chunks and 2 repeats), bf16
    "layer_norm_bf16": ("self.n = nn.LayerNorm(20000).to(torch.bfloat16)", "self.n(x)",
                        "torch.randn(3, 20000).to(torch.bfloat16)", 8192, (3, 4)),
}


@pytest.mark.parametrize("name", sorted(NORM_RAGGED))
def test_split_norm_ragged_segments(name, monkeypatch):
    """TUNING["norm_split_ragged"]: a short last segment folds only its own chunks into the statistics (its
    repeats of the row's last chunk are skipped); compiled for sm_90 and matched in the emulator."""
    from tilestudio.core.kernels import norm, rowwise
    from tilestudio.core.kernels.rowwise import TUNING

    init, forward, inputs, elems, (segments, cps) = NORM_RAGGED[name]
    monkeypatch.setattr(norm, "NUM_SM", 1)  # (the channel-row group layout wants a grid of NUM_SM groups)
    monkeypatch.setattr(rowwise, "NUM_SM", 1)
    for key, value in (("norm_split_elems", elems), ("norm_split_groups", True), ("norm_split_ragged", True)):
        monkeypatch.setitem(TUNING, key, value)
    spec = snippet_spec(module_model(init, forward, "x"), f"[{inputs}]", "norm")
    source = compile_spec(spec, ("sm_90",))
    assert f"read once: {segments} blocks per row of {cps} chunks" in source.notes[0], source.notes
    result = check_emulated(spec, source)
    assert result.ok, result.message


@pytest.mark.parametrize("family,init,forward,inputs", [
    ("norm", "self.n = nn.LayerNorm(65536)", "self.n(x)", "torch.randn(3, 65536)"),
    ("softmax", "", "torch.log_softmax(x * 0.5, -1)", "torch.randn(2, 131072).to(torch.bfloat16)"),
])
def test_split_rows_with_plain_chunk_loads(family, init, forward, inputs, monkeypatch):
    """TUNING["split_chunk_tma"] = False: a split row's chunk loads take allow_tma=False (the 16384-float layer norm
    segment then compiles for sm_90 without the TMA form's spill frame) and still match the reference with
    waiting blocks; the default leaves the compiler's choice."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import compile_cubin, kernel_resources, trace_launches
    from tilestudio.core.kernels.rowwise import TUNING

    def loads(code: str) -> list[str]:
        return [line for line in code.splitlines() if "ct.load(v_x" in line]

    spec = snippet_spec(module_model(init, forward, "x"), f"[{inputs}]", family)
    assert not any("allow_tma" in line for line in loads(generate_kernel(spec).code))
    monkeypatch.setitem(TUNING, "split_chunk_tma", False)
    source = generate_kernel(spec)
    plain = loads(source.code)
    assert "read once" in source.notes[0] and plain and all("allow_tma=False" in ln for ln in plain), plain
    (record,) = trace_launches(source, spec)
    assert kernel_resources(compile_cubin(record, "sm_90", specialize=True))["frame"] == 0
    result = check_emulated(spec, source)
    assert result.ok, result.message


LANE_CASES = {  # name: (family, init, forward, input, TUNING overrides, per-chunk merge kept)
    "layer_norm_65536": ("norm", "self.n = nn.LayerNorm(65536)", "self.n(x + 1.0)", "torch.randn(3, 65536)",
                         {}, False),
    "rms_norm_weight": ("norm", "self.w = nn.Parameter(torch.randn(16384))", "F.rms_norm(x, (16384,), self.w)",
                        "torch.randn(4, 16384)", {"norm_split_elems": 8192}, False),
    # 13 whole chunks of 2048 in 4 segments of 4: the last segment's 3 slots past the row leave its count short
    "layer_norm_ragged_slots_bf16": ("norm", "self.n = nn.LayerNorm(26624).to(torch.bfloat16)", "self.n(x + 3.0)",
                                     "torch.randn(2, 26624).to(torch.bfloat16)",
                                     {"norm_split_elems": 8192, "norm_split_ragged": True}, False),
    "group_norm_channel_rows": ("norm", "self.g = nn.GroupNorm(2, 16)", "self.g(x)", "torch.randn(1, 16, 64, 64)",
                                {"norm_split_elems": 8192, "norm_split_groups": True}, False),
    # ragged columns (20000 = 9 chunks + 1568): the mask keeps the per-chunk merge
    "layer_norm_masked_columns": ("norm", "self.n = nn.LayerNorm(20000)", "self.n(x)", "torch.randn(3, 20000)",
                                  {"norm_split_elems": 4096}, True),
    "softmax_vocab_50257": ("softmax", "", "torch.softmax(x * 3.0, -1)", "torch.randn(3, 50257)", {}, False),
    "log_softmax_53248_bf16": ("softmax", "", "torch.log_softmax(x, -1)",
                               "torch.randn(2, 53248).to(torch.bfloat16)", {}, False),
    "safe_softmax_masked_segments": ("softmax", "self.register_buffer('m', torch.arange(40000) >= 10000)",
                                     "torch.ops.aten._safe_softmax(x.masked_fill(self.m, float('-inf')), -1)",
                                     "torch.randn(2, 40000)", {"softmax_split_elems": 8192}, False),
}


@pytest.mark.parametrize("name", sorted(LANE_CASES))
def test_split_rows_with_lane_stats(name, monkeypatch):
    """TUNING["split_lane_stats"]: a split row's segment folds its chunks lane-wise and reduces once per statistic
    (softmax: one max and one sum; norms: the sum, then the squared deviations from the segment's mean, or one sum
    of squares), a short last segment counting only its own chunks; norm rows with masked columns keep the
    per-chunk merge. Compiled for sm_90 without new spills and matched in the emulator with waiting blocks."""
    from tilestudio.core.kernels import generate_kernel, norm, rowwise
    from tilestudio.core.kernels.aot import compile_cubin, kernel_resources, trace_launches
    from tilestudio.core.kernels.rowwise import TUNING

    family, init, forward, inputs, overrides, per_chunk = LANE_CASES[name]
    monkeypatch.setattr(norm, "NUM_SM", 1)  # (the channel-row group layout wants a grid of NUM_SM groups)
    monkeypatch.setattr(rowwise, "NUM_SM", 1)
    for key, value in overrides.items():
        monkeypatch.setitem(TUNING, key, value)
    spec = snippet_spec(module_model(init, forward, "x"), f"[{inputs}]", family)
    before = generate_kernel(spec).code
    monkeypatch.setitem(TUNING, "split_lane_stats", True)
    source = generate_kernel(spec)
    assert "read once" in source.notes[0], source.notes
    code = source.code
    stats = code[:code.index("ct.atomic_xchg")]  # the segment's statistics, before publishing
    reductions = stats.count("ct.sum(") + stats.count("ct.max(")
    if per_chunk:
        assert code == before and "cmean" in code
    else:
        assert code != before and reductions == (1 if "rms" in name else 2), stats
        assert "res1 * res1" in stats if "rms" in name else "acc = acc + res1" in stats or "ml = ct.maximum" in stats
    (record,) = trace_launches(source, spec)
    frame = kernel_resources(compile_cubin(record, "sm_90", specialize=True))["frame"]
    assert frame == (112 if name == "layer_norm_65536" else 0)  # (65536: the TMA form's frame, as without lanes)
    segments = int(source.notes[0].split("read once: ")[1].split(" blocks")[0])
    monkeypatch.setattr(emu, "CONCURRENT_BLOCKS", segments + 2)
    result = check_emulated(spec, source)
    assert result.ok, result.message
