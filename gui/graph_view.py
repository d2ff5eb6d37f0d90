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

from PySide6.QtCore import QEvent, QObject, QRectF, QSize, Qt, QThreadPool, Signal
from PySide6.QtGui import (QBrush, QColor, QImage, QKeyEvent, QKeySequence, QMouseEvent, QPainter, QPaintEvent,
                           QShortcut, QWheelEvent)
from PySide6.QtWidgets import (QFileDialog, QGraphicsItem, QGraphicsScene, QGraphicsView, QHBoxLayout, QLabel,
                               QLineEdit, QMenu, QMessageBox, QSizePolicy, QToolButton, QVBoxLayout, QWidget)

from tilestudio.core.graph_layout import GraphLayout, decomposition_graph, layered_layout
from tilestudio.core.specs import Decomposition

from .graph_items import (STATUSES, EdgeItem, Fonts, NodeData, NodeItem, node_size, normalise_status,  # noqa: F401
                          status_colour)
from .theme import DARK, Theme
from .widgets import follow_palette_theme, paint_placeholder

SYNC_LAYOUT_MAX_NODES = 150  # above this the layout runs on a worker thread (~40 ms per 150 nodes)
MIN_ZOOM, MAX_ZOOM = 0.05, 4.0


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
        # The automatic zoom fits the width: a vertical scroll bar that came and went would change that width and
        # re-trigger the fit on every resize (an endless show/hide loop at some window sizes). Keep it on.
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
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
            paint_placeholder(self, self.placeholder)


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
        self.fonts = Fonts(self.font())
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
        self.legend.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # clipped when narrow
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
        follow_palette_theme(self, event)
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

