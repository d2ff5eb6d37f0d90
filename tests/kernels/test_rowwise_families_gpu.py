"""Row-wise families (reduction, softmax, norm, scan) on the GPU: every case of helpers_rowwise.ALL_CASES on
three shapes (small unaligned, medium, and one long enough for the chunked / split path) in float32, the medium
one also in float16 and bfloat16, checked against the float64 reference with fresh random inputs and poisoned
outputs."""

from __future__ import annotations

import functools

import pytest

from .helpers_rowwise import ALL_CASES, ROWWISE_FAMILIES, combined_specs, input_maker

pytestmark = pytest.mark.gpu


def family_runs(family: str) -> list[tuple]:
    cases = ALL_CASES[family]
    return [(family, case, i, "float32") for i in (1, 2, 3) for case in cases] \
        + [(family, case, 2, dt) for dt in ("float16", "bfloat16") for case in cases if dt in case.dtypes]


RUNS = [run for family in ROWWISE_FAMILIES for run in family_runs(family)]


@functools.lru_cache(maxsize=None)
def specs_at(family: str, shape_index: int, dtype: str):
    cases = [c for c in ALL_CASES[family] if dtype == "float32" or dtype in c.dtypes]
    return combined_specs(cases, (family,), shape_index, dtype)


@pytest.mark.parametrize("family,case,shape_index,dtype", RUNS,
                         ids=[f"{f}-{c.name}-{c.shapes[min(i, len(c.shapes) - 1)]}-{d}" for f, c, i, d in RUNS])
def test_on_gpu(family, case, shape_index, dtype):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.checking import check_kernel

    specs = specs_at(family, shape_index, dtype)[case.name]
    assert specs, f"{case.name}: no {family} spec"
    for spec in specs:
        source = generate_kernel(spec)
        assert not source.skeleton, source.notes
        result = check_kernel(spec, source, make_input=input_maker(case))
        assert result.ok, f"{case.name} {spec.id} {spec.inputs[0].shape} {dtype}: {result.message}"
