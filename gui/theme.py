"""Colours and fonts in one place: the application palette, the pygments style, kernel colours."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory

# Distinct hues for kernels, in order of appearance; they repeat after the last one.
KERNEL_HUES = ["#4e9af1", "#f1a14e", "#5cc98a", "#e0607e", "#a87ef0", "#e8d15a", "#4fc7d4", "#f07fd0",
               "#9cc45a", "#d88a6a"]


@dataclass(frozen=True)
class Theme:
    name: str
    pygments_style: str
    window: str
    base: str
    alt_base: str
    text: str
    dim_text: str
    button: str
    highlight: str
    highlight_text: str
    error: str
    warning: str
    line_alpha: int  # alpha of a kernel colour used as a line background

    def kernel_colour(self, index: int) -> QColor:
        return QColor(KERNEL_HUES[index % len(KERNEL_HUES)])

    def kernel_line_colour(self, index: int) -> QColor:
        colour = self.kernel_colour(index)
        colour.setAlpha(self.line_alpha)
        return colour

    def error_line_colour(self) -> QColor:
        colour = QColor(self.error)
        colour.setAlpha(self.line_alpha)
        return colour


DARK = Theme(name="dark", pygments_style="one-dark", window="#21252b", base="#282c34", alt_base="#2c313a",
             text="#d7dae0", dim_text="#7f848e", button="#2f343d", highlight="#3d6fb4", highlight_text="#ffffff",
             error="#e06c75", warning="#e5c07b", line_alpha=95)
LIGHT = Theme(name="light", pygments_style="default", window="#eef0f3", base="#ffffff", alt_base="#f5f7fa",
              text="#1f2328", dim_text="#8c959f", button="#e6e9ee", highlight="#2f6fd0", highlight_text="#ffffff",
              error="#cf222e", warning="#9a6700", line_alpha=85)
THEMES = {t.name: t for t in (DARK, LIGHT)}


def palette_for(theme: Theme) -> QPalette:
    p = QPalette()
    roles = {
        QPalette.ColorRole.Window: theme.window, QPalette.ColorRole.WindowText: theme.text,
        QPalette.ColorRole.Base: theme.base, QPalette.ColorRole.AlternateBase: theme.alt_base,
        QPalette.ColorRole.Text: theme.text, QPalette.ColorRole.Button: theme.button,
        QPalette.ColorRole.ButtonText: theme.text, QPalette.ColorRole.Highlight: theme.highlight,
        QPalette.ColorRole.HighlightedText: theme.highlight_text, QPalette.ColorRole.ToolTipBase: theme.alt_base,
        QPalette.ColorRole.ToolTipText: theme.text, QPalette.ColorRole.PlaceholderText: theme.dim_text,
        QPalette.ColorRole.Link: theme.highlight, QPalette.ColorRole.BrightText: theme.error,
    }
    for role, colour in roles.items():
        p.setColor(role, QColor(colour))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText, QPalette.ColorRole.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor(theme.dim_text))
    dark = theme.name == "dark"
    p.setColor(QPalette.ColorRole.Light, QColor(theme.button).lighter(130 if dark else 110))
    p.setColor(QPalette.ColorRole.Midlight, QColor(theme.button).lighter(115 if dark else 105))
    p.setColor(QPalette.ColorRole.Mid, QColor(theme.window).darker(130 if dark else 115))
    p.setColor(QPalette.ColorRole.Dark, QColor(theme.window).darker(160 if dark else 135))
    p.setColor(QPalette.ColorRole.Shadow, QColor("#000000"))
    return p


def stylesheet_for(theme: Theme) -> str:
    border = QColor(theme.window).darker(140 if theme.name == "dark" else 115).name()
    return f"""
    QDockWidget::title {{ background: {theme.window}; padding: 5px 8px; }}
    QTreeView {{ border: none; }}
    QPlainTextEdit {{ border: none; }}
    QTreeView::item {{ padding: 3px 2px; }}
    QHeaderView::section {{ background: {theme.alt_base}; color: {theme.dim_text}; border: none;
                            border-bottom: 1px solid {border}; padding: 4px 6px; }}
    QStatusBar {{ border-top: 1px solid {border}; }}
    QStatusBar::item {{ border: none; }}
    QToolBar {{ border: none; spacing: 4px; padding: 2px 4px; }}
    QMainWindow::separator {{ background: {border}; width: 1px; height: 1px; }}
    QTabBar::tab {{ padding: 5px 12px; }}
    QLineEdit {{ padding: 3px 6px; border: 1px solid {border}; border-radius: 3px; background: {theme.base}; }}
    """


def apply_theme(app: QApplication, theme: Theme) -> None:
    fusion = QStyleFactory.create("Fusion")
    if fusion is not None:
        app.setStyle(fusion)
    app.setPalette(palette_for(theme))
    app.setStyleSheet(stylesheet_for(theme))
