"""A non-modal message strip across the top of the window: shows the latest error without blocking anything."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QStyle, QToolButton, QWidget

from .theme import Theme


class Banner(QWidget):
    detailsRequested = Signal()  # "Show" clicked: reveal the problem (Problems pane + source line)
    dismissed = Signal()

    def __init__(self, theme: Theme, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("banner")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.icon = QLabel()
        self.icon.setPixmap(self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxCritical).pixmap(18, 18))
        self.message = QLabel()
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.show_button = QToolButton(text="Show")
        self.show_button.clicked.connect(self.detailsRequested)
        self.close_button = QToolButton(text="✕", toolTip="Dismiss")
        self.close_button.setAutoRaise(True)
        self.close_button.clicked.connect(self._dismiss)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 5, 6, 5)
        layout.setSpacing(8)
        layout.addWidget(self.icon)
        layout.addWidget(self.message, 1)
        layout.addWidget(self.show_button)
        layout.addWidget(self.close_button)
        self.set_theme(theme)

    def set_theme(self, theme: Theme) -> None:
        tint = QColor(theme.error)
        tint.setAlpha(60)
        rgba = f"rgba({tint.red()}, {tint.green()}, {tint.blue()}, {tint.alpha()})"
        self.setStyleSheet(f"#banner {{ background: {rgba}; border-bottom: 1px solid {theme.error}; }}")

    def show_message(self, text: str) -> None:
        """Set the message; the owner decides where the banner lives and shows it."""
        self.message.setText(text)
        self.message.setToolTip(text)

    def text(self) -> str:
        return self.message.text()

    def _dismiss(self) -> None:
        self.dismissed.emit()
