"""Shared helpers for kernel-library tests: specs from small model snippets, AOT compile, GPU check."""

from __future__ import annotations

import os
import tempfile
import textwrap

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"


def decompose_source(body: str, inputs: str, init: str = "[]"):
    """Analyze a model written inline (in-process capture; our own trusted test code)."""
    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "snippet.py")
        with open(path, "w") as f:
            f.write(HEADER + textwrap.dedent(body) +
                    f"\n\ndef get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return {init}\n")
        return analyze_graph(capture_file(path), "snippet.py")


def compile_all(spec, arches=("sm_90",)):
    """Generate, trace on meta tensors and AOT-compile every launch of one spec; returns the KernelSource."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import compile_launch, trace_launches

    source = generate_kernel(spec)
    assert not source.skeleton, f"{spec.id} fell back to a skeleton: {source.notes}"
    records = trace_launches(source, spec)
    assert records, f"{spec.id}: the launch wrapper launched nothing"
    if any(name.endswith("_strided_kernel") for name in source.kernel_names):  # the elementwise strided kernel
        strided = trace_launches(source, spec, strided=True)
        assert any(rec.kernel_name.endswith("_strided_kernel") for rec in strided), "strided views were copied"
        records += strided
    for rec in records:
        for arch in arches:
            size, _ = compile_launch(rec, arch)
            assert size > 0
    return source


def compile_spec(spec, arches=("sm_90", "sm_100")):
    """compile_all for both target arches by default (the family tests' compile helper)."""
    return compile_all(spec, arches)


def case_ids(cases) -> list[str]:
    """pytest ids of (name, shape, dtype) GPU cases: name-AxBxC-dtype."""
    return [f"{n}-{'x'.join(map(str, s))}-{d}" for n, s, d in cases]


def run_check(spec, make_input=None, check=None):
    """Generate (no skeleton), then run `check` (default: checking.check_kernel on the GPU); returns its result.
    aot.load_source registers the generated text with linecache, where cuTile reads a kernel's source."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.checking import check_kernel

    source = generate_kernel(spec)
    assert not source.skeleton, f"{spec.id} fell back to a skeleton: {source.notes}"
    return (check or check_kernel)(spec, source, make_input=make_input)
