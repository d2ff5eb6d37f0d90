"""Norm family on the GPU: every variant of helpers_rowwise.NORM_CASES on three shapes (small unaligned,
medium, and one long enough for the chunked / split path) in float32, the medium one also in float16 and
bfloat16, checked against the float64 reference with fresh random inputs and poisoned outputs."""

from __future__ import annotations

import functools

import pytest

from .helpers_rowwise import NORM_CASES, combined_specs, input_maker, register_source

pytestmark = pytest.mark.gpu

FAMILY = "norm"
RUNS = [(case, 1, "float32") for case in NORM_CASES] + [(case, 2, "float32") for case in NORM_CASES] \
    + [(case, 3, "float32") for case in NORM_CASES] \
    + [(case, 2, dt) for dt in ("float16", "bfloat16") for case in NORM_CASES if dt in case.dtypes]


@functools.lru_cache(maxsize=None)
def specs_at(shape_index: int, dtype: str):
    cases = [c for c in NORM_CASES if dtype == "float32" or dtype in c.dtypes]
    return combined_specs(cases, (FAMILY,), shape_index, dtype)


@pytest.mark.parametrize("case,shape_index,dtype", RUNS,
                         ids=[f"{c.name}-{c.shapes[min(i, len(c.shapes) - 1)]}-{d}" for c, i, d in RUNS])
def test_on_gpu(case, shape_index, dtype):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.checking import check_kernel

    specs = specs_at(shape_index, dtype)[case.name]
    assert specs, f"{case.name}: no {FAMILY} spec"
    for spec in specs:
        source = generate_kernel(spec)
        assert not source.skeleton, source.notes
        register_source(spec.id, source.code)
        result = check_kernel(spec, source, make_input=input_maker(case))
        assert result.ok, f"{case.name} {spec.id} {spec.inputs[0].shape} {dtype}: {result.message}"
