"""The Graph pane: the kernel specs as a layered DAG (core/graph_layout.py), coloured by status.

A node shows the kernel id, its operations and its output shape, a strip in the kernel's colour (the same as in
the Kernels pane and the Source gutter) and a status badge other panes set through `set_status(kernel_id,
status)`: no kernel, generated, edited, compiled, PASS, FAIL, impure. Wheel or Ctrl+/Ctrl- zoom, drag pans, F fits,
Ctrl+F finds (matches are ringed, the rest dimmed, Enter goes to the next), and the picture exports as PNG or SVG.
Big graphs are laid out on a worker thread so the window never stalls.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, QPointF, QRectF, QSize, Qt, QThreadPool, Signal
from PySide6.QtGui import (QBrush, QColor, QFont, QFontMetricsF, QImage, QKeyEvent, QKeySequence, QMouseEvent,
                           QPainter, QPainterPath, QPaintEvent, QPalette, QPen, QPolygonF, QShortcut, QWheelEvent)
from PySide6.QtWidgets import (QApplication, QFileDialog, QGraphicsItem, QGraphicsPathItem, QGraphicsScene,
                               QGraphicsView, QHBoxLayout, QLabel, QLineEdit, QMenu, QMessageBox,
                               QStyleOptionGraphicsItem, QToolButton, QVBoxLayout, QWidget)

from tilestudio.core.graph_layout import GraphLayout, decomposition_graph, layered_layout
from tilestudio.core.specs import Decomposition, KernelSpec

from .theme import DARK, LIGHT, THEMES, Theme

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
SYNC_LAYOUT_MAX_NODES = 150  # above this the layout runs on a worker thread (~40 ms per 150 nodes)
MIN_ZOOM, MAX_ZOOM = 0.05, 4.0


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


class _Fonts:
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


def node_size(data: NodeData, fonts: _Fonts) -> tuple[float, float]:
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


class GraphView(QGraphicsView):
    """Wheel zooms under the cursor, dragging the background pans, F fits."""

    nodeActivated = Signal(str)  # double-click
    zoomChanged = Signal(float)

    def __init__(self, scene: QGraphicsScene, parent: QWidget | None = None):
        super().__init__(scene, parent)
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing
                            | QPainter.RenderHint.SmoothPixmapTransform)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setFrameShape(QGraphicsView.Shape.NoFrame)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.placeholder = "No model open."
        # Until the user zooms, the graph fills the pane's width (readable; tall graphs scroll) and follows resizes.
        self.auto_zoom = True
        self.focus_item: QGraphicsItem | None = None  # kept in view by the automatic zoom

    def zoom(self) -> float:
        return self.transform().m11()

    def set_zoom(self, factor: float, anchor_under_mouse: bool = False) -> None:
        factor = max(MIN_ZOOM, min(MAX_ZOOM, factor))
        current = self.zoom()
        if current <= 0 or abs(factor - current) < 1e-9:
            return
        previous = self.transformationAnchor()
        if not anchor_under_mouse:
            self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.scale(factor / current, factor / current)
        self.setTransformationAnchor(previous)
        self.zoomChanged.emit(self.zoom())

    def zoom_by(self, step: float, anchor_under_mouse: bool = False) -> None:
        self.auto_zoom = False
        self.set_zoom(self.zoom() * step, anchor_under_mouse)

    def fit_width(self) -> None:
        """Fill the width (at most 100 %), then show the focus item or the top of the graph."""
        rect = self.sceneRect() if self.scene().items() else QRectF()
        if rect.isEmpty():
            return
        viewport = self.viewport().rect()
        self.set_zoom(min(1.0, max(MIN_ZOOM, (viewport.width() - 2) / rect.width())))
        if self.focus_item is not None and self.focus_item.scene() is self.scene():
            self.centerOn(self.focus_item)
        else:
            self.centerOn(rect.center().x(), rect.top() + viewport.height() / (2 * self.zoom()))

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if self.auto_zoom:
            self.fit_width()

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt API)
        if self.itemAt(event.position().toPoint()) is None:
            self.auto_zoom = False  # panning: the user takes over
        super().mousePressEvent(event)

    def fit(self) -> None:
        rect = self.sceneRect() if self.scene().items() else QRectF()
        if rect.isEmpty():
            return
        self.auto_zoom = False
        self.fitInView(rect, Qt.AspectRatioMode.KeepAspectRatio)
        if self.zoom() > 1.0:  # a small graph is shown at 100 %, not blown up
            self.set_zoom(1.0)
        self.centerOn(rect.center())
        self.zoomChanged.emit(self.zoom())

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802 (Qt API)
        delta = event.angleDelta().y()
        if delta == 0:
            return super().wheelEvent(event)
        if not event.modifiers() & Qt.KeyboardModifier.ControlModifier and event.pixelDelta().y() != 0:
            return super().wheelEvent(event)  # a touchpad scrolls; Ctrl+touchpad or a mouse wheel zooms
        self.zoom_by(1.0015 ** delta, anchor_under_mouse=True)
        event.accept()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt API)
        if event.key() == Qt.Key.Key_F and event.modifiers() in (Qt.KeyboardModifier.NoModifier,
                                                                   Qt.KeyboardModifier.KeypadModifier):
            self.fit()
            return
        if event.key() == Qt.Key.Key_F and event.modifiers() == Qt.KeyboardModifier.ShiftModifier:
            self.auto_zoom = True
            self.fit_width()
            return
        super().keyPressEvent(event)

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt API)
        item = self.itemAt(event.position().toPoint())
        while item is not None and not isinstance(item, NodeItem):
            item = item.parentItem()
        if isinstance(item, NodeItem):
            self.nodeActivated.emit(item.kernel_id)
            event.accept()
            return
        super().mouseDoubleClickEvent(event)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt API)
        super().paintEvent(event)
        if not self.scene().items() and self.placeholder:
            painter = QPainter(self.viewport())
            painter.setPen(self.palette().placeholderText().color())
            painter.drawText(self.viewport().rect().adjusted(12, 12, -12, -12),
                             Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWordWrap,
                             self.placeholder)
            painter.end()


class _LayoutDone(QObject):
    done = Signal(int, object)  # request, GraphLayout


class GraphPane(QWidget):
    """The Graph dock's widget. Selecting a node emits `kernelSelected`; double-clicking emits `kernelActivated`."""

    kernelSelected = Signal(str)
    kernelActivated = Signal(str)
    layoutReady = Signal()

    def __init__(self, theme: Theme = DARK, parent: QWidget | None = None):
        super().__init__(parent)
        self.theme = theme
        self.fonts = _Fonts(self.font())
        self.scene = QGraphicsScene(self)
        self.view = GraphView(self.scene)
        self.nodes: dict[str, NodeItem] = {}
        self.edges: list[EdgeItem] = []
        self.layout_result: GraphLayout | None = None
        self._statuses: dict[str, str] = {}
        self._sha = ""
        self._data: list[NodeData] = []
        self._matches: list[str] = []
        self._match_index = -1
        self._request = 0
        self._selecting = False
        self._want_selected = ""  # selected once the pending layout is shown
        self.model_name = "graph"
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)
        self._signals = _LayoutDone(self)
        self._signals.done.connect(self._on_layout_done, Qt.ConnectionType.QueuedConnection)
        self._build_toolbar()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.toolbar)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.legend)
        self.scene.selectionChanged.connect(self._on_selection_changed)
        self.view.nodeActivated.connect(self.kernelActivated)
        self.view.zoomChanged.connect(lambda z: self.zoom_label.setText(f"{round(z * 100)} %"))
        self._apply_theme()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        return QSize(440, 560)  # the dock shares its column with Spec: ask for the larger part

    # ---- toolbar -------------------------------------------------------------------------------------------
    def _build_toolbar(self) -> None:
        self.toolbar = QWidget()
        self.toolbar.setObjectName("graphToolbar")
        self.find_box = QLineEdit(placeholderText="Find kernel (Ctrl+F)…", clearButtonEnabled=True)
        self.find_box.textChanged.connect(self.find)
        self.find_box.returnPressed.connect(self.find_next)
        self.find_box.installEventFilter(self)
        self.match_label = QLabel("")
        self.match_label.setMinimumWidth(44)

        def button(text: str, tip: str, slot) -> QToolButton:
            b = QToolButton(text=text, toolTip=tip, autoRaise=True)
            b.clicked.connect(slot)
            return b

        self.zoom_out_button = button("−", "Zoom out (Ctrl+-)", lambda: self.view.zoom_by(1 / 1.25))
        self.zoom_label = QLabel("100 %")
        self.zoom_label.setMinimumWidth(44)
        self.zoom_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.zoom_in_button = button("+", "Zoom in (Ctrl++)", lambda: self.view.zoom_by(1.25))
        self.fit_button = button("Fit", "Fit the whole graph (F); Shift+F fits the width", self.fit)
        self.export_button = QToolButton(text="Export", toolTip="Save the graph as PNG or SVG", autoRaise=True)
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.export_button)
        menu.addAction("PNG image…", lambda: self._export_dialog("png"))
        menu.addAction("SVG drawing…", lambda: self._export_dialog("svg"))
        self.export_button.setMenu(menu)
        self.legend = QLabel()
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setContentsMargins(8, 3, 8, 4)
        row = QHBoxLayout(self.toolbar)
        row.setContentsMargins(6, 6, 6, 4)
        row.setSpacing(4)
        row.addWidget(self.find_box, 1)
        row.addWidget(self.match_label)
        row.addSpacing(6)
        for w in (self.zoom_out_button, self.zoom_label, self.zoom_in_button, self.fit_button, self.export_button):
            row.addWidget(w)
        scope = Qt.ShortcutContext.WidgetWithChildrenShortcut
        shortcuts = [(QKeySequence.StandardKey.Find, self.focus_find),
                     (QKeySequence.StandardKey.ZoomIn, lambda: self.view.zoom_by(1.25)),
                     (QKeySequence("Ctrl+="), lambda: self.view.zoom_by(1.25)),
                     (QKeySequence.StandardKey.ZoomOut, lambda: self.view.zoom_by(1 / 1.25)),
                     (QKeySequence("Ctrl+0"), lambda: self.view.zoom_by(1.0 / self.view.zoom()))]
        self.shortcuts = []
        for key, slot in shortcuts:
            shortcut = QShortcut(key, self, context=scope)
            shortcut.activated.connect(slot)
            self.shortcuts.append(shortcut)

    def focus_find(self) -> None:
        self.find_box.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.find_box.selectAll()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if obj is self.find_box and event.type() == QEvent.Type.KeyPress and event.key() == Qt.Key.Key_Escape:
            self.find_box.clear()
            self.view.setFocus()
            return True
        return super().eventFilter(obj, event)

    # ---- theme ---------------------------------------------------------------------------------------------
    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self._apply_theme()

    def _apply_theme(self) -> None:
        self.view.setBackgroundBrush(QBrush(QColor(self.theme.base)))
        parts = []
        for key in ("generated", "edited", "compiled", "pass", "fail", "impure", "none"):
            colour = status_colour(key, self.theme).name()
            parts.append(f"<span style='color:{colour}'>●</span>&nbsp;{STATUSES[key][0].lower()}")
        self.legend.setText(f"<span style='color:{self.theme.dim_text}'>{'&nbsp;&nbsp;'.join(parts)}</span>")
        self.scene.update()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt API)
        # The main window switches themes by setting the application palette: follow it.
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            theme = theme_for_palette(self.palette())
            if theme is not self.theme:
                self.set_theme(theme)
        super().changeEvent(event)

    # ---- content -------------------------------------------------------------------------------------------
    def set_decomposition(self, dec: Decomposition | None, model_name: str = "", selected: str = "") -> None:
        self._request += 1
        self._want_selected = selected or self.selected_id() or self._want_selected
        if dec is None:
            self._clear()
            self._data = []
            self.view.placeholder = "No kernels."
            return
        if dec.model_sha256 != self._sha:
            self._statuses = {}
        self._sha = dec.model_sha256
        self.model_name = model_name or dec.model_file.rsplit(".", 1)[0] or "graph"
        self._data = [NodeData.from_spec(k, i) for i, k in enumerate(dec.kernels)]
        self._statuses = {k.id: self._statuses.get(k.id, "none" if k.unsupported else "generated")
                          for k in dec.kernels}
        nodes, edges = decomposition_graph(dec)
        sizes = {d.id: node_size(d, self.fonts) for d in self._data}
        if len(nodes) <= SYNC_LAYOUT_MAX_NODES:
            self._on_layout_done(self._request, _compute_layout(nodes, edges, sizes))
        else:
            self.view.placeholder = f"Laying out {len(nodes)} kernels…"
            self._clear()
            self.pool.start(functools.partial(self._layout_in_worker, self._request, nodes, edges, sizes))

    def _layout_in_worker(self, request: int, nodes, edges, sizes) -> None:
        result = _compute_layout(nodes, edges, sizes)
        try:
            self._signals.done.emit(request, result)
        except RuntimeError:
            pass  # the pane went away while we worked

    def _on_layout_done(self, request: int, layout: GraphLayout) -> None:
        if request != self._request:
            return
        selected = self._want_selected
        self._clear()
        self.layout_result = layout
        data = {d.id: d for d in self._data}
        for route in layout.edges:
            edge = EdgeItem(route.source, route.target, route.points, self)
            self.scene.addItem(edge)
            self.edges.append(edge)
        for nid, box in layout.nodes.items():
            item = NodeItem(data[nid], (box.width, box.height), self)
            item.status = self._statuses.get(nid, "generated")
            item.setPos(box.x, box.y)
            self.scene.addItem(item)
            self.nodes[nid] = item
        self.scene.setSceneRect(QRectF(-24, -24, layout.width + 48, layout.height + 48))
        self.view.placeholder = ""
        if selected:
            self.select(selected)
        self.find(self.find_box.text())
        self.view.resetTransform()
        self.view.auto_zoom = True
        self.view.focus_item = self.nodes.get(selected)
        self.view.fit_width()
        self.layoutReady.emit()

    def _clear(self) -> None:
        self._selecting = True
        try:
            self.scene.clear()
        finally:
            self._selecting = False
        self.nodes, self.edges, self.layout_result = {}, [], None
        self._matches, self._match_index = [], -1

    def wait(self, timeout_ms: int = -1) -> bool:
        """Block until a layout running on the worker has finished (tests, shutdown)."""
        return self.pool.waitForDone(timeout_ms)

    # ---- status --------------------------------------------------------------------------------------------
    def set_status(self, kernel_id: str, status: str) -> bool:
        """Colour a kernel's node: none/"no kernel", generated, edited, compiled, pass, fail, impure.

        Returns False when the kernel is not in the graph (the status is still remembered for the next layout).
        """
        key = normalise_status(status)
        self._statuses[kernel_id] = key
        item = self.nodes.get(kernel_id)
        if item is None:
            return False
        item.status = key
        item.update()
        return True

    def status(self, kernel_id: str) -> str | None:
        return self._statuses.get(kernel_id)

    def statuses(self) -> dict[str, str]:
        return dict(self._statuses)

    # ---- selection -----------------------------------------------------------------------------------------
    def selected_id(self) -> str:
        items = [i for i in self.scene.selectedItems() if isinstance(i, NodeItem)]
        return items[0].kernel_id if items else ""

    def select(self, kernel_id: str) -> bool:
        """Select a node without emitting `kernelSelected` (the caller already knows) and bring it into view."""
        item = self.nodes.get(kernel_id)
        self._want_selected = kernel_id
        self._selecting = True
        try:
            self.scene.clearSelection()
            if item is not None:
                item.setSelected(True)
        finally:
            self._selecting = False
        self._update_edges()
        if item is not None:
            self.view.focus_item = item
            self.view.ensureVisible(item, 40, 40)
        return item is not None

    def _on_selection_changed(self) -> None:
        if self._selecting:
            return
        self._update_edges()
        kid = self.selected_id()
        if kid:
            self._want_selected = kid
            self.kernelSelected.emit(kid)

    def _update_edges(self) -> None:
        kid = self.selected_id()
        for edge in self.edges:
            active = bool(kid) and kid in (edge.source, edge.target)
            if active != edge.active:
                edge.active = active
                edge.setZValue(0.5 if active else 0)
                edge.update()

    # ---- find, zoom ----------------------------------------------------------------------------------------
    def find(self, text: str) -> int:
        """Ring the nodes whose id, operations or family contain `text`, dim the rest, centre the first."""
        needle = text.strip().lower()
        self._matches = []
        for d in self._data:
            item = self.nodes.get(d.id)
            if item is None:
                continue
            hit = bool(needle) and needle in f"{d.id} {d.operations} {d.detail}".lower()
            item.match = hit
            item.setOpacity(1.0 if hit or not needle else 0.28)
            item.update()
            if hit:
                self._matches.append(d.id)
        for edge in self.edges:
            edge.setOpacity(1.0 if not needle else 0.25)
        self._match_index = -1
        if self._matches:
            self.find_next()
        else:
            self.match_label.setText("no match" if needle else "")
        return len(self._matches)

    def find_next(self) -> str:
        if not self._matches:
            return ""
        self._match_index = (self._match_index + 1) % len(self._matches)
        kid = self._matches[self._match_index]
        self.view.centerOn(self.nodes[kid])
        self.match_label.setText(f"{self._match_index + 1}/{len(self._matches)}")
        return kid

    def matches(self) -> list[str]:
        return list(self._matches)

    def fit(self) -> None:
        self.view.fit()

    def zoom(self) -> float:
        return self.view.zoom()

    # ---- export --------------------------------------------------------------------------------------------
    def _export_rect(self) -> QRectF:
        if not self.nodes:
            return QRectF()
        return self.scene.itemsBoundingRect().adjusted(-24, -24, 24, 24)

    def export_png(self, path: str, scale: float = 2.0) -> bool:
        rect = self._export_rect()
        if rect.isEmpty():
            return False
        size = QSize(max(1, math.ceil(rect.width() * scale)), max(1, math.ceil(rect.height() * scale)))
        image = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
        image.setDevicePixelRatio(1.0)
        image.fill(QColor(self.theme.base))
        painter = QPainter(image)
        painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.scene.render(painter, QRectF(0, 0, size.width(), size.height()), rect)
        painter.end()
        return image.save(path, "PNG")

    def export_svg(self, path: str) -> bool:
        from PySide6.QtSvg import QSvgGenerator  # in PySide6-Essentials

        rect = self._export_rect()
        if rect.isEmpty():
            return False
        generator = QSvgGenerator()
        generator.setFileName(path)
        generator.setSize(QSize(math.ceil(rect.width()), math.ceil(rect.height())))
        generator.setViewBox(QRectF(0, 0, rect.width(), rect.height()))
        generator.setTitle(f"{self.model_name}: kernel graph")
        generator.setDescription("Kernel specs and their dependencies, exported from TileStudio")
        painter = QPainter(generator)
        painter.fillRect(QRectF(0, 0, rect.width(), rect.height()), QColor(self.theme.base))
        self.scene.render(painter, QRectF(0, 0, rect.width(), rect.height()), rect)
        ok = painter.end()
        return ok

    def _export_dialog(self, kind: str) -> None:
        if not self.nodes:
            return
        caption = "Export graph as PNG" if kind == "png" else "Export graph as SVG"
        filters = "PNG image (*.png)" if kind == "png" else "SVG drawing (*.svg)"
        path, _ = QFileDialog.getSaveFileName(self, caption, f"{self.model_name}_kernels.{kind}", filters)
        if not path:
            return
        if not path.lower().endswith(f".{kind}"):
            path += f".{kind}"
        ok = self.export_png(path) if kind == "png" else self.export_svg(path)
        if not ok:
            QMessageBox.warning(self, "Export failed", f"Could not write {path}.")


def _compute_layout(nodes, edges, sizes) -> GraphLayout:
    return layered_layout(nodes, edges, sizes, layer_gap=40.0, node_gap=24.0, margin=0.0)

