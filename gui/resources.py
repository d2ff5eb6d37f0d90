"""Where the app's files (icons, example models) are, in a checkout and in an installed copy."""

from __future__ import annotations

import pathlib

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap

_HERE = pathlib.Path(__file__).resolve().parent
_CANDIDATES = [_HERE.parent / "resources", _HERE / "resources"]


def resource_path(*parts: str) -> pathlib.Path | None:
    for root in _CANDIDATES:
        path = root.joinpath(*parts)
        if path.exists():
            return path
    return None


def app_icon() -> QIcon:
    path = resource_path("icons", "tilestudio.svg")
    if path is not None:
        icon = QIcon(str(path))
        if not icon.isNull() and not icon.pixmap(32, 32).isNull():
            return icon
    return _fallback_icon()


def _fallback_icon() -> QIcon:
    # Used only when the resources are not installed next to the package.
    pixmap = QPixmap(64, 64)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(QColor("#252b35"))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawRoundedRect(2, 2, 60, 60, 12, 12)
    for i, colour in enumerate(("#4e9af1", "#f1a14e", "#5cc98a")):
        painter.setBrush(QColor(colour))
        painter.drawRoundedRect(11 + 15 * i, 11 + 15 * i, 12, 12, 2.5, 2.5)
    painter.end()
    return QIcon(pixmap)
