"""Every corpus model composes into one file that is statically pure, dry-runs clean and compiles for sm_90."""

import ast

import pytest

from corpus import corpus_files

MODELS = [p for p in corpus_files() if not p.name.startswith("big_")]


def _compose(path, analyses):
    from tilestudio.core.composer import compose_model

    _, dec = analyses(path)
    return dec, compose_model(str(path), dec)


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_compose_is_pure_and_dry_runs(path, analyses, tmp_path):
    from tilestudio.core.dryrun import dry_run
    from tilestudio.core.purity import check_text

    dec, composed = _compose(path, analyses)
    source = path.read_text()
    diags = check_text(composed.text, model_source=source)
    assert [d.format(path.name) for d in diags] == []
    out = tmp_path / f"{path.stem}_cutile.py"
    out.write_text(composed.text)
    report = dry_run(str(out), "sm_90")
    assert report["error"] is None, report["error"]
    assert report["violations"] == []
    assert report["output_mismatches"] == []
    assert report["launches"] and all(r["ok"] for r in report["launches"]), \
        [r["message"] for r in report["launches"] if not r["ok"]]


def test_composed_file_structure_follows_the_seed(analyses):
    from tilestudio.core.composer import ORIGINAL_END, ORIGINAL_START, extract_original

    path = corpus_files("arch_resnet_basic_block")[0]
    dec, composed = _compose(path, analyses)
    text = composed.text
    markers = ["import cuda.tile as ct", "# Kernel 1: ", "@ct.kernel", "def launch_", "# Composed Function",
               "class ModelCuTile(nn.Module):", "def composed_function(", ORIGINAL_START, ORIGINAL_END,
               "def pytorch_reference(", 'if __name__ == "__main__":', "PASS - max diff", "FAIL - max diff"]
    positions = [text.index(m) for m in markers]
    assert positions == sorted(positions)
    assert extract_original(text) == path.read_text()
    for kid in dec.execution_order:  # one banner section per kernel, in dependency order, with provenance
        first, last = composed.line_map[f"kernel:{kid}"]
        section = "\n".join(text.split("\n")[first - 1:last])
        assert f"# spec: {kid} |" in section and f"def launch_{kid}(" in section
    order = [composed.line_map[f"kernel:{k}"][0] for k in dec.execution_order]
    assert order == sorted(order)
    imports = [n for n in ast.parse(text).body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert all(n.lineno < composed.line_map["original"][0] for n in imports[:6])


def test_compose_is_deterministic_and_renames_on_conflict(tmp_path, analyses):
    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file
    from tilestudio.core.composer import compose_model

    src = corpus_files("fused_gemm_bias_relu")[0].read_text() + "\n\nclass ModelCuTile:\n    pass\n"
    path = tmp_path / "clash.py"
    path.write_text(src)
    dec = analyze_graph(capture_file(str(path)), "clash.py")
    a, b = compose_model(str(path), dec), compose_model(str(path), dec)
    assert a.text == b.text
    assert a.entry_class == "ModelCuTile2" and "class ModelCuTile2(nn.Module):" in a.text
    assert "class ModelCuTile:\n    pass\n" in a.text  # the user's own class is untouched


def test_unsupported_op_composes_to_a_skeleton_flagged_by_check(tmp_path):
    import subprocess
    import sys

    model = tmp_path / "sorty.py"
    model.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                     "        return torch.histc(x, 10).relu()\n\n"
                     "def get_inputs():\n    return [torch.randn(4, 8)]\n")
    out = tmp_path / "sorty_cutile.py"
    r = subprocess.run([sys.executable, "-m", "tilestudio", "compose", str(model), "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "tilestudio", "check", str(out)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 1
    assert "PUR007" in r.stdout and "aten.histc" in r.stdout


def test_model_without_get_init_inputs_composes_and_dry_runs(tmp_path):
    """get_init_inputs() is optional: the composed __main__, the dry run and the validator all default to []."""
    from tilestudio.core.analyzer import analyze_graph
    from tilestudio.core.capture_model import capture_file
    from tilestudio.core.composer import compose_model
    from tilestudio.core.dryrun import dry_run

    model = tmp_path / "relu_only.py"
    model.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                     "        return torch.relu(x)\n\ndef get_inputs():\n    return [torch.randn(100, 77)]\n")
    dec = analyze_graph(capture_file(str(model)), "relu_only.py")
    out = tmp_path / "relu_only_cutile.py"
    out.write_text(compose_model(str(model), dec).text)
    assert 'init_inputs = get_init_inputs() if "get_init_inputs" in globals() else []' in out.read_text()
    report = dry_run(str(out), "sm_90")
    assert report["ok"], report


@pytest.mark.parametrize("args,output,expected", [
    ([{"ref": "p"}, 1, 27, 54], [3, 27], "p.narrow(1, 27, 27)"),
    ([{"ref": "p"}, -1, 0, 9223372036854775807], [3, 5], "p.narrow(-1, 0, 5)"),  # x[..., :] on a size-5 dim
    ([{"ref": "p"}, 0, 2, 10, 1], [4, 8], "p.narrow(0, 2, 4)"),  # end past the dim: clamped, as slice does
    ([{"ref": "p"}, 1, 0, 54, 2], [3, 27], "aten.slice.Tensor(p, 1, 0, 54, 2)"),  # step 2: no narrow
    ([{"ref": "p"}, 1, -27, 81], [3, 27], "aten.slice.Tensor(p, 1, -27, 81)"),  # negative start
    ([{"ref": "p"}, 1, 90, 99], [3, 0], "aten.slice.Tensor(p, 1, 90, 99)"),  # empty: may start past the end
])
def test_unit_step_slices_compose_as_narrow(args, output, expected):
    """A unit-step slice of a local in the composed forward is `x.narrow(dim, start, length)` (length from the traced
    output shape): the same view without the ATen overload's Python layer. Other forms keep the ATen call."""
    from tilestudio.core.opgraph import OpNode
    from tilestudio.core.reference_code import glue_source

    node = OpNode(name="s", target="aten.slice.Tensor", args=args)
    assert glue_source(node, {"p": "p"}, output) == expected
