"""The one-pass decoupled look-back cumsum on the GPU (MEMORY_TUNING["scan_lookback"]: every long float cumsum;
by default since session 14 ["scan_lookback_rows"]: rows too few for a chunk loop each): long scan lines (rows,
or inner positions of a middle-dim scan) where thousands of chunk blocks run at once and really do find earlier
chunks with only their totals published,
fresh random inputs per seed, poisoned outputs, float64 references. (Its CPU test, in
test_rowwise_families_compile.py, runs blocks one after another and so only checks the arithmetic.)"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

CASES = [  # name, forward, input shape, dtype
    # elementwise tolerance 2e-3: rows of 262144 keep float32 rounding of the running sums (~500) well inside it
    ("cumsum_long_rows", "torch.cumsum(x, -1)", (64, 262144), "float32"),
    ("cumsum_unaligned", "torch.cumsum(x, 1)", (7, 300001), "float32"),
    ("cumsum_bf16_scaled", "torch.cumsum(x * 0.5, -1)", (33, 65536), "bfloat16"),
    ("exclusive_cumsum", "torch.cumsum(x, -1) - x", (16, 200000), "float32"),
    # over a middle dim: a block's inner positions are scan lines of their own, each lane walking back
    ("cumsum_inner_dim", "torch.cumsum(x, 1)", (64, 4096, 64), "bfloat16"),
    ("cumsum_dim0_unaligned", "torch.cumsum(x, 0)", (20001, 3, 5), "float32"),
]


# (name, forward, shape, dtype, mode): "reading_all" is MEMORY_TUNING["scan_lookback_all"] on the row cases, where
# each block reads every earlier chunk's total in one vector of atomic reads and waits until all are published;
# "chunk_major_window" takes tickets chunk-major across scan lines and walks back 8 status words per round trip
# at 4 blocks per SM (MEMORY_TUNING["scan_lookback_chunk_major"], ["scan_lookback_window"], ["..._occupancy"])
# "fused_segments": the segmented form in one kernel (MEMORY_TUNING["scan_fused_segments"], segments of 4 chunks
# whose prefixes come by look-back; not with a prologue, so not the scaled case)
RUNS = ([c + ("walk",) for c in CASES] + [c + ("reading_all",) for c in CASES[:4]]
        + [c + ("chunk_major_window",) for c in CASES]
        + [c + ("fused_segments",) for c in CASES if c[0] != "cumsum_bf16_scaled"])
MODES = {"walk": ({}, "decoupled look-back"),
         "reading_all": ({"scan_lookback_all": True}, "every earlier chunk's published total"),
         "chunk_major_window": ({"scan_lookback_chunk_major": True, "scan_lookback_window": 8,
                                 "scan_lookback_occupancy": 4}, "reading 8 words per round trip, tickets chunk-major"),
         "fused_segments": ({"scan_lookback": False, "scan_lookback_rows": False, "scan_fused_segments": 4,
                             "scan_fused_occupancy": 4},
                            "in one kernel, each starting from the earlier segments' total")}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name,forward,shape,dtype,mode", RUNS,
                         ids=[r[0] + ("" if r[4] == "walk" else "-" + r[4]) for r in RUNS])
def test_lookback_cumsum_on_gpu(name, forward, shape, dtype, mode, seed, monkeypatch):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.checking import check_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    from .helpers_gemm import module_model, snippet_spec

    monkeypatch.setitem(MEMORY_TUNING, "scan_lookback", True)
    knobs, marker = MODES[mode]
    for key, value in knobs.items():
        monkeypatch.setitem(MEMORY_TUNING, key, value)
    s = ", ".join(map(str, shape))
    spec = snippet_spec(module_model("", forward, "x"), f"[torch.randn({s}).to(torch.{dtype})]", "scan")
    source = generate_kernel(spec)
    assert marker in source.notes[0], source.notes[0]
    result = check_kernel(spec, source, seed=seed)
    assert result.ok, f"{name} seed {seed}: {result.message}"
