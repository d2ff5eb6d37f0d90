"""Test helpers of the matmul and conv families: source registration for AOT compiles and strided-input makers
(the CPU emulator, tiled views included, is cutile_emulator.check_emulated)."""

from __future__ import annotations


import torch


def transposed_inputs(names: set[str]):
    """A make_input for check_kernel that gives the named activations column-major storage (a .t()/.mT view), so
    launch wrappers see the strided views glue produces."""
    from tilestudio.core.kernels.checking import random_input

    def make(t, gen):
        x = random_input(t, "cpu", gen)
        if t.name in names and isinstance(x, torch.Tensor) and x.dim() >= 2:
            return x.transpose(-1, -2).contiguous().transpose(-1, -2)
        return x

    return make


# ---------------------------------------------------------------------------------------------------------------
# snippet specs and GPU-test plumbing shared by the matmul/conv test files

DTYPES = ("float32", "float16", "bfloat16")
DT = {"float32": "", "float16": ".half()", "bfloat16": ".to(torch.bfloat16)"}


def snippet_specs(body: str, inputs: str, family: str):
    """Every spec of `family` built from an inline model snippet (our own trusted test code)."""
    from .helpers import decompose_source

    dec = decompose_source(body, inputs)
    return [k for k in dec.kernels if k.family == family]


def snippet_spec(body: str, inputs: str, family: str):
    specs = snippet_specs(body, inputs, family)
    assert len(specs) == 1, f"expected one {family} spec, got {[k.operations for k in specs]}"
    return specs[0]


def module_model(init: str, forward: str, args: str = "x") -> str:
    """A model with submodules built by `init` (statements, `;`-separated) whose forward returns `forward`."""
    stmts = "\n".join(f"        {s.strip()}" for s in init.split(";") if s.strip()) or "        pass"
    return (f"class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n{stmts}\n"
            f"    def forward(self, {args}):\n        return {forward}\n")


_COMPILED: set = set()


def compile_spec_dedup(spec, arches=("sm_90", "sm_100")):
    """compile_spec, skipping the AOT compile of a launch identical (code modulo the spec id, argument types) to
    one already compiled in this session (the corpus has many structurally identical kernels)."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import compile_launch, trace_launches

    source = generate_kernel(spec)
    assert not source.skeleton, f"{spec.id} fell back to a skeleton: {source.notes}"
    records = trace_launches(source, spec)
    assert records, f"{spec.id}: the launch wrapper launched nothing"
    generic = source.code.replace(spec.id, "KERNEL")
    for rec in records:
        for arch in arches:
            key = (generic, rec.kernel_name.replace(spec.id, "KERNEL"), tuple(rec.arg_summary), arch)
            if key in _COMPILED:
                continue
            size, _ = compile_launch(rec, arch)
            assert size > 0
            _COMPILED.add(key)
    return source
