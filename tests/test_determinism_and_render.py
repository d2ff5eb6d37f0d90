"""Same model in → byte-identical specs; the text renderer follows the seed's format."""

import subprocess
import sys

from corpus import MODELS


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "tilestudio", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def test_analyze_twice_gives_identical_text_and_json(tmp_path):
    model = MODELS / "arch_unet_step.py"
    runs = [_cli("analyze", str(model), "--format", fmt) for fmt in ("json", "json", "text", "text")]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    assert runs[0].stdout == runs[1].stdout
    assert runs[2].stdout == runs[3].stdout
    # the absolute location of the file does not leak into the specs
    copy = tmp_path / "arch_unet_step.py"
    copy.write_bytes(model.read_bytes())
    assert _cli("analyze", str(copy), "--format", "json").stdout == runs[0].stdout


def test_text_follows_the_seed_structure(analyses):
    from tilestudio.core.render_text import render_text

    _, dec = analyses(MODELS / "fused_gemm_gelu_residual.py")
    text = render_text(dec)
    order = ["## Decomposition Summary", "Total kernels:", "Parallel groups:", "Execution order:",
             "## Kernel Specifications", "KERNEL SPEC:", "Description:", "Operations: [", "Inputs:", "Outputs:",
             "Dependencies:", "PyTorch Reference:", "def reference_", "Notes:", "## Composition Notes",
             "End-to-end PyTorch reference:", "## Completeness Check", "Original forward-pass ops:",
             "Covered by kernel specs:", "Gaps: NONE"]
    positions = [text.index(marker) for marker in order]
    assert positions == sorted(positions)


def test_json_round_trips(analyses):
    from tilestudio.core.specs import Decomposition

    _, dec = analyses(MODELS / "arch_resnet_basic_block.py")
    assert Decomposition.model_validate_json(dec.model_dump_json()) == dec


def test_verify_cli_passes_and_writes_output_file(tmp_path):
    out = tmp_path / "specs.txt"
    r = _cli("analyze", str(MODELS / "arch_swiglu_mlp.py"), "--verify", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "verify: PASS" in r.stderr
    assert out.read_text().startswith("## Decomposition Summary")


def test_verify_names_the_first_diverging_kernel(tmp_path, analyses):
    """Corrupt one kernel's reference: verify must exit 1 naming exactly that kernel."""
    import json

    from tilestudio.core.verify_run import verify_file

    path = MODELS / "arch_resnet_basic_block.py"
    graph, dec = analyses(path)
    bad = dec.model_copy(deep=True)
    victim = bad.kernels[1]
    victim.reference = victim.reference.replace("    return ", "    return 1.001 * ", 1) \
        if len(victim.outputs) == 1 else victim.reference
    bundle = tmp_path / "b.json"
    bundle.write_text(json.dumps({"graph": graph.model_dump(mode="json"), "decomposition": bad.model_dump(mode="json")}))
    report = verify_file(str(path), None, str(bundle))
    assert not report["ok"]
    assert report["first_divergence"] == victim.id

    from tilestudio.core.cli import _print_verify

    assert _print_verify(str(path), report) == 1
