"""Project files (`.tstudio`): one model, the user's edited kernels, settings and the last results, as JSON.

A project never holds a copy of the model: it names the file (absolute path, and relative to the project so a
project moved together with its model still opens) and records its sha256, so opening it can say when the model
changed since. Edits are kept whatever happens: a changed model, a kernel id the new analysis no longer has, a
newer format we do not know. Files are written atomically (a temporary file, then a rename), so a crash while
saving leaves the previous file intact.

Recovery files use the same format. The GUI autosaves one per model (named from the model's absolute path) a few
seconds after each change and removes it after a save or a clean close; one still there on the next start is
what a crash left behind.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import tempfile
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from .errors import ErrorInfo, UserError

PROJECT_FORMAT_VERSION = 1
PROJECT_SUFFIX = ".tstudio"
RECOVERY_SUFFIX = ".tstudio-recovery"


class ProjectSettings(BaseModel, extra="allow"):
    """Settings that belong to the project rather than to the machine (more may be added by newer versions)."""

    arch: str = "sm_90"  # target of the compile checks and the dry run
    model_name: str | None = None  # the nn.Module class to analyse when the file has several
    atol: float | None = None  # validation tolerances (None: the application's)
    rtol: float | None = None


class ProjectFile(BaseModel, extra="allow"):
    format_version: int = PROJECT_FORMAT_VERSION
    app_version: str = ""
    saved_at: str = ""  # ISO 8601, UTC
    model_path: str  # absolute, as it was when saved
    model_relpath: str | None = None  # relative to the project file's folder
    model_sha256: str = ""
    edits: dict[str, str] = Field(default_factory=dict)  # kernel id → the user's code for it
    settings: ProjectSettings = Field(default_factory=ProjectSettings)
    last_results: dict[str, Any] = Field(default_factory=dict)  # "compile", "purity", "export", "validation"
    project_path: str | None = None  # in a recovery file: the project the edits belong to, if any


def sha256_of(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def _atomic_write(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tstudio-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def save_project(path: str, project: ProjectFile) -> ProjectFile:
    """Write `project` to `path` (atomically); returns what was written (paths and time filled in)."""
    path = os.path.abspath(path)
    model = os.path.abspath(project.model_path)
    try:
        rel = os.path.relpath(model, os.path.dirname(path))
    except ValueError:  # another drive on Windows
        rel = None
    from tilestudio import __version__

    written = project.model_copy(update={"model_path": model, "model_relpath": rel, "saved_at": _now(),
                                         "app_version": __version__, "format_version": PROJECT_FORMAT_VERSION})
    try:
        _atomic_write(path, written.model_dump_json(indent=2) + "\n")
    except OSError as exc:
        raise UserError(ErrorInfo(kind="io", file=path, message=f"cannot write the project: {exc.strerror or exc}"))
    return written


def load_project(path: str) -> ProjectFile:
    """Read a project; a file from a newer TileStudio is read as far as we understand it (edits are kept)."""
    path = os.path.abspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise UserError(ErrorInfo(kind="io", file=path, message=f"cannot read the project: {exc.strerror or exc}"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(ErrorInfo(kind="io", file=path, message=f"not a TileStudio project (bad JSON: {exc})"))
    if not isinstance(data, dict) or "model_path" not in data:
        raise UserError(ErrorInfo(kind="io", file=path, message="not a TileStudio project (no model_path)"))
    try:
        project = ProjectFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise UserError(ErrorInfo(kind="io", file=path, message=f"bad project file: {where}: {first.get('msg')}"))
    return project


def resolve_model_path(project: ProjectFile, project_path: str) -> str:
    """The model file the project means: next to the project if it was moved with it, else the saved path."""
    if project.model_relpath:
        moved = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(project_path)), project.model_relpath))
        if os.path.isfile(moved):
            return moved
    return project.model_path


def model_changed(project: ProjectFile, model_path: str) -> bool:
    """True when the model file's content differs from the one the project was saved with."""
    current = sha256_of(model_path)
    return bool(project.model_sha256) and current is not None and current != project.model_sha256


# ---- recovery ------------------------------------------------------------------------------------------------
def recovery_path(folder: str, model_path: str) -> str:
    """The one recovery file of a model: named after its absolute path, so each model has its own."""
    model = os.path.abspath(model_path)
    key = hashlib.sha256(model.encode("utf-8")).hexdigest()[:16]
    stem = os.path.splitext(os.path.basename(model))[0][:40]
    return os.path.join(folder, f"{stem}-{key}{RECOVERY_SUFFIX}")


def write_recovery(folder: str, project: ProjectFile) -> str:
    path = recovery_path(folder, project.model_path)
    data = project.model_copy(update={"saved_at": _now(), "model_path": os.path.abspath(project.model_path)})
    _atomic_write(path, data.model_dump_json(indent=2) + "\n")
    return path


def read_recovery(folder: str, model_path: str) -> ProjectFile | None:
    """The recovery left for this model, or None (none, unreadable, or for another file)."""
    path = recovery_path(folder, model_path)
    if not os.path.isfile(path):
        return None
    try:
        project = load_project(path)
    except UserError:
        return None
    if os.path.abspath(project.model_path) != os.path.abspath(model_path):
        return None
    return project


def discard_recovery(folder: str, model_path: str) -> None:
    try:
        os.unlink(recovery_path(folder, model_path))
    except OSError:
        pass
