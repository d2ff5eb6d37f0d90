"""Every corpus model's composed file, run whole on the CPU emulator (tests/kernels/composed_emulator.py): the
launch wrappers, glue and kernels exactly as composed, against the user's model, called twice (the second call
reads the cached forward-invariant values); and the caching itself on models that build constants in forward."""

from __future__ import annotations

import pytest
import torch

from corpus import corpus_files
from kernels.composed_emulator import run_composed

MODELS = [p for p in corpus_files() if not p.name.startswith("big_")]


def _composed(path, analyses):
    from tilestudio.core.composer import compose_model

    return compose_model(str(path), analyses(path)[1]).text


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_composed_file_matches_the_model_on_the_emulator(path, analyses):
    run = run_composed(_composed(path, analyses))
    for call, outputs in enumerate(run.outputs):
        assert len(outputs) == len(run.reference)
        for i, (out, ref) in enumerate(zip(outputs, run.reference)):
            assert out.shape == ref.shape and out.dtype == ref.dtype, (call, i, out.shape, ref.shape)
            if ref.is_floating_point():
                assert torch.allclose(out, ref, atol=1e-4, rtol=1e-4), (call, i, run.max_diff(call))
            else:
                assert torch.equal(out, ref), (call, i)
    assert len(run.launches[1]) <= len(run.launches[0])


@pytest.mark.parametrize("name,hoisted", [
    ("arch_spatial_transformer", ["pad", "pad_2", "pad_3", "add"]),  # F.affine_grid's base grid
    ("arch_rotary_causal_mask_in_forward", ["div_pow_reciprocal_mul", "outer", "cos", "sin"]),  # rotary table
])
def test_forward_invariant_kernels_run_once(name, hoisted, analyses):
    """Kernels computed from shapes and constants alone launch on the first forward only; the rest every time."""
    from tilestudio.core.invariant import invariant_steps

    path = next(p for p in MODELS if p.stem == name)
    dec = analyses(path)[1]
    assert [s.split(":", 1)[1] for s in invariant_steps(dec) if s.startswith("kernel:")] == hoisted
    run = run_composed(_composed(path, analyses), calls=3)
    first, later = run.launches[0], run.launches[1]
    assert sorted(set(first) - set(later)) == sorted(f"{k}_kernel" for k in hoisted)
    assert run.launches[2] == later and len(first) - len(later) == len(hoisted)
    assert all(run.max_diff(c) < 1e-4 for c in range(3))


def test_models_without_invariant_kernels_compose_as_before(analyses):
    """No kernel is hoisted where every kernel reads an input or a parameter: no cache in the file."""
    path = next(p for p in MODELS if p.stem == "arch_transformer_encoder_block")
    text = _composed(path, analyses)
    assert "self.invariant" not in text
