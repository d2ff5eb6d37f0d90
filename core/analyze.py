"""The analyze pipeline as one call: model file → (OpGraph, Decomposition), used by the CLI, GUI and bench."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from .analyzer import analyze_graph
from .loader import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, ChildResult, capture_graph
from .opgraph import OpGraph
from .specs import Decomposition


@dataclass
class Analysis:
    graph: OpGraph
    decomposition: Decomposition
    capture: ChildResult


def file_sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def analyze_file(path: str, model_name: str | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                 memory_mb: int = DEFAULT_MEMORY_MB) -> Analysis:
    graph, result = capture_graph(path, model_name, timeout_s=timeout_s, memory_mb=memory_mb)
    decomposition = analyze_graph(graph, os.path.basename(path), file_sha256(path))
    return Analysis(graph=graph, decomposition=decomposition, capture=result)


def verify_analysis(path: str, analysis: Analysis, model_name: str | None = None, *,
                    timeout_s: float = DEFAULT_TIMEOUT_S, memory_mb: int = DEFAULT_MEMORY_MB) -> dict:
    """Run the kernel references against the real model on the CPU (child process). Returns the report dict."""
    import json
    import tempfile

    from .loader import run_child

    with tempfile.TemporaryDirectory(prefix="tilestudio-verify-") as tmp:
        bundle = os.path.join(tmp, "bundle.json")
        with open(bundle, "w", encoding="utf-8") as f:
            json.dump({"graph": analysis.graph.model_dump(mode="json"),
                       "decomposition": analysis.decomposition.model_dump(mode="json")}, f)
        extra = ["--decomposition", bundle] + (["--model", model_name] if model_name else [])
        result = run_child("verify", path, extra=extra, timeout_s=timeout_s, memory_mb=memory_mb)
    return result.payload["report"]
