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
