"""The Kernels pane: one row per kernel spec in execution order (step, id, operations, output shape)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QHeaderView, QLineEdit, QTreeWidgetItem, QVBoxLayout, QWidget

from tilestudio.core.specs import Decomposition, KernelSpec

from .theme import Theme
from .widgets import PlaceholderTree

ID_ROLE = Qt.ItemDataRole.UserRole
COLUMNS = ["Step", "Kernel", "Operations", "Output"]


def shape_text(shape: list[int]) -> str:
    return "×".join(str(d) for d in shape) if shape else "scalar"


def output_text(k: KernelSpec) -> str:
    return ", ".join(shape_text(t.shape) for t in k.outputs) or "—"


def swatch(colour: QColor, size: int = 12) -> QIcon:
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(colour)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawRoundedRect(1, 1, size - 2, size - 2, 3, 3)
    painter.end()
    return QIcon(pixmap)


class KernelsPane(QWidget):
    kernelSelected = Signal(str)  # kernel id, or "" when the selection is cleared

    def __init__(self, theme: Theme, parent: QWidget | None = None):
        super().__init__(parent)
        self.theme = theme
        self.filter = QLineEdit(placeholderText="Filter kernels by id, op or family…", clearButtonEnabled=True)
        self.tree = PlaceholderTree()
        self.tree.set_placeholder("No model open.")
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(COLUMNS)
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.setAllColumnsShowFocus(True)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.ResizeToContents)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 0)
        layout.setSpacing(6)
        layout.addWidget(self.filter)
        layout.addWidget(self.tree)
        self.tree.currentItemChanged.connect(self._on_current_changed)
        self.filter.textChanged.connect(self._apply_filter)
        self._colours: dict[str, int] = {}

    # ---- content -------------------------------------------------------------------------------------------
    def set_decomposition(self, dec: Decomposition | None) -> None:
        self.tree.blockSignals(True)
        self.tree.clear()
        self._colours = {}
        if dec is not None:
            step_of = {kid: i + 1 for i, group in enumerate(dec.parallel_groups) for kid in group}
            for index, k in enumerate(dec.kernels):
                self._colours[k.id] = index
                self.tree.addTopLevelItem(self._item(k, index, step_of.get(k.id)))
        self.tree.blockSignals(False)
        self._apply_filter(self.filter.text())
        self.kernelSelected.emit("")

    def _item(self, k: KernelSpec, index: int, step: int | None) -> QTreeWidgetItem:
        item = QTreeWidgetItem([str(step or ""), k.id, ", ".join(k.operations), output_text(k)])
        item.setData(0, ID_ROLE, k.id)
        item.setIcon(1, swatch(self.theme.kernel_colour(index)))
        item.setTextAlignment(0, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        tip = f"{k.id} ({k.family})\n{k.description}"
        if k.source_lines:
            tip += f"\nsource lines: {', '.join(map(str, k.source_lines))}"
        if k.unsupported:
            tip += "\nno kernel generator yet: an editable skeleton"
            item.setForeground(1, QColor(self.theme.warning))
        for col in range(len(COLUMNS)):
            item.setToolTip(col, tip)
        item.setData(2, Qt.ItemDataRole.UserRole, k.family)
        return item

    def colour_index(self, kernel_id: str) -> int:
        return self._colours.get(kernel_id, 0)

    def kernel_ids(self) -> list[str]:
        return [self.tree.topLevelItem(i).data(0, ID_ROLE) for i in range(self.tree.topLevelItemCount())]

    def count(self) -> int:
        return self.tree.topLevelItemCount()

    # ---- selection -----------------------------------------------------------------------------------------
    def selected_id(self) -> str:
        item = self.tree.currentItem()
        return item.data(0, ID_ROLE) if item is not None else ""

    def select(self, kernel_id: str) -> bool:
        for i in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(i)
            if item.data(0, ID_ROLE) == kernel_id:
                self.tree.setCurrentItem(item)
                self.tree.scrollToItem(item)
                return True
        return False

    def _on_current_changed(self, current: QTreeWidgetItem | None, _previous) -> None:
        self.kernelSelected.emit(current.data(0, ID_ROLE) if current is not None else "")

    def _apply_filter(self, text: str) -> None:
        needle = text.strip().lower()
        for i in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(i)
            haystack = " ".join([item.text(1), item.text(2), str(item.data(2, Qt.ItemDataRole.UserRole))]).lower()
            item.setHidden(bool(needle) and needle not in haystack)
