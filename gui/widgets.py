"""Small widgets shared by the panes."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QResizeEvent
from PySide6.QtWidgets import (QAbstractScrollArea, QStyle, QStyledItemDelegate, QStyleOptionViewItem, QTreeView,
                               QTreeWidget, QWidget)

from .graph_items import theme_for_palette


def paint_placeholder(view: QAbstractScrollArea, text: str) -> None:
    """Draw why an empty view is empty: `text`, word-wrapped at the top of its viewport, in the placeholder colour."""
    painter = QPainter(view.viewport())
    painter.setPen(view.palette().placeholderText().color())
    painter.drawText(view.viewport().rect().adjusted(12, 12, -12, -12),
                     Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWordWrap, text)
    painter.end()


def follow_palette_theme(widget, event: QEvent) -> None:
    """In a widget's changeEvent: the main window switches themes by setting the application palette, so a widget
    that draws with a Theme calls its `set_theme` when the palette now stands for another theme."""
    if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
        theme = theme_for_palette(widget.palette())
        if theme is not widget.theme:
            widget.set_theme(theme)


class WrappingDelegate(QStyledItemDelegate):
    """Row heights that follow word-wrapped text: QTreeView asks for a size hint without the column width."""

    def __init__(self, view: QTreeView):
        super().__init__(view)
        self.view = view

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:  # noqa: N802
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        width = self.view.header().sectionSize(index.column())
        if index.column() == 0 and self.view.rootIsDecorated():
            width -= self.view.indentation()
        opt.rect = QRect(0, 0, max(40, width), 100_000)
        opt.features |= QStyleOptionViewItem.ViewItemFeature.WrapText
        style = self.view.style()
        return style.sizeFromContents(QStyle.ContentsType.CT_ItemViewItem, opt, QSize(), self.view)


class PlaceholderTree(QTreeWidget):
    """A QTreeWidget that says why it is empty instead of showing a blank area."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.placeholder = ""

    def enable_word_wrap(self) -> None:
        self.setWordWrap(True)
        self.setUniformRowHeights(False)
        self.setItemDelegate(WrappingDelegate(self))
        self.header().sectionResized.connect(lambda *_: self.scheduleDelayedItemsLayout())

    def set_placeholder(self, text: str) -> None:
        self.placeholder = text
        self.viewport().update()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt API)
        super().paintEvent(event)
        if self.topLevelItemCount() == 0 and self.placeholder:
            paint_placeholder(self, self.placeholder)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if self.wordWrap():
            self.scheduleDelayedItemsLayout()  # wrapped rows change height with the width
