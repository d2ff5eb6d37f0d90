"""Every corpus kernel of the GEMM and indexed families (attention, conv, gather, loss, matmul, pool) is generated
without a skeleton, traced and compiled ahead of time for sm_90 and sm_100. The elementwise, row-wise and recurrent
families have corpus tests of their own, which also run the kernels on the CPU emulator."""

from __future__ import annotations

import pytest

from .helpers_gemm import compile_spec_dedup
from .helpers_indexed import CORPUS, family_specs, model_id

FAMILIES = ["attention", "conv", "gather", "loss", "matmul", "pool"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("path", CORPUS, ids=model_id)
def test_corpus_specs_compile(path, family, analyses):
    specs = family_specs(analyses(path)[1], family)
    if not specs:
        pytest.skip(f"no {family} kernel in this model")
    for spec in specs:
        compile_spec_dedup(spec, ("sm_90", "sm_100"))
