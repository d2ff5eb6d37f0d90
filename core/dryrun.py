"""Dry run of a composed file without a GPU (child process): trace the forward on meta tensors, record every
ATen op dispatched outside kernels (compute ops are purity violations at the composed file's line) and every
kernel launch, then compile each launched kernel ahead of time for the target architecture.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .capture_model import META_FAILURES
from .capture_shims import tracing
from .catalog import base_op, catalog_ops
from .composer import HEADER_RE
from .errors import ErrorInfo, UserError

GLUE = {"data_movement", "allocation", "identity"}


class _Recorder(TorchDispatchMode):
    def __init__(self, path: str):
        super().__init__()
        self.path = os.path.realpath(path)
        self.violations: list[dict] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name.split("::", 1)[-1]
        info = catalog_ops().get(base_op(name))
        if info is None or info.category not in GLUE:
            line = None
            for frame in traceback.extract_stack():
                if os.path.realpath(frame.filename) == self.path:
                    line = frame.lineno
            self.violations.append({"op": f"aten.{name}", "line": line})
        return func(*args, **(kwargs or {}))


def _import_composed(path: str):
    spec = importlib.util.spec_from_file_location("tilestudio_composed", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["tilestudio_composed"] = module
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001
        from .usercode import error_from_exception

        raise error_from_exception(exc, path, "exception", "importing the composed file failed") from None
    return module



def _build(module, class_name: str):
    init = module.get_init_inputs() if hasattr(module, "get_init_inputs") else []
    return getattr(module, class_name)(*init).eval(), list(module.get_inputs())


def dry_run(path: str, arch: str = "sm_90") -> dict[str, Any]:
    from .kernels.aot import compile_launch, intercept_launches

    with open(path, encoding="utf-8") as f:
        text = f.read()
    header = HEADER_RE.search(text)
    module = _import_composed(path)
    class_name = header["cls"] if header else "Model"
    entry = next((getattr(module, n) for n in sorted(vars(module)) if n.startswith("ModelCuTile")
                  and isinstance(getattr(module, n), type)), None)
    if entry is None:
        raise UserError(ErrorInfo(kind="missing", file=path, message="no ModelCuTile class in the composed file"))
    try:
        with torch.device("meta"):
            model, inputs = _build(module, class_name)
    except RuntimeError as exc:
        # get_inputs or __init__ read tensor values (.item(), int(t.sum())): build on the CPU, then move to meta
        if not META_FAILURES.search(str(exc)):
            raise
        model, inputs = _build(module, class_name)
        model = model.to("meta")
        inputs = [x.to("meta") if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.device("meta"):
        cutile = entry(model)
    records = []
    recorder = _Recorder(path)
    error = None
    with torch.no_grad():
        with tracing():
            expected = model(*inputs)
        try:
            with intercept_launches(records), recorder:
                actual = cutile(*inputs)
        except BaseException as exc:  # noqa: BLE001 - report, do not crash
            line = None
            for frame, lineno in traceback.walk_tb(exc.__traceback__):
                if os.path.realpath(frame.f_code.co_filename) == os.path.realpath(path):
                    line = lineno
            error = {"message": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}",
                     "line": line}
            actual = None
    launches = []
    compiled: dict[tuple, dict] = {}
    for rec in records:
        row = {"kernel": rec.kernel_name, "grid": list(rec.grid), "args": rec.arg_summary, "ok": True,
               "compile_s": 0.0, "message": ""}
        key = (rec.kernel_name, tuple(rec.arg_summary))
        if key in compiled:
            row.update({k: compiled[key][k] for k in ("ok", "message")})
        else:
            try:
                _, seconds = compile_launch(rec, arch)
                row["compile_s"] = seconds
            except Exception as exc:  # noqa: BLE001 - compile errors are results
                row["ok"] = False
                row["message"] = f"{type(exc).__name__}: {str(exc).strip()[:400]}"
            compiled[key] = row
        launches.append(row)
    shape_notes = []
    if actual is not None:
        exp = list(expected) if isinstance(expected, (tuple, list)) else [expected]
        act = list(actual) if isinstance(actual, (tuple, list)) else [actual]
        if len(exp) != len(act):
            shape_notes.append(f"forward returns {len(act)} values, the model {len(exp)}")
        for i, (a, e) in enumerate(zip(act, exp)):
            if isinstance(e, torch.Tensor) and (not isinstance(a, torch.Tensor) or a.shape != e.shape
                                                or a.dtype != e.dtype):
                shape_notes.append(f"output {i}: {getattr(a, 'dtype', type(a))}{list(getattr(a, 'shape', []))} "
                                   f"!= model's {e.dtype}{list(e.shape)}")
    ok = error is None and not recorder.violations and all(r["ok"] for r in launches) and not shape_notes
    return {"ok": ok, "arch": arch, "launches": launches, "violations": recorder.violations, "error": error,
            "output_mismatches": shape_notes}
