"""Every corpus model: capture → analyze → complete → references verified against the real model on the CPU."""

import json
import os

import pytest

from corpus import corpus_files

MODELS = [p for p in corpus_files() if not p.name.startswith("big_")]


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_model_analyzes_completely_and_verifies(path, analyses, tmp_path):
    from tilestudio.core.verify_run import verify_file

    graph, dec = analyses(path)
    assert dec.kernels, "every corpus model has compute"
    assert dec.gaps == []
    covered = {e.node for e in dec.completeness}
    compute = {n.name for n in graph.nodes if n.target != "getitem"}
    assert compute <= covered, f"ops missing from the completeness check: {compute - covered}"
    for entry in dec.completeness:
        if not entry.glue and not entry.eliminated:
            assert set(entry.kernel.split(", ")) <= set(dec.execution_order)
    # dependencies are respected by the execution order
    position = {k: i for i, k in enumerate(dec.execution_order)}
    for k in dec.kernels:
        assert all(position[d] < position[k.id] for d in k.dependencies)

    bundle = tmp_path / "bundle.json"
    bundle.write_text(json.dumps({"graph": graph.model_dump(mode="json"),
                                  "decomposition": dec.model_dump(mode="json")}))
    report = verify_file(str(path), None, str(bundle))
    assert report["ok"], report


def test_corpus_has_the_required_breadth():
    names = [p.name for p in corpus_files()]
    assert len(names) >= 45
    assert sum(n.startswith("fused_") for n in names) >= 20
    assert sum(n.startswith("arch_") for n in names) >= 8
    assert any(n.startswith("big_") for n in names)


def test_references_are_self_contained(analyses):
    """Each kernel reference runs with only `torch` in scope (no other kernel, no model)."""
    import torch

    graph, dec = analyses(corpus_files("arch_resnet")[0])
    for k in dec.kernels:
        namespace = {"torch": torch}
        exec(compile(k.reference, k.id, "exec"), namespace)  # noqa: S102
        args = []
        for t in k.inputs:
            dtype = getattr(torch, t.dtype)
            args.append(torch.randn(t.shape, dtype=dtype) if dtype.is_floating_point
                        else torch.zeros(t.shape, dtype=dtype))
        out = namespace[k.reference_name](*args)
        outs = out if len(k.outputs) > 1 else (out,)
        for spec, value in zip(k.outputs, outs):
            assert list(value.shape) == spec.shape
            assert str(value.dtype).removeprefix("torch.") == spec.dtype


def test_child_peak_rss_is_its_own():
    """A child's peak RSS must not inherit its parent's: ru_maxrss survives execve, so a child spawned by a large
    process (the test runner after the emulated kernels, the GUI) reported the parent's resident set."""
    import subprocess
    import sys

    import torch

    ballast = torch.ones(150_000_000)  # ~600 MB resident in this process
    ballast += 1
    code = "from tilestudio.core.child import _peak_rss_mb; print(_peak_rss_mb())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    del ballast
    assert float(out) < 300


def test_big_model_is_analyzed_on_meta_quickly_and_cheaply():
    """The ~20 GB model goes through the real child path: well under a second of work and < 1 GB peak."""
    from tilestudio.core.analyze import analyze_file

    path = corpus_files("big_")[0]
    analysis = analyze_file(str(path))
    assert len(analysis.decomposition.kernels) >= 2
    assert analysis.capture.timings["work_s"] < 1.0
    assert analysis.capture.peak_rss_mb < 1024
    assert os.path.basename(str(path)) == analysis.decomposition.model_file
