"""Norm family (CPU): every corpus spec and every variant snippet generates, traces on meta tensors and
compiles ahead of time for sm_90 and sm_100, and matches the float64 PyTorch reference in the cuTile CPU emulator."""

from __future__ import annotations

import functools

import pytest

from corpus import corpus_files

from .cutile_emulator import check_emulated
from .helpers_rowwise import (LONG_ARCHES, NORM_CASES, combined_specs, compile_spec, family_specs,
                              input_maker, long_cases)

ARCHES = ("sm_90", "sm_100")
FAMILY = "norm"
MODELS = [p for p in corpus_files() if not p.name.startswith("big_")]


LONG = long_cases(FAMILY)


@functools.lru_cache(maxsize=None)
def variant_specs(long: bool = False):
    if long:  # the last shape of each case: chunked / split / segmented paths
        return combined_specs(LONG, (FAMILY,), shape_index=3)
    return combined_specs(NORM_CASES, (FAMILY,))


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_corpus_specs(path, analyses):
    _, decomposition = analyses(path)
    for spec in family_specs(decomposition, (FAMILY,)):
        source = compile_spec(spec, ARCHES)
        result = check_emulated(spec, source)
        assert result.ok, f"{path.name} {spec.id}: {result.message}"


@pytest.mark.parametrize("case", NORM_CASES, ids=[c.name for c in NORM_CASES])
def test_variant(case):
    specs = variant_specs()[case.name]
    assert specs, f"{case.name}: the snippet produced no {FAMILY} spec"
    for spec in specs:
        source = compile_spec(spec, ARCHES)
        result = check_emulated(spec, source, make_input=input_maker(case))
        assert result.ok, f"{case.name} {spec.id}: {result.message}"


@pytest.mark.parametrize("case", LONG, ids=[c.name for c in LONG])
def test_variant_long(case):
    specs = variant_specs(long=True)[case.name]
    assert specs, f"{case.name}: the snippet produced no {FAMILY} spec"
    for spec in specs:
        source = compile_spec(spec, LONG_ARCHES)
        result = check_emulated(spec, source, make_input=input_maker(case))
        assert result.ok, f"{case.name} (long) {spec.id}: {result.message}"
