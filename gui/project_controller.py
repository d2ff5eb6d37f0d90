"""Project files, export, autosave and crash recovery for the main window.

- Save/Save As/Open Project (`.tstudio`, core/project.py): the model path and hash, the edited kernels, the
  project's settings and the last results. Opening a project whose model changed since keeps every edit and says so.
- Export (Ctrl+E) writes the composed file; with purity errors left it asks first, listing them. The exported text
  is kept (and saved in the project) for the Composed pane's diff.
- Autosave: a few seconds after a change, the unsaved edits go to a recovery file (AppDataLocation/recovery, or the
  `project/recoveryDir` setting). A save or a clean close removes it; one found when the model is opened again was
  left by a crash, and the user is offered to restore it (a declined recovery is kept aside, not deleted).
- Unsaved edits are never dropped silently: closing the window or opening another model or project asks first.

Every question goes through an `ask_*` method, so tests (and scripts) can answer without a modal dialog.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, QStandardPaths, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMessageBox

from tilestudio.core.errors import UserError
from tilestudio.core.project import (PROJECT_SUFFIX, ProjectFile, ProjectSettings, discard_recovery, load_project,
                                     model_changed, read_recovery, recovery_path, resolve_model_path, save_project,
                                     sha256_of, write_recovery)
from tilestudio.core.purity import PurityDiagnostic

from .editors_feature import EditingFeature

if TYPE_CHECKING:
    from .main_window import MainWindow

AUTOSAVE_MS = 3000
MAX_LISTED_ERRORS = 12


class ProjectController(QObject):
    def __init__(self, window: "MainWindow", editing: EditingFeature):
        super().__init__(window)
        self.window = window
        self.editing = editing
        self.workspace = editing.workspace
        self.project_path: str | None = None
        self.saved_edits: dict[str, str] = {}
        self.last_results: dict[str, Any] = {}
        self.exported_text: str | None = None
        self.exported_path: str = ""
        self._model_path: str | None = None
        self._opening_project = False
        self._check_recovery = False
        self._notices: list[str] = []
        self._export_waiting = False
        interval = _int(window.settings.value("project/autosaveMs", AUTOSAVE_MS), AUTOSAVE_MS)
        self.autosave_timer = QTimer(self, singleShot=True, interval=max(100, interval))
        self.autosave_timer.timeout.connect(self.autosave)
        self._build_actions()
        ws = self.workspace
        window.session.sourceLoaded.connect(self._on_source_loaded)
        ws.sourcesReady.connect(self._on_sources_ready)
        ws.kernelEdited.connect(lambda _kid: self._on_changed())
        ws.editsReplaced.connect(self._on_changed)
        ws.composeFinished.connect(self._on_composed)
        window.installEventFilter(self)  # after the other close watchers: a cancelled close reaches none of them

    # ---- actions -------------------------------------------------------------------------------------------
    def _build_actions(self) -> None:
        w = self.window
        self.open_project_action = QAction("Open &Project…", w)
        self.open_project_action.setShortcut(QKeySequence("Ctrl+Shift+O"))
        self.open_project_action.setStatusTip("Open a TileStudio project (.tstudio): a model with your edits")
        self.open_project_action.triggered.connect(lambda: self.open_project())
        self.save_action = QAction("&Save Project", w)
        self.save_action.setShortcut(QKeySequence.StandardKey.Save)
        self.save_action.setStatusTip("Save the edited kernels, settings and results in a project file")
        self.save_action.triggered.connect(lambda: self.save())
        self.save_as_action = QAction("Save Project &As…", w)
        self.save_as_action.setShortcut(QKeySequence("Ctrl+Shift+S"))
        self.save_as_action.triggered.connect(lambda: self.save(ask=True))
        self.export_action = QAction("&Export Composed File…", w)
        self.export_action.setShortcut(QKeySequence("Ctrl+E"))
        self.export_action.setStatusTip("Write the composed cuTile file (with your edits) to a .py file")
        self.export_action.triggered.connect(lambda: self.export())
        self.editing.composed.set_export_action(self.export_action)
        w.addActions([self.open_project_action, self.save_action, self.save_as_action, self.export_action])

    def fill_file_menu(self, menu) -> None:
        """Project actions after Open/Recent/Example, export after them."""
        actions = menu.actions()
        anchor = next((a for a in actions if a.isSeparator()), None)
        for action in (self.open_project_action, self.save_action, self.save_as_action, None, self.export_action):
            if action is None:
                menu.insertSeparator(anchor) if anchor else menu.addSeparator()
            elif anchor is not None:
                menu.insertAction(anchor, action)
            else:
                menu.addAction(action)
        if anchor is not None:
            menu.insertSeparator(anchor)

    # ---- state ---------------------------------------------------------------------------------------------
    @property
    def dirty(self) -> bool:
        return self.workspace.edits != self.saved_edits

    def recovery_dir(self) -> str:
        configured = str(self.window.settings.value("project/recoveryDir", "") or "")
        if configured:
            return configured
        base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
        return os.path.join(base or os.path.expanduser("~/.tilestudio"), "recovery")

    def model_path(self) -> str | None:
        return self.window.session.path

    def current_project(self) -> ProjectFile:
        path = self.model_path() or ""
        return ProjectFile(model_path=path, model_sha256=sha256_of(path) or "", edits=dict(self.workspace.edits),
                           settings=self._settings(), last_results=self._results(),
                           project_path=self.project_path)

    def _settings(self) -> ProjectSettings:
        from .settings_dialog import AppSettings

        values = AppSettings.load(self.window.settings)
        return ProjectSettings(arch=values.arch, model_name=self.window.session.model_name, atol=values.atol,
                               rtol=values.rtol)

    def _apply_settings(self, settings: ProjectSettings) -> None:
        from .settings_dialog import AppSettings

        keys = AppSettings.KEYS
        self.window.settings.setValue(keys["arch"], settings.arch)
        for name in ("atol", "rtol"):
            value = getattr(settings, name)
            if value is not None:
                self.window.settings.setValue(keys[name], float(value))

    def _results(self) -> dict[str, Any]:
        results = dict(self.last_results)
        compile_results = dict(results.get("compile", {}))
        compile_results.update({kid: r.model_dump(mode="json", exclude={"detail"})
                                for kid, r in self.editing.panel.compile_results.items()})
        if compile_results:
            results["compile"] = compile_results
        result = self.workspace.result
        if result is not None:
            results["purity"] = {"errors": sum(d.severity == "error" for d in result.diagnostics),
                                 "warnings": sum(d.severity != "error" for d in result.diagnostics),
                                 "diagnostics": [d.model_dump(mode="json") for d in result.diagnostics[:200]]}
        if self.exported_text is not None:
            results["export"] = {"path": self.exported_path, "text": self.exported_text}
        validation = getattr(getattr(self.window, "validation", None), "report", None)
        if validation is not None and hasattr(validation, "model_dump"):
            try:
                results["validation"] = validation.model_dump(mode="json")
            except Exception:  # noqa: BLE001 - a report we cannot serialise is not worth losing the save over
                pass
        return results

    def set_result(self, key: str, value: Any) -> None:
        """Keep a JSON-able result (another feature's) in the project's last results."""
        self.last_results[key] = value

    # ---- model lifecycle -----------------------------------------------------------------------------------
    def _on_source_loaded(self, path: str, _text: str) -> None:
        if path != self._model_path:
            self._model_path = path
            if not self._opening_project:
                self.project_path = None
                self.saved_edits = {}
                self.last_results = {}
                self._set_exported(None, "")
            self._check_recovery = True
        self.update_title()

    def _on_sources_ready(self) -> None:
        if self._check_recovery:
            self._check_recovery = False
            self._offer_recovery()
        orphans = self.workspace.orphaned_edits()
        if orphans:
            self._notices.append(f"{len(orphans)} edited kernel{'s are' if len(orphans) != 1 else ' is'} no longer "
                                 f"in the model ({', '.join(orphans)}): the edits are kept in the project but not "
                                 "composed")
        if self._notices:
            self.notify(" ".join(self._notices))
            self._notices = []
        self.update_title()

    def _on_changed(self) -> None:
        self.update_title()
        if not self.autosave_timer.isActive():
            self.autosave_timer.start()

    def update_title(self) -> None:
        path = self.model_path()
        if not path:
            return
        name = os.path.basename(path)
        if self.project_path:
            project = os.path.splitext(os.path.basename(self.project_path))[0]
            title = f"{project} ({name})[*] — TileStudio"
        else:
            title = f"{name}[*] — TileStudio"
        self.window.setWindowTitle(title)
        self.window.setWindowModified(self.dirty)
        self.save_action.setEnabled(True)

    def notify(self, message: str) -> None:
        """A message the user must see but need not answer: the banner (dismissable) and the status bar."""
        self.window.banner.show_message(message)
        self.window.banner_bar.show()
        self.window.status_label.setText(message)

    # ---- autosave and recovery -----------------------------------------------------------------------------
    def autosave(self) -> str | None:
        path = self.model_path()
        if not path:
            return None
        folder = self.recovery_dir()
        if not self.dirty:
            discard_recovery(folder, path)
            return None
        try:
            return write_recovery(folder, self.current_project())
        except OSError as exc:
            self.window.status_label.setText(f"autosave failed: {exc}")
            return None

    def _offer_recovery(self) -> None:
        path = self.model_path()
        if not path:
            return
        folder = self.recovery_dir()
        recovered = read_recovery(folder, path)
        if recovered is None or not recovered.edits or recovered.edits == self.workspace.edits:
            return
        if not self.ask_restore(recovered):
            aside = recovery_path(folder, path) + ".declined"
            try:
                os.replace(recovery_path(folder, path), aside)  # declined, but not destroyed
            except OSError:
                pass
            return
        project_path = getattr(recovered, "project_path", None)
        if project_path and not self.project_path and os.path.isfile(project_path):
            try:
                self.saved_edits = dict(load_project(project_path).edits)
                self.project_path = project_path
            except UserError:
                pass
        self.workspace.replace_edits(recovered.edits)
        self.window.status_label.setText(f"Restored {len(recovered.edits)} unsaved kernel edit"
                                         f"{'s' if len(recovered.edits) != 1 else ''} from {recovered.saved_at}")

    # ---- guards --------------------------------------------------------------------------------------------
    def may_discard_changes(self, reason: str) -> bool:
        """True when it is fine to drop the current edits (saved, or the user said so)."""
        if not self.dirty:
            return True
        answer = self.ask_save_changes(reason)
        if answer == "save":
            return self.save() is not None
        if answer == "discard":
            if self.model_path():
                discard_recovery(self.recovery_dir(), self.model_path())
            return True
        return False

    def may_open_model(self, path: str) -> bool:
        if self._opening_project:
            return True
        if self.model_path() and os.path.abspath(path) == self.model_path():
            return True  # the same model again: a reload keeps the edits
        return self.may_discard_changes(f"Opening {os.path.basename(path)} closes "
                                        f"{os.path.basename(self.model_path() or '')}.")

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if watched is self.window and event.type() == QEvent.Type.Close:
            if not self.may_discard_changes("The window is closing."):
                event.ignore()
                return True
            self.autosave_timer.stop()
            if self.model_path() and not self.dirty:
                discard_recovery(self.recovery_dir(), self.model_path())
            self.editing.shutdown()
        return False

    # ---- save / open ---------------------------------------------------------------------------------------
    def save(self, path: str | None = None, *, ask: bool = False) -> str | None:
        if not self.model_path():
            self.window.status_label.setText("Nothing to save: open a model first.")
            return None
        if path is None:
            path = self.project_path if not ask else None
            if path is None:
                path = self.ask_project_save_path()
                if not path:
                    return None
        if not path.endswith(PROJECT_SUFFIX):
            path += PROJECT_SUFFIX
        try:
            written = save_project(path, self.current_project().model_copy(update={"project_path": None}))
        except UserError as err:
            self.show_error("Save Project", err.info.one_line())
            return None
        self.project_path = os.path.abspath(path)
        self.saved_edits = dict(written.edits)
        self.last_results = dict(written.last_results)
        discard_recovery(self.recovery_dir(), self.model_path())
        self.window.settings.setValue("files/lastProjectDir", os.path.dirname(self.project_path))
        self.window.status_label.setText(f"Saved project {self.project_path}")
        self.update_title()
        return self.project_path

    def open_project(self, path: str | None = None) -> bool:
        if path is None:
            path = self.ask_project_open_path()
            if not path:
                return False
        if not self.may_discard_changes(f"Opening the project {os.path.basename(path)}."):
            return False
        try:
            project = load_project(path)
        except UserError as err:
            self.show_error("Open Project", err.info.one_line())
            return False
        model = resolve_model_path(project, path)
        if not os.path.isfile(model):
            self.show_error("Open Project", f"{path}: the model file {model} is missing. The project's "
                            f"{len(project.edits)} kernel edit(s) are still in the project file.")
            return False
        self._apply_settings(project.settings)
        self._opening_project = True
        try:
            self.project_path = os.path.abspath(path)
            self.saved_edits = dict(project.edits)
            self.last_results = dict(project.last_results)
            export = project.last_results.get("export") or {}
            self._set_exported(export.get("text"), export.get("path", ""))
            if project.settings.model_name:
                self.window.session.open(model, project.settings.model_name)
            else:
                self.window.open_model(model)
            self.workspace.replace_edits(project.edits)
        finally:
            self._opening_project = False
        if model_changed(project, model) and project.edits:
            self._notices.append(f"{os.path.basename(model)} changed since the project was saved: your "
                                 f"{len(project.edits)} edited kernel{'s were' if len(project.edits) != 1 else ' was'}"
                                 " kept; check them against the new analysis.")
        elif model_changed(project, model):
            self._notices.append(f"{os.path.basename(model)} changed since the project was saved.")
        self.update_title()
        return True

    # ---- export --------------------------------------------------------------------------------------------
    def export(self, path: str | None = None) -> str | None:
        ws = self.workspace
        if not ws.ready:
            self.window.status_label.setText("Nothing to export: open a model and wait for its analysis.")
            return None
        if ws.composing or ws.result is None:
            self._export_waiting = path or True  # type: ignore[assignment]
            self.window.status_label.setText("Composing… the export follows.")
            return None
        result = ws.result
        errors = [d for d in result.diagnostics if d.severity == "error"]
        if errors and not self.ask_export_despite_errors(errors):
            return None
        if path is None:
            path = self.ask_export_path()
            if not path:
                return None
        try:
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(result.text)
        except OSError as exc:
            self.show_error("Export", f"cannot write {path}: {exc.strerror or exc}")
            return None
        self.window.settings.setValue("files/lastExportDir", os.path.dirname(os.path.abspath(path)))
        self._set_exported(result.text, os.path.abspath(path))
        self.window.status_label.setText(f"Exported {os.path.abspath(path)}"
                                         + (f" with {len(errors)} purity error(s)" if errors else ""))
        return os.path.abspath(path)

    def _on_composed(self, _result) -> None:
        if self._export_waiting and not self.workspace.composing:
            waiting, self._export_waiting = self._export_waiting, False
            self.export(waiting if isinstance(waiting, str) else None)

    def _set_exported(self, text: str | None, path: str) -> None:
        self.exported_text, self.exported_path = text, path
        self.editing.composed.set_exported(text, path)

    def default_export_path(self) -> str:
        model = self.model_path() or "model.py"
        folder = str(self.window.settings.value("files/lastExportDir", "") or os.path.dirname(model))
        return os.path.join(folder, os.path.splitext(os.path.basename(model))[0] + "_cutile.py")

    # ---- questions (tests replace these) -------------------------------------------------------------------
    def ask_save_changes(self, reason: str) -> str:
        n = len(self.workspace.edits)
        box = QMessageBox(QMessageBox.Icon.Warning, "Unsaved kernel edits",
                          f"{reason}\n\nYou have {n} edited kernel{'s' if n != 1 else ''} that "
                          f"{'are' if n != 1 else 'is'} not saved in a project. Save them?", parent=self.window)
        box.setStandardButtons(QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                               | QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Save)
        answer = box.exec()
        return {QMessageBox.StandardButton.Save: "save",
                QMessageBox.StandardButton.Discard: "discard"}.get(QMessageBox.StandardButton(answer), "cancel")

    def ask_restore(self, recovered: ProjectFile) -> bool:
        n = len(recovered.edits)
        answer = QMessageBox.question(
            self.window, "Recover unsaved edits",
            f"TileStudio did not close cleanly while {os.path.basename(recovered.model_path)} had {n} unsaved "
            f"kernel edit{'s' if n != 1 else ''} (autosaved {recovered.saved_at}).\n\nRestore them?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes)
        return answer == QMessageBox.StandardButton.Yes

    def ask_export_despite_errors(self, errors: list[PurityDiagnostic]) -> bool:
        listed = "\n".join(f"line {d.line}: {d.rule} {d.message}" for d in errors[:MAX_LISTED_ERRORS])
        more = f"\n… and {len(errors) - MAX_LISTED_ERRORS} more" if len(errors) > MAX_LISTED_ERRORS else ""
        box = QMessageBox(QMessageBox.Icon.Warning, "Export with purity errors?",
                          f"The composed file still has {len(errors)} purity error{'s' if len(errors) != 1 else ''}"
                          ": PyTorch compute in the forward path.", parent=self.window)
        box.setDetailedText(listed + more)
        box.setInformativeText(listed.split("\n")[0] + ("\n(see details)" if len(errors) > 1 else "")
                               + "\n\nExport anyway?")
        box.setStandardButtons(QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
        box.setDefaultButton(QMessageBox.StandardButton.No)
        return box.exec() == QMessageBox.StandardButton.Yes

    def ask_export_path(self) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Export composed file", self.default_export_path(),
                                              "Python files (*.py)")
        return path or None

    def ask_project_save_path(self) -> str | None:
        model = self.model_path() or "project.py"
        folder = str(self.window.settings.value("files/lastProjectDir", "") or os.path.dirname(model))
        start = os.path.join(folder, os.path.splitext(os.path.basename(model))[0] + PROJECT_SUFFIX)
        path, _ = QFileDialog.getSaveFileName(self.window, "Save project", start,
                                              f"TileStudio projects (*{PROJECT_SUFFIX})")
        return path or None

    def ask_project_open_path(self) -> str | None:
        folder = str(self.window.settings.value("files/lastProjectDir", "") or os.getcwd())
        path, _ = QFileDialog.getOpenFileName(self.window, "Open project", folder,
                                              f"TileStudio projects (*{PROJECT_SUFFIX});;All files (*)")
        return path or None

    def show_error(self, title: str, message: str) -> None:
        """Non-modal, like every other error of the app: the banner and the status bar."""
        self.notify(f"{title}: {message}")


def _int(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
