"""Trace a generated launch wrapper without a GPU and compile every kernel it launches ahead of time.

`trace_launches` runs `launch_<id>` on meta tensors with `ct.launch` and `torch.cuda.current_stream` intercepted,
recording each launch (kernel, grid, arguments). `compile_launch` turns a record into a cuTile `KernelSignature`
(array dtypes/ranks, constants for `ct.Constant` parameters, scalars otherwise) and calls
`cuda.tile.compilation.export_kernel` for the requested architecture. Used by the CPU tests of the kernel library
and by the composer's dry run.

By default a signature assumes nothing about the arrays beyond dtype and rank (the kernel compiles for any layout).
`specialize=True` adds what cuTile's JIT assumes from the actual tensors at launch (as its JAX binding spells it
out: unit strides as constants, shapes and strides divisible by 16 bytes where they are, 16-byte-aligned bases),
so the cubin takes the same paths as on the GPU (TMA loads, vector stores); `shared_memory_bytes` then reads the
kernel's static shared memory from it, which with the occupancy hint says whether the blocks fit on an SM.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import linecache
import math
import struct
import time
import typing
from dataclasses import dataclass, field
from typing import Any

import torch

from ..specs import KernelSpec, TensorSpec
from .base import KernelSource


@dataclass
class LaunchRecord:
    kernel: Any
    grid: tuple
    args: tuple
    kernel_name: str = ""
    arg_summary: list[str] = field(default_factory=list)


@contextlib.contextmanager
def intercept_launches(records: list[LaunchRecord]):
    import cuda.tile as ct

    real_launch, real_stream = ct.launch, torch.cuda.current_stream

    def fake_launch(stream, grid, kernel, args):
        grid = tuple(int(g) for g in grid)
        if not grid or any(g <= 0 for g in grid) or len(grid) > 3:
            raise ValueError(f"invalid grid {grid} for {getattr(kernel, '__name__', kernel)}")
        name = getattr(getattr(kernel, "_pyfunc", None), "__name__", str(kernel))
        records.append(LaunchRecord(kernel, grid, tuple(args), name, [_summary(a) for a in args]))

    ct.launch = fake_launch
    torch.cuda.current_stream = lambda *a, **k: None
    try:
        yield
    finally:
        ct.launch = real_launch
        torch.cuda.current_stream = real_stream


def _summary(arg: Any) -> str:
    if isinstance(arg, torch.Tensor):
        return f"{str(arg.dtype).removeprefix('torch.')}{list(arg.shape)}"
    return repr(arg)


def fake_tensor(t: TensorSpec, device: str = "meta", strided: bool = False) -> torch.Tensor:
    """An empty tensor of t's shape and dtype; `strided`: for rank >= 2, a non-contiguous view (dims stored in
    reverse order, or the rows of a buffer twice as wide), as a permuted, transposed or sliced input arrives."""
    x = torch.empty(t.shape, dtype=getattr(torch, t.dtype), device=device)
    if strided and x.dim() >= 2:
        order = list(range(x.dim()))[::-1]
        x = x.permute(order).contiguous().permute(order)
        if x.is_contiguous():  # one dim > 1 (an (N, 1) column): rows of a wider buffer instead
            wide = torch.empty(list(t.shape[:-1]) + [2 * t.shape[-1]], dtype=x.dtype, device=device)
            x = wide[..., :t.shape[-1]]
    return x


def load_source(source: KernelSource) -> dict[str, Any]:
    import cuda.tile as ct

    namespace: dict[str, Any] = {"ct": ct, "torch": torch, "math": math, "__name__": f"tilestudio_k_{source.spec_id}"}
    filename = f"<kernel {source.spec_id}>"
    # cuTile reads a kernel's source through inspect/linecache: register the generated text under its file name.
    linecache.cache[filename] = (len(source.code), None, source.code.splitlines(True), filename)
    exec(compile(source.code, filename, "exec"), namespace)  # noqa: S102 - generated code
    return namespace


def trace_launches(source: KernelSource, spec: KernelSpec, device: str = "meta",
                   strided: bool = False) -> list[LaunchRecord]:
    """Run the launch wrapper (and prepare, if any) on fake tensors (`strided`: rank >= 2 ones as non-contiguous
    views, fake_tensor); return the recorded launches."""
    namespace = load_source(source)
    args = [t.value if t.role == "scalar" else fake_tensor(t, device, strided) for t in spec.inputs]
    if source.prepare_name:
        params = [a for a, t in zip(args, spec.inputs) if t.role in ("parameter", "buffer")]
        prepared = namespace[source.prepare_name](*params)
        acts = [a for a, t in zip(args, spec.inputs) if t.role in ("activation", "scalar")]
        args = acts + list(prepared)
    records: list[LaunchRecord] = []
    with intercept_launches(records):
        result = namespace[source.launch_name](*args)
    outs = result if isinstance(result, tuple) else (result,)
    if len(outs) != len(spec.outputs):
        raise AssertionError(f"{source.launch_name} returned {len(outs)} outputs, spec has {len(spec.outputs)}")
    for out, want in zip(outs, spec.outputs):
        if list(out.shape) != want.shape or str(out.dtype).removeprefix("torch.") != want.dtype:
            raise AssertionError(f"{source.launch_name} output {want.name}: got {_summary(out)}, "
                                 f"spec says {want.dtype}{want.shape}")
    return records


def _ct_dtype(dtype: torch.dtype):
    import cuda.tile as ct

    return {torch.float32: ct.float32, torch.float16: ct.float16, torch.bfloat16: ct.bfloat16,
            torch.float64: ct.float64, torch.int64: ct.int64, torch.int32: ct.int32, torch.int16: ct.int16,
            torch.int8: ct.int8, torch.uint8: ct.uint8, torch.bool: ct.bool_}[dtype]


def _array_constraint(arg: torch.Tensor, specialize: bool):
    import cuda.tile as ct
    from cuda.tile.compilation import ArrayConstraint

    base = dict(index_dtype=ct.int32, stride_lower_bound_incl=0, alias_groups=(), may_alias_internally=False)
    if specialize:
        per16 = max(1, 16 // arg.element_size())  # elements per 16 bytes
        base.update(stride_constant=tuple(1 if s == 1 else None for s in arg.stride()),
                    shape_constant=tuple(1 if d == 1 else None for d in arg.shape),
                    stride_divisible_by=tuple(per16 if s % per16 == 0 else 1 for s in arg.stride()),
                    shape_divisible_by=tuple(16 if d % 16 == 0 else 1 for d in arg.shape),
                    base_addr_divisible_by=16)
    return ArrayConstraint(_ct_dtype(arg.dtype), arg.dim(), **base)


def signature_for(record: LaunchRecord, specialize: bool = False):
    import cuda.tile as ct
    from cuda.tile.compilation import CallingConvention, ConstantConstraint, KernelSignature, ScalarConstraint

    fn = record.kernel._pyfunc
    hints = typing.get_type_hints(fn, include_extras=True) if hasattr(fn, "__annotations__") else {}
    params = list(inspect.signature(fn).parameters)
    constraints = []
    for name, arg in zip(params, record.args):
        hint = hints.get(name)
        is_const = hint is not None and "Constant" in repr(hint)
        if isinstance(arg, torch.Tensor):
            constraints.append(_array_constraint(arg, specialize))
        elif is_const:
            constraints.append(ConstantConstraint(arg))
        elif isinstance(arg, bool):
            constraints.append(ScalarConstraint(ct.bool_))
        elif isinstance(arg, int):
            constraints.append(ScalarConstraint(ct.int32 if -2**31 <= arg < 2**31 else ct.int64))
        elif isinstance(arg, float):
            constraints.append(ScalarConstraint(ct.float32))
        else:
            raise TypeError(f"cannot build a signature for argument {name}={arg!r}")
    return KernelSignature(constraints, calling_convention=CallingConvention.cutile_python_v2())


def compile_cubin(record: LaunchRecord, arch: str = "sm_90", specialize: bool = False) -> bytes:
    """Compile one recorded launch ahead of time; returns the cubin. Raises on compile errors."""
    from cuda.tile.compilation import export_kernel

    buf = io.BytesIO()
    export_kernel(record.kernel, [signature_for(record, specialize)], buf, gpu_code=arch, output_format="cubin")
    return buf.getvalue()


def compile_launch(record: LaunchRecord, arch: str = "sm_90") -> tuple[int, float]:
    """Compile one recorded launch ahead of time; returns (cubin bytes, seconds). Raises on compile errors."""
    start = time.perf_counter()
    size = len(compile_cubin(record, arch))
    return size, time.perf_counter() - start


def shared_memory_bytes(cubin: bytes) -> int:
    """Static shared memory of the kernel(s) in a cubin: the sizes of its `.nv.shared.*` ELF sections (ELF64,
    little-endian, as tileiras writes them)."""
    return sum(size for name, _, size in _sections(cubin) if name.startswith(".nv.shared."))


def _sections(cubin: bytes):
    """(name, file offset, size) of each ELF section of a cubin (ELF64, little-endian)."""
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    entsize, count, names_index = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", cubin, shoff + i * entsize) for i in range(count)]
    names_at = headers[names_index][4]
    for name_off, _type, _flags, _addr, offset, size in headers:
        start = names_at + name_off
        yield cubin[start:cubin.index(b"\0", start)].decode(), offset, size


_EIATTR_FRAME_SIZE, _EIATTR_REGCOUNT = 0x11, 0x2F


def kernel_resources(cubin: bytes) -> dict[str, int]:
    """Registers per thread and the per-thread stack frame of the kernel in a cubin, from the `.nv.info` section's
    attribute records (format byte, attribute byte, u16 size, payload; here payload = u32 symbol, u32 value). A
    kernel with no calls has a non-zero frame only when it spills registers to local memory (what cuobjdump
    --dump-resource-usage reports as STACK), so `frame == 0` is a spill check that needs no CUDA tools."""
    out = {"registers": 0, "frame": 0}
    for name, offset, size in _sections(cubin):
        if name != ".nv.info":
            continue
        data, i = cubin[offset:offset + size], 0
        while i + 4 <= len(data):
            fmt, attr, length = data[i], data[i + 1], struct.unpack_from("<H", data, i + 2)[0]
            if fmt != 4:  # only the sized records (EIFMT_SVAL) are expected in the global section
                break
            if length == 8 and attr in (_EIATTR_FRAME_SIZE, _EIATTR_REGCOUNT):
                value = struct.unpack_from("<I", data, i + 8)[0]
                key = "frame" if attr == _EIATTR_FRAME_SIZE else "registers"
                out[key] = max(out[key], value)
            i += 4 + length
    return out


# sm_90 (H100/H200): shared memory per SM, and what the hardware reserves per resident block
SHARED_PER_SM_SM90 = 228 * 1024
SHARED_RESERVED_PER_BLOCK = 1024


def blocks_fitting_shared_memory(smem: int, per_sm: int = SHARED_PER_SM_SM90) -> int:
    """How many blocks using `smem` bytes of static shared memory fit on one SM by shared memory alone."""
    return per_sm // (smem + SHARED_RESERVED_PER_BLOCK)
