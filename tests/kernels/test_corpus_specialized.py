"""Every corpus kernel, every family, compiled for sm_90 the way cuTile's JIT specializes a launch on the device
(aot.compile_cubin(..., specialize=True): alignment and divisibility of each array from its traced shape and
strides, which takes the TMA paths). The unspecialized compiles of the family tests take the generic pointer
paths, so a failure that only the JIT would meet shows up here, on the CPU. Launches whose code (modulo the spec
id) and argument types repeat are compiled once."""

from __future__ import annotations

import pytest

from .helpers_indexed import CORPUS, model_id

_DONE: set = set()


@pytest.mark.parametrize("path", CORPUS, ids=model_id)
def test_corpus_kernels_compile_specialized(path, analyses):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import compile_cubin, trace_launches

    dec = analyses(path)[1]
    for spec in dec.kernels:
        source = generate_kernel(spec)
        if source.skeleton:
            continue  # the family corpus tests fail on skeletons; nothing to compile here
        generic = source.code.replace(spec.id, "KERNEL")
        for rec in trace_launches(source, spec):
            key = (generic, rec.kernel_name.replace(spec.id, "KERNEL"), tuple(rec.arg_summary))
            if key in _DONE:
                continue
            assert len(compile_cubin(rec, "sm_90", specialize=True)) > 0, f"{spec.id}: empty cubin"
            _DONE.add(key)
