"""Settings (Edit ▸ Settings, Ctrl+,): target architecture, tolerances, timeouts, the validation interpreter, theme.

`AppSettings` is the typed view of the QSettings keys; panes read it when they need a value (the validation pane at
each run), so a change applies from the next run on without restarting anything.
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import asdict, dataclass, fields

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QGroupBox,
                               QHBoxLayout, QLabel, QLineEdit, QPushButton, QSpinBox, QVBoxLayout, QWidget)

from tilestudio.core.loader import DEFAULT_TIMEOUT_S

ARCHES = ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]
_ARCH_RE = re.compile(r"^sm_\d{2,3}[a-z]?$")


@dataclass
class AppSettings:
    arch: str = "sm_90"
    atol: float = 1e-2
    rtol: float = 1e-2
    analysis_timeout_s: int = int(DEFAULT_TIMEOUT_S)
    validation_timeout_s: int = 600
    python: str = ""  # the interpreter that runs validation; "" means this app's own (sys.executable)
    theme: str = "dark"

    KEYS = {"arch": "build/arch", "atol": "validation/atol", "rtol": "validation/rtol",
            "analysis_timeout_s": "analysis/timeoutS", "validation_timeout_s": "validation/timeoutS",
            "python": "validation/python", "theme": "view/theme"}

    def interpreter(self) -> str:
        return self.python or sys.executable

    @classmethod
    def load(cls, settings: QSettings) -> "AppSettings":
        """Read every key; a missing or bad value (a hand-edited INI file) keeps its default."""
        values = {}
        for f in fields(cls):
            raw = settings.value(cls.KEYS[f.name])
            if raw is None:
                continue
            try:
                value = _cast(getattr(cls, f.name), raw)
            except (TypeError, ValueError):
                continue
            if not cls(**{f.name: value}).problems():
                values[f.name] = value
        return cls(**values)

    def save(self, settings: QSettings) -> None:
        for name, value in asdict(self).items():
            settings.setValue(self.KEYS[name], value)
        settings.sync()

    def problems(self) -> list[str]:
        """What is wrong with these values, one line each (empty: fine)."""
        out = []
        if not _ARCH_RE.match(self.arch):
            out.append(f"target architecture {self.arch!r} is not like sm_90")
        for name in ("atol", "rtol"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 <= value < 1e3):
                out.append(f"{name} must be a number ≥ 0")
        if self.analysis_timeout_s < 1 or self.validation_timeout_s < 1:
            out.append("timeouts must be at least 1 s")
        if self.python and not (os.path.isfile(self.python) and os.access(self.python, os.X_OK)):
            out.append(f"{self.python} is not an executable file")
        if self.theme not in ("dark", "light"):
            out.append(f"unknown theme {self.theme!r}")
        return out


def _cast(default, raw):
    if isinstance(default, bool):
        return str(raw).lower() in ("1", "true", "yes")
    if isinstance(default, int):
        return int(float(raw))
    if isinstance(default, float):
        return float(raw)
    return str(raw)


class SettingsDialog(QDialog):
    def __init__(self, values: AppSettings, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.setMinimumWidth(520)

        self.arch = QComboBox(editable=True)
        self.arch.addItems(ARCHES)
        self.arch.setToolTip("GPU architecture the dry run compiles kernels for (sm_90: Hopper, sm_100: Blackwell)")
        self.atol = QLineEdit()
        self.rtol = QLineEdit()
        for box, what in ((self.atol, "absolute"), (self.rtol, "relative")):
            box.setPlaceholderText("e.g. 1e-2")
            box.setToolTip(f"{what} tolerance of the per-kernel and end-to-end checks (torch.allclose)")
        self.analysis_timeout = QSpinBox(minimum=1, maximum=3600, suffix=" s")
        self.analysis_timeout.setToolTip("how long the model's own code may run while it is analysed")
        self.validation_timeout = QSpinBox(minimum=1, maximum=24 * 3600, suffix=" s")
        self.validation_timeout.setToolTip("a validation run that takes longer is killed")
        self.python = QLineEdit()
        self.python.setPlaceholderText(f"this app's Python ({sys.executable})")
        self.python.setToolTip("the interpreter that runs validation: it needs torch with CUDA and cuda-tile")
        self.browse = QPushButton("Browse…")
        self.browse.clicked.connect(self._browse)
        self.theme = QComboBox()
        self.theme.addItem("Dark", "dark")
        self.theme.addItem("Light", "light")

        target = QGroupBox("Target")
        form = QFormLayout(target)
        form.addRow("GPU architecture:", self.arch)
        checks = QGroupBox("Validation")
        form = QFormLayout(checks)
        form.addRow("Absolute tolerance (atol):", self.atol)
        form.addRow("Relative tolerance (rtol):", self.rtol)
        form.addRow("Validation timeout:", self.validation_timeout)
        python_row = QHBoxLayout()
        python_row.addWidget(self.python, 1)
        python_row.addWidget(self.browse)
        form.addRow("Python interpreter:", python_row)
        analysis = QGroupBox("Analysis")
        form = QFormLayout(analysis)
        form.addRow("Analysis timeout:", self.analysis_timeout)
        appearance = QGroupBox("Appearance")
        form = QFormLayout(appearance)
        form.addRow("Theme:", self.theme)

        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #e5534b;")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
                                        | QDialogButtonBox.StandardButton.RestoreDefaults)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.buttons.button(QDialogButtonBox.StandardButton.RestoreDefaults).clicked.connect(
            lambda: self.set_values(AppSettings()))
        layout = QVBoxLayout(self)
        for box in (target, checks, analysis, appearance):
            layout.addWidget(box)
        layout.addWidget(self.error)
        layout.addWidget(self.buttons)
        for signal in (self.arch.currentTextChanged, self.atol.textChanged, self.rtol.textChanged,
                       self.python.textChanged):
            signal.connect(self._check)
        self.set_values(values)

    def set_values(self, v: AppSettings) -> None:
        self.arch.setCurrentText(v.arch)
        self.atol.setText(f"{v.atol:g}")
        self.rtol.setText(f"{v.rtol:g}")
        self.analysis_timeout.setValue(int(v.analysis_timeout_s))
        self.validation_timeout.setValue(int(v.validation_timeout_s))
        self.python.setText(v.python)
        self.theme.setCurrentIndex(max(0, self.theme.findData(v.theme)))
        self._check()

    def values(self) -> AppSettings:
        def number(box: QLineEdit) -> float:
            try:
                return float(box.text().strip())
            except ValueError:
                return math.nan

        return AppSettings(arch=self.arch.currentText().strip(), atol=number(self.atol), rtol=number(self.rtol),
                           analysis_timeout_s=self.analysis_timeout.value(),
                           validation_timeout_s=self.validation_timeout.value(), python=self.python.text().strip(),
                           theme=str(self.theme.currentData()))

    def _check(self) -> None:
        problems = self.values().problems()
        self.error.setText("\n".join(problems))
        self.error.setVisible(bool(problems))
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not problems)

    def _browse(self) -> None:
        start = os.path.dirname(self.python.text()) or os.path.dirname(sys.executable)
        path, _ = QFileDialog.getOpenFileName(self, "Python interpreter for validation", start)
        if path:
            self.python.setText(path)

    def accept(self) -> None:
        if self.values().problems():
            return
        super().accept()


def edit_settings(parent: QWidget | None, settings: QSettings) -> AppSettings | None:
    """Show the dialog on the stored values; on OK save and return the new values, else None."""
    dialog = SettingsDialog(AppSettings.load(settings), parent)
    dialog.setWindowModality(Qt.WindowModality.ApplicationModal)
    try:
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        values = dialog.values()
        values.save(settings)
        return values
    finally:
        dialog.deleteLater()
