import os

import pytest

from corpus import BAD_MODELS, MODELS, ROOT, corpus_files  # noqa: F401  (re-exported for fixtures)

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(scope="session")
def analyses():
    """Session cache: model path → (graph, decomposition), captured in-process (our own trusted corpus)."""
    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file

    cache = {}

    def get(path):
        path = str(path)
        if path not in cache:
            graph = capture_file(path)
            cache[path] = (graph, analyze_graph(graph, os.path.basename(path), "0" * 64))
        return cache[path]

    return get


def pytest_collection_modifyitems(config, items):
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except Exception:  # noqa: BLE001
        has_gpu = False
    if has_gpu:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (run with -m gpu on a CUDA machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
