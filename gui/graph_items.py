"""What the Graph pane draws: kernel nodes (card, colour strip, status badge) and dependency edges (smooth curves
with arrow heads), plus the kernel statuses and their colours."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPainterPath, QPalette, QPen, QPolygonF
from PySide6.QtWidgets import QGraphicsItem, QGraphicsPathItem, QStyleOptionGraphicsItem

from tilestudio.core.specs import KernelSpec

from .theme import DARK, LIGHT, THEMES, Theme

if TYPE_CHECKING:
    from .graph_view import GraphPane

# Status → (badge text, colour on dark, colour on light)
STATUSES: dict[str, tuple[str, str, str]] = {
    "none": ("NO KERNEL", "#d29922", "#9a6700"),
    "generated": ("GENERATED", "#8b949e", "#6e7781"),
    "edited": ("EDITED", "#a371f7", "#8250df"),
    "compiled": ("COMPILED", "#39c5cf", "#1b7c83"),
    "pass": ("PASS", "#3fb950", "#1a7f37"),
    "fail": ("FAIL", "#f85149", "#cf222e"),
    "impure": ("IMPURE", "#f0883e", "#bc4c00"),
}
_ALIASES = {"no kernel": "none", "no_kernel": "none", "unsupported": "none", "ok": "pass", "passed": "pass",
            "failed": "fail", "error": "fail"}


def normalise_status(status: str) -> str:
    key = status.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in STATUSES:
        raise ValueError(f"unknown kernel status {status!r} (one of: {', '.join(STATUSES)})")
    return key


def status_colour(status: str, theme: Theme) -> QColor:
    _, dark, light = STATUSES[status]
    return QColor(dark if theme.name == "dark" else light)


def theme_for_palette(palette: QPalette) -> Theme:
    """The theme whose base colour the palette has (apply_theme sets the application palette)."""
    base = palette.base().color()
    theme = next((t for t in THEMES.values() if t.base == base.name()), None)
    return theme or (DARK if base.lightnessF() < 0.5 else LIGHT)


def shape_text(shape: list[int]) -> str:
    return "×".join(str(d) for d in shape) if shape else "scalar"


@dataclass(frozen=True)
class NodeData:
    id: str
    operations: str
    detail: str  # output shape(s) · family
    tooltip: str
    colour_index: int

    @classmethod
    def from_spec(cls, k: KernelSpec, index: int) -> "NodeData":
        outputs = ", ".join(shape_text(t.shape) for t in k.outputs) or "—"
        tip = f"{k.id} ({k.family})\n{k.description}\noutput: {outputs}"
        if k.dependencies:
            tip += f"\nafter: {', '.join(k.dependencies)}"
        if k.source_lines:
            tip += f"\nsource lines: {', '.join(map(str, k.source_lines))}"
        return cls(k.id, " · ".join(k.operations), f"{outputs}  ·  {k.family}", tip, index)


class Fonts:
    def __init__(self, base: QFont):
        self.title = QFont(base)
        self.title.setBold(True)
        self.body = QFont(base)
        self.small = QFont(base)
        self.small.setPointSizeF(max(6.5, base.pointSizeF() * 0.78))
        self.badge = QFont(self.small)
        self.badge.setBold(True)
        self.badge.setLetterSpacing(QFont.SpacingType.PercentageSpacing, 104)
        self.m_title, self.m_body = QFontMetricsF(self.title), QFontMetricsF(self.body)
        self.m_small, self.m_badge = QFontMetricsF(self.small), QFontMetricsF(self.badge)


PAD_X, PAD_Y, LINE_GAP, STRIP = 14.0, 9.0, 3.0, 5.0
MIN_WIDTH, MAX_WIDTH = 170.0, 320.0


def node_size(data: NodeData, fonts: Fonts) -> tuple[float, float]:
    badge = max(fonts.m_badge.horizontalAdvance(text) for text, _, _ in STATUSES.values()) + 14
    title = fonts.m_title.horizontalAdvance(data.id) + 12 + badge
    body = max(fonts.m_body.horizontalAdvance(data.operations), fonts.m_small.horizontalAdvance(data.detail))
    width = min(MAX_WIDTH, max(MIN_WIDTH, max(title, body) + 2 * PAD_X + STRIP))
    height = 2 * PAD_Y + fonts.m_title.height() + fonts.m_body.height() + fonts.m_small.height() + 2 * LINE_GAP
    return math.ceil(width), math.ceil(height)


class NodeItem(QGraphicsItem):
    def __init__(self, data: NodeData, size: tuple[float, float], pane: "GraphPane"):
        super().__init__()
        self.data_ = data
        self.kernel_id = data.id
        self.pane = pane
        self.status = "generated"
        self.match = False
        self.rect = QRectF(0, 0, *size)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable)
        self.setAcceptHoverEvents(True)
        self.setToolTip(data.tooltip)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setZValue(1)
        self._hover = False

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt API)
        return self.rect.adjusted(-5, -5, 5, 5)

    def shape(self) -> QPainterPath:
        path = QPainterPath()
        path.addRoundedRect(self.rect, 7, 7)
        return path

    def hoverEnterEvent(self, event) -> None:  # noqa: N802 (Qt API)
        self._hover = True
        self.update()

    def hoverLeaveEvent(self, event) -> None:  # noqa: N802 (Qt API)
        self._hover = False
        self.update()

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        theme, fonts = self.pane.theme, self.pane.fonts
        dark = theme.name == "dark"
        rect = self.rect
        status = status_colour(self.status, theme)
        hue = theme.kernel_colour(self.data_.colour_index)
        selected = self.isSelected()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)

        if self.match:
            glow = QColor(theme.warning)
            painter.setPen(QPen(glow, 2.4))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(rect.adjusted(-4, -4, 4, 4), 10, 10)
        card = QColor(theme.alt_base if dark else theme.base)
        if self._hover and not selected:
            card = card.lighter(112) if dark else card.darker(103)
        if selected:
            tint = QColor(theme.highlight)
            card = QColor.fromRgbF(card.redF() * 0.82 + tint.redF() * 0.18, card.greenF() * 0.82 + tint.greenF() * 0.18,
                                   card.blueF() * 0.82 + tint.blueF() * 0.18)
        border = QColor(theme.highlight) if selected else QColor(status)
        if not selected:
            border.setAlpha(150 if self.status not in ("generated",) else 90)
        path = QPainterPath()
        path.addRoundedRect(rect, 7, 7)
        painter.fillPath(path, card)
        painter.save()
        painter.setClipPath(path)
        painter.fillRect(QRectF(rect.left(), rect.top(), STRIP, rect.height()), hue)
        painter.restore()
        painter.setPen(QPen(border, 2.2 if selected else 1.2))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRoundedRect(rect.adjusted(0.5, 0.5, -0.5, -0.5), 7, 7)

        # status badge, top right
        label = STATUSES[self.status][0]
        bw = fonts.m_badge.horizontalAdvance(label) + 12
        bh = fonts.m_badge.height() + 3
        badge = QRectF(rect.right() - PAD_X + 4 - bw, rect.top() + PAD_Y - 1, bw, bh)
        fill = QColor(status)
        fill.setAlpha(0 if self.status == "generated" else (55 if dark else 38))
        painter.setPen(Qt.PenStyle.NoPen if self.status != "generated" else QPen(QColor(theme.dim_text), 0.8))
        painter.setBrush(fill)
        painter.drawRoundedRect(badge.adjusted(0.5, 0.5, -0.5, -0.5), bh / 2, bh / 2)
        painter.setPen(status)
        painter.setFont(fonts.badge)
        painter.drawText(badge, Qt.AlignmentFlag.AlignCenter, label)

        x = rect.left() + STRIP + PAD_X - 2
        y = rect.top() + PAD_Y
        text_w = badge.left() - x - 6
        painter.setPen(QColor(theme.text))
        painter.setFont(fonts.title)
        painter.drawText(QRectF(x, y, text_w, fonts.m_title.height()), Qt.AlignmentFlag.AlignVCenter,
                         fonts.m_title.elidedText(self.data_.id, Qt.TextElideMode.ElideRight, text_w))
        y += fonts.m_title.height() + LINE_GAP
        full_w = rect.right() - PAD_X - x
        painter.setFont(fonts.body)
        painter.setPen(QColor(theme.text).darker(115) if dark else QColor(theme.text).lighter(140))
        painter.drawText(QRectF(x, y, full_w, fonts.m_body.height()), Qt.AlignmentFlag.AlignVCenter,
                         fonts.m_body.elidedText(self.data_.operations, Qt.TextElideMode.ElideRight, full_w))
        y += fonts.m_body.height() + LINE_GAP
        painter.setFont(fonts.small)
        painter.setPen(QColor(theme.dim_text))
        painter.drawText(QRectF(x, y, full_w, fonts.m_small.height()), Qt.AlignmentFlag.AlignVCenter,
                         fonts.m_small.elidedText(self.data_.detail, Qt.TextElideMode.ElideRight, full_w))


class EdgeItem(QGraphicsPathItem):
    ARROW = 7.0

    def __init__(self, source: str, target: str, points: tuple[tuple[float, float], ...], pane: "GraphPane"):
        super().__init__()
        self.source, self.target, self.pane = source, target, pane
        self.points = [QPointF(x, y) for x, y in points]
        self.active = False
        self.setPath(self._smooth_path(self.points))
        self.setZValue(0)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)

    def _smooth_path(self, pts: list[QPointF]) -> QPainterPath:
        path = QPainterPath(pts[0])
        end = QPointF(pts[-1].x(), pts[-1].y() - self.ARROW)  # stop at the arrow's base
        pts = pts[:-1] + [end]
        for a, b in zip(pts, pts[1:]):
            if abs(a.x() - b.x()) < 0.5:
                path.lineTo(b)
            else:
                dy = (b.y() - a.y()) * 0.5
                path.cubicTo(QPointF(a.x(), a.y() + dy), QPointF(b.x(), b.y() - dy), b)
        return path

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt API)
        return super().boundingRect().adjusted(-self.ARROW, -self.ARROW, self.ARROW, self.ARROW * 2)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        theme = self.pane.theme
        colour = QColor(theme.highlight) if self.active else QColor(theme.dim_text)
        if not self.active:
            colour.setAlpha(170)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(colour, 2.0 if self.active else 1.3))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawPath(self.path())
        tip = self.points[-1]
        a = self.ARROW
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(colour)
        painter.drawPolygon(QPolygonF([tip, QPointF(tip.x() - a * 0.6, tip.y() - a), QPointF(tip.x() + a * 0.6,
                                                                                           tip.y() - a)]))
