"""The kernel library's contract: a KernelSpec in, a KernelSource (cuTile kernel + launch wrapper) out.

Contract of generated code (the composer and the dry run rely on it):
- `code` is module-level Python that assumes `import cuda.tile as ct`, `import torch`, `import math` and nothing
  else; every name it defines is prefixed with the kernel id (`<id>_kernel`, `launch_<id>`, `prepare_<id>`,
  `<id>_BLOCK...`) so any number of kernels live in one file.
- `launch_<id>(*args)` takes the spec's inputs in spec order (tensors, then scalars as Python values) — or, when
  `prepare` is set, the spec's activation inputs followed by the tensors `prepare_<id>(...)` returned — allocates
  the outputs, computes the grid, calls `ct.launch(torch.cuda.current_stream(), grid, kernel, args)` and returns
  the output (one tensor) or a tuple in the spec's output order.
- `prepare_<id>(*params)` (optional) takes the spec's parameter/buffer inputs in spec order and returns a tuple of
  tensors; it runs once when the composed model is built (e.g. folding an eval batch norm into conv weights).
- Host-side code in `launch_<id>` may only allocate and rearrange (torch.empty/zeros, view/reshape/permute/
  contiguous): every FLOP happens in a `@ct.kernel`.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..specs import KernelSpec

NUM_SM = 132  # streaming multiprocessors of the H200 the tile choices are tuned for (persistent grids)


class KernelSource(BaseModel):
    spec_id: str
    family: str
    code: str
    launch_name: str
    kernel_names: list[str] = Field(default_factory=list)
    prepare_name: str | None = None
    skeleton: bool = False  # an unsupported op: editable skeleton that raises at launch
    notes: list[str] = Field(default_factory=list)


class Unsupported(Exception):
    """Raised by a generator for a spec (or a fused op inside it) it cannot implement; becomes a skeleton."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


def activation_inputs(spec: KernelSpec):
    return [t for t in spec.inputs if t.role == "activation"]


def parameter_inputs(spec: KernelSpec):
    return [t for t in spec.inputs if t.role in ("parameter", "buffer")]


def scalar_inputs(spec: KernelSpec):
    return [t for t in spec.inputs if t.role == "scalar"]


def pow2_at_least(n: int, lo: int = 1, hi: int | None = None) -> int:
    """The smallest power of two >= n, clamped to [lo, hi]: cuTile tile dimensions are powers of two."""
    p = lo
    while p < n:
        p *= 2
    return min(p, hi) if hi else p


TORCH_TO_CT = {
    "float32": "ct.float32", "float16": "ct.float16", "bfloat16": "ct.bfloat16", "float64": "ct.float64",
    "int64": "ct.int64", "int32": "ct.int32", "int16": "ct.int16", "int8": "ct.int8", "uint8": "ct.uint8",
    "bool": "ct.bool_",
}
ITEMSIZE = {"float32": 4, "int32": 4, "float16": 2, "bfloat16": 2, "int16": 2, "int64": 8, "int8": 1, "uint8": 1,
            "bool": 1}  # (the compute dtypes)


def off_16_bytes(dtype: str, n: int) -> bool:
    """Whether `n` elements of `dtype` are not a whole number of 16-byte units: a row stride that keeps tiles of a
    row-major view from TMA and 128-bit accesses (50257 float32 or bfloat16 classes)."""
    return (n * ITEMSIZE[dtype]) % 16 != 0
