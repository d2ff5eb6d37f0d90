"""TileStudio: PyTorch model → pure cuTile .py workbench."""

__version__ = "0.1.0"
