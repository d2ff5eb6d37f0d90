"""Composite ops the catalog does not know are captured through PyTorch's own decompositions (core/decompose.py):
each becomes kernels of the families we generate (no skeleton), verified against the model on the CPU, matching
their references on the emulator, with the user's line kept; ops PyTorch cannot decompose stay explicit
unsupported specs, and graphs without such ops are left exactly as captured."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# (expression over x (5, 6), y (6, 7), v (3, 4), lab (5,) int64 labels < 6), the op PyTorch captures
CASES = {
    "kron": ("torch.kron(v, x[:2, :3])", "kron"),
    "tensordot": ("torch.tensordot(x, y, dims=([1], [0])) * 2", "tensordot"),
    "trace": ("torch.trace(x[:, :5]) + x", "trace"),
    "addr": ("torch.addr(x, x[:, 0], y[:, 1], beta=0.5, alpha=2.0)", "addr"),
    "isclose": ("torch.isclose(x, x * 1.0001, rtol=1e-3).float() + x", "isclose"),
    "deg2rad": ("torch.deg2rad(x) + torch.rad2deg(x)", "deg2rad"),
    "matrix_norm": ("torch.linalg.matrix_norm(x) * x", "linalg_matrix_norm"),
    "renorm": ("torch.renorm(x, 2, 0, 1.5)", "renorm"),
    "multi_dot": ("torch.linalg.multi_dot([x, y, y.T])", "linalg_multi_dot"),
    "multi_margin": ("F.multi_margin_loss(x, lab)", "multi_margin_loss"),
    "sinc": ("torch.sinc(x)", "sinc"),
    "affine_grid": ("F.grid_sample(x.view(1, 1, 5, 6).expand(3, 2, 5, 6), "
                    "F.affine_grid(torch.cat([v, v[:, :2]], 1).view(3, 2, 3) * 0.7, [3, 2, 4, 5], "
                    "align_corners=False), align_corners=False)", "affine_grid_generator"),
}

_INPUTS = ("[torch.randn(5, 6), torch.randn(6, 7), torch.randn(3, 4), torch.randint(0, 6, (5,))]")


def _model(path, expr: str):
    path.write_text(textwrap.dedent(f"""
        import torch, torch.nn as nn, torch.nn.functional as F
        class Model(nn.Module):
            def forward(s, x, y, v, lab):
                return {expr}
        def get_inputs():
            return {_INPUTS}
    """))
    return path


def _analyze(path):
    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file

    graph = capture_file(str(path))
    return graph, analyze_graph(graph, path.name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_composite_op_becomes_generated_kernels(name, tmp_path):
    from kernels.cutile_emulator import check_emulated
    from tilestudio.core.kernels import generate_kernel

    expr, op = CASES[name]
    graph, dec = _analyze(_model(tmp_path / "m.py", expr))
    assert op not in {n.op for n in graph.nodes}, f"{op} was not decomposed"
    assert dec.kernels and not dec.gaps and not any(k.unsupported for k in dec.kernels)
    for spec in dec.kernels:
        assert spec.source_lines == [5], (spec.id, spec.source_lines)  # the user's return line
        source = generate_kernel(spec)
        assert not source.skeleton, source.notes
        result = check_emulated(spec, source)
        assert result.ok, f"{spec.id}: {result.message}"


def test_decomposed_models_verify_against_the_model(tmp_path):
    """One model returning every case: each kernel's reference and the outputs match Model.forward."""
    exprs = ", ".join(e for e, _ in CASES.values())
    path = _model(tmp_path / "all.py", f"({exprs})")
    r = subprocess.run([sys.executable, "-m", "tilestudio", "analyze", str(path), "--verify"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "verify: PASS" in r.stderr, r.stderr[-3000:]


def test_graph_without_uncovered_ops_is_left_as_captured():
    import torch

    from tilestudio.core.decompose import decompose_uncovered, uncovered_ops

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x @ x.T).sum(-1).softmax(0)

    ep = torch.export.export(M(), (torch.randn(4, 4),), strict=False)
    assert uncovered_ops(ep) == set() and decompose_uncovered(ep) is ep


@pytest.mark.parametrize("expr,op", [("torch.histc(x, 10)", "histc"), ("torch.linalg.inv(x[:, :5])", "linalg_inv")])
def test_ops_without_a_usable_decomposition_stay_explicit_unsupported_specs(tmp_path, expr, op):
    """histc has no decomposition; linalg.inv's traces into an error-check op that cannot be a graph value: both
    become one unsupported spec naming the op (a skeleton and a gap), never a capture error."""
    from tilestudio.core.kernels import generate_kernel

    graph, dec = _analyze(_model(tmp_path / "u.py", expr))
    bad = [k for k in dec.kernels if k.unsupported]
    assert [k.operations for k in bad] == [[op]] and dec.gaps
    source = generate_kernel(bad[0])
    assert source.skeleton and op in source.notes[0]
