"""Child-side capture: import the model file, build it on the meta device, export, convert to an OpGraph."""

from __future__ import annotations

import os
import re

import torch

from .capture import CaptureError, graph_from_export
from .capture_shims import tracing
from .decompose import decompose_uncovered
from .errors import ErrorInfo, UserError
from .opgraph import OpGraph
from .usercode import (build_model, error_from_exception, first_line, forward_arg_names, load_module,
                       pick_model_class, user_line)

META_FAILURES = re.compile(r"meta tensor|on meta|\.item\(\)|Cannot copy out of meta|meta device|data_ptr",
                            re.IGNORECASE)
_DATA_DEPENDENT = re.compile(r"data.dependent|GuardOnDataDependent|Could not guard|DataDependentOutput",
                             re.IGNORECASE)


def capture_file(path: str, class_name: str | None = None) -> OpGraph:
    module = load_module(path)
    cls = pick_model_class(module, path, class_name)
    try:
        with torch.device("meta"):
            model, inputs = build_model(module, path, cls)
    except UserError as err:
        # Some models read tensor values in __init__ (.item(), numpy()): a meta build cannot do that, so build on
        # the CPU for real; the memory cap still bounds what that may cost.
        if not META_FAILURES.search(err.info.message + (err.info.detail or "")):
            raise
        model, inputs = build_model(module, path, cls)
    model.eval()
    arg_names = forward_arg_names(model, len(inputs))
    try:
        with torch.no_grad(), tracing():
            ep = torch.export.export(model, tuple(inputs), strict=False)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise _export_error(exc, path) from None
    try:
        with torch.no_grad():
            decomposed = decompose_uncovered(ep)
        if decomposed is not ep:
            return graph_from_export(decomposed, path, cls.__name__, arg_names, inputs)
    except Exception:  # noqa: BLE001 - a decomposition that cannot be traced or encoded leaves its op unsupported
        pass
    try:
        return graph_from_export(ep, path, cls.__name__, arg_names, inputs)
    except CaptureError as exc:
        raise UserError(ErrorInfo(kind="capture", message=str(exc), file=path, line=exc.line, hint=exc.hint)) from None


def _export_error(exc: Exception, path: str) -> UserError:
    text = f"{type(exc).__name__}: {exc}"
    if _DATA_DEPENDENT.search(text):
        line = user_line(exc.__traceback__, path) or _line_from_text(text, path)
        return UserError(ErrorInfo(
            kind="capture", file=path, line=line,
            message="data-dependent control flow: the forward pass branches or loops on tensor values",
            hint="make the condition depend on shapes or constants (or use torch.where)", detail=text))
    err = error_from_exception(exc, path, "exception", "forward() raised while tracing")
    if err.info.line is None:
        err.info.line = _line_from_text(text, path)
    return err


def _line_from_text(text: str, path: str) -> int | None:
    real = os.path.realpath(path)
    found = None
    for m in re.finditer(r'File "([^"]+)", line (\d+)', text):
        if os.path.realpath(m.group(1)) == real:
            found = int(m.group(2))
    return found


__all__ = ["capture_file", "first_line"]
