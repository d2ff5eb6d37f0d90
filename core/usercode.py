"""Import and build user model code (child process only: this executes the user's file).

Every failure becomes a `UserError` naming the model file and the line in it closest to the cause.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import re
import sys
import traceback
from types import ModuleType, TracebackType
from typing import Any

from .errors import ErrorInfo, UserError


def user_line(tb: TracebackType | None, path: str) -> int | None:
    """The line of the deepest traceback frame that lies in the user's file."""
    line = None
    real = os.path.realpath(path)
    for frame, lineno in traceback.walk_tb(tb):
        if os.path.realpath(frame.f_code.co_filename) == real:
            line = lineno
    return line


def error_from_exception(exc: BaseException, path: str, kind: str, what: str, hint: str | None = None) -> UserError:
    line = user_line(exc.__traceback__, path)
    if isinstance(exc, SyntaxError) and exc.filename and os.path.realpath(exc.filename) == os.path.realpath(path):
        line = exc.lineno
    text = first_line(str(exc))
    if is_out_of_memory(exc):
        # The child replaces the hint with one naming the cap (it knows --memory-mb).
        kind, what, hint = "memory", f"{what}: out of memory", "raise the memory cap with --memory-mb, or allocate less"
        text = re.sub(r"^\[enforce fail at [^\]]*\]\s*(err == 0\.\s*)?", "", text)  # torch's allocator prefix
    elif isinstance(exc, ModuleNotFoundError) and exc.name:
        kind, hint = "import", hint or f"install the package '{exc.name}' or remove the import"
    message = f"{what}: {type(exc).__name__}: {text}"
    return UserError(ErrorInfo(kind=kind, message=message, file=path, line=line, hint=hint,
                               detail="".join(traceback.format_exception(exc))))


def is_out_of_memory(exc: BaseException) -> bool:
    """MemoryError (numpy, Python) or torch's CPU allocator failing under the address-space cap."""
    return isinstance(exc, MemoryError) or (isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc))


def first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def load_module(path: str) -> ModuleType:
    name = "tilestudio_user_model"
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)  # models may import sibling helper files
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UserError(ErrorInfo(kind="io", message="cannot import this file as a Python module", file=path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything
        raise error_from_exception(exc, path, "exception", "importing the model file failed") from None
    return module


def module_classes(module: ModuleType) -> list[type]:
    import torch.nn as nn

    return [obj for obj in vars(module).values()
            if inspect.isclass(obj) and issubclass(obj, nn.Module) and obj.__module__ == module.__name__]


def pick_model_class(module: ModuleType, path: str, name: str | None) -> type:
    classes = module_classes(module)
    by_name = {c.__name__: c for c in classes}
    if name:
        if name not in by_name:
            found = ", ".join(sorted(by_name)) or "none"
            raise UserError(ErrorInfo(kind="missing", message=f"no nn.Module class named '{name}' in the file",
                                      file=path, hint=f"classes found: {found}"))
        return by_name[name]
    if "Model" in by_name:
        return by_name["Model"]
    if not classes:
        raise UserError(ErrorInfo(kind="missing", message="no nn.Module subclass (expected `class Model(nn.Module)`)",
                                  file=path, line=1, hint="define class Model(nn.Module) with a forward()"))
    roots = _top_level_classes(path, [c.__name__ for c in classes])
    if len(roots) == 1:
        return by_name[roots[0]]
    raise UserError(ErrorInfo(kind="missing", message=f"several nn.Module classes ({', '.join(sorted(by_name))}) "
                              "and none is named Model", file=path,
                              hint=f"pick one with --model NAME, e.g. --model {sorted(roots or by_name)[0]}"))


def _top_level_classes(path: str, names: list[str]) -> list[str]:
    """Classes that no other class of the file refers to: the candidates for the model to analyse."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    used: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in names:
            used |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id != node.name}
    return [n for n in names if n not in used]


def call_user(fn: Any, path: str, what: str, *args: Any) -> Any:
    try:
        return fn(*args)
    except UserError:
        raise
    except BaseException as exc:  # noqa: BLE001
        raise error_from_exception(exc, path, "exception", what) from None


def required_function(module: ModuleType, path: str, name: str, optional: bool = False) -> Any:
    fn = getattr(module, name, None)
    if fn is None:
        if optional:
            return None
        raise UserError(ErrorInfo(kind="missing", message=f"the file defines no `{name}()`", file=path,
                                  hint=f"add def {name}(): returning the list of forward inputs"))
    if not callable(fn):
        raise UserError(ErrorInfo(kind="missing", message=f"`{name}` is not a function", file=path))
    return fn


def build_model(module: ModuleType, path: str, cls: type) -> tuple[Any, list[Any]]:
    """Instantiate the model and its inputs with the current default device (meta or cpu)."""
    get_init = required_function(module, path, "get_init_inputs", optional=True)
    get_inputs = required_function(module, path, "get_inputs")
    init = call_user(get_init, path, "get_init_inputs() raised") if get_init else []
    if not isinstance(init, (list, tuple)):
        init = [init]
    model = call_user(lambda: cls(*init), path, f"{cls.__name__}.__init__ raised")
    inputs = call_user(get_inputs, path, "get_inputs() raised")
    if not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    return model, list(inputs)


def forward_arg_names(model: Any, count: int) -> list[str]:
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    while len(names) < count:
        names.append(f"input_{len(names)}")
    return names[:count]
