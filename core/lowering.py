"""Rewrites of the captured graph before fusion (recurrent layers into projection + recurrence ops)."""

from __future__ import annotations

from .opgraph import OpGraph


def lower(graph: OpGraph) -> OpGraph:
    return graph
