"""The Model pane: what the analysed model takes, returns and holds (inputs, outputs, parameters, glue)."""

from __future__ import annotations

from collections import Counter

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QHeaderView, QTreeWidgetItem, QWidget

from tilestudio.core.specs import Decomposition, TensorSpec

from .kernels_pane import shape_text
from .widgets import PlaceholderTree

_BYTES = {"float64": 8, "int64": 8, "complex64": 8, "float32": 4, "int32": 4, "float16": 2, "bfloat16": 2,
          "int16": 2, "int8": 1, "uint8": 1, "bool": 1}


def _numel(t: TensorSpec) -> int:
    n = 1
    for d in t.shape:
        n *= d
    return n


def _human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


class ModelPane(PlaceholderTree):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setColumnCount(3)
        self.setHeaderLabels(["Name", "Shape", "dtype"])
        self.setUniformRowHeights(True)
        self.placeholder = "No model open."
        header = self.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)

    def set_decomposition(self, dec: Decomposition | None) -> None:
        self.clear()
        if dec is None:
            return
        out_specs = {t.graph_value: t for k in dec.kernels for t in k.outputs if t.graph_value}
        tensors = [t for t in dec.parameters if t.role in ("parameter", "buffer")]
        numel = sum(_numel(t) for t in tensors)
        nbytes = sum(_numel(t) * _BYTES.get(t.dtype, 4) for t in tensors)
        self._section(f"{dec.model_class} ({dec.model_file})", [], expanded=False)
        self._section(f"Inputs ({len(dec.inputs)})", [self._tensor_row(t.source or t.name, t) for t in dec.inputs])
        outputs = []
        for value in dec.outputs:
            spec = out_specs.get(dec.resolve(value))
            outputs.append([value, shape_text(spec.shape) if spec else "", spec.dtype if spec else ""])
        self._section(f"Outputs ({len(outputs)})", outputs)
        self._section(f"Parameters ({len(tensors)} tensors, {numel:,} values, {_human_bytes(nbytes)})",
                      [self._tensor_row(t.source or t.name, t) for t in tensors], expanded=len(tensors) <= 12)
        families = Counter(k.family for k in dec.kernels)
        self._section(f"Kernel families ({len(families)})",
                      [[family, f"× {count}", ""] for family, count in families.most_common()])
        glue = Counter(g.op for g in dec.glue)
        self._section(f"Glue steps ({len(dec.glue)})", [[op, f"× {count}", ""] for op, count in glue.most_common()],
                      expanded=False)

    @staticmethod
    def _tensor_row(name: str, t: TensorSpec) -> list[str]:
        if t.role == "scalar":
            return [name, repr(t.value), t.dtype]
        return [name, shape_text(t.shape), t.dtype]

    def _section(self, title: str, rows: list[list[str]], expanded: bool = True) -> None:
        item = QTreeWidgetItem([title])
        font = QFont(item.font(0))
        font.setBold(True)
        item.setFont(0, font)
        item.setFirstColumnSpanned(True)
        item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsSelectable)
        self.addTopLevelItem(item)
        item.setFirstColumnSpanned(True)
        for row in rows:
            child = QTreeWidgetItem(row)
            child.setToolTip(0, row[0])
            item.addChild(child)
        item.setExpanded(expanded)
