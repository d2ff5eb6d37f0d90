"""The purity checker: exact diagnostics on hand-written impure files, and it never crashes on arbitrary Python."""

import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilestudio.core.composer import ORIGINAL_END, ORIGINAL_START
from tilestudio.core.purity import check_text

ORIGINAL = "import torch\nclass Model(torch.nn.Module):\n    pass\n"


def composed(forward_body: str, extra: str = "", imports: str = "import cuda.tile as ct\nimport torch\n"
             "import torch.nn as nn\nimport torch.nn.functional as F\n", main: int = 1) -> str:
    text = imports + textwrap.dedent(extra) + textwrap.dedent("""
    def launch_k(x):
        out = torch.empty_like(x)
        ct.launch(torch.cuda.current_stream(), (1,), k_kernel, (x, out))
        return out


    class ModelCuTile(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x, y):
            m = self.model
    """) + textwrap.indent(textwrap.dedent(forward_body), "        ") + "\n"
    text += ORIGINAL_START + "\n" + ORIGINAL + ORIGINAL_END + "\n"
    text += 'if __name__ == "__main__":\n    pass\n' * main
    return text


def rules(text, **kw):
    return [(d.rule, d.line, d.column) for d in check_text(text, **kw)]


def line_of(text: str, needle: str) -> int:
    return next(i for i, l in enumerate(text.split("\n"), 1) if needle in l)


def test_clean_forward_has_no_diagnostics():
    text = composed("""
    h = launch_k(x)
    h = h.view(2, -1).permute(1, 0).contiguous()
    z = torch.empty((4, 4), device=x.device)
    return torch.cat([h, z.reshape(4, 4)], dim=0)
    """)
    assert check_text(text, model_source=ORIGINAL) == []


@pytest.mark.parametrize("stmt,rule,needle,col", [
    ("return F.relu(x)", "PUR002", "F.relu", 16),
    ("return torch.relu(x)", "PUR003", "torch.relu", 16),
    ("return torch.matmul(x, y)", "PUR003", "torch.matmul", 16),
    ("return x.exp()", "PUR004", "x.exp", 16),
    ("h = launch_k(x)\nreturn h.sum()", "PUR004", "h.sum", 16),
    ("return x + y", "PUR005", "x + y", 16),
    ("h = launch_k(x)\nh *= 2\nreturn h", "PUR005", "h *= 2", 9),
    ("return m.conv(x)", "PUR001", "m.conv", 16),
    ("return self.model.fc(x)", "PUR001", "self.model.fc", 16),
    ("return torch.ops.aten.relu.default(x)", "PUR006", "aten.relu", 16),
])
def test_each_impurity_is_reported_at_its_line_and_column(stmt, rule, needle, col):
    text = composed(stmt)
    got = rules(text, model_source=ORIGINAL)
    assert got == [(rule, line_of(text, needle), col)]


def test_tensor_metadata_arithmetic_is_glue():
    """Arithmetic on a tensor's metadata (storage_offset, size, stride: plain ints) is host glue, as the pair-view
    pooling wrappers use it (`x.clone() if x.storage_offset() % 2 else x`); arithmetic on the tensor is not."""
    clean = composed("""
    x = x.clone() if x.storage_offset() % 2 else x
    n = x.size(0) * x.stride(0) + x.numel() // 2
    return launch_k(x.view(n, -1))
    """)
    assert rules(clean, model_source=ORIGINAL) == []
    impure = composed("return launch_k(x % 2)")
    assert rules(impure, model_source=ORIGINAL) == [("PUR005", line_of(impure, "x % 2"), 25)]


def test_impurity_inside_a_called_helper_is_found():
    text = composed("return helper(x)", extra="""
    def helper(t):
        return t.sigmoid()
    """)
    assert rules(text, model_source=ORIGINAL) == [("PUR004", line_of(text, "t.sigmoid"), 12)]


def test_glue_aten_ops_are_allowed_but_compute_aten_ops_are_not():
    text = composed("aten = torch.ops.aten\nv = aten.view.default(x, [4])\nreturn aten.mul.Tensor(v, 2)")
    assert [r for r, _, _ in rules(text, model_source=ORIGINAL)] == ["PUR006"]


def test_file_rules_imports_citations_main_and_original_block():
    text = composed("return launch_k(x)", imports="import cuda.tile as ct\nimport torch\nimport torch.nn as nn\n"
                    "import scipy\n", main=2)
    text = text.replace("def launch_k(x):", "# adapted from TileGym\ndef launch_k(x):")
    text = text.replace("    pass\n" + ORIGINAL_END, "    passs\n" + ORIGINAL_END)
    got = {r for r, _, _ in rules(text, model_source=ORIGINAL)}
    assert got == {"PUR010", "PUR012", "PUR013", "PUR011"}


def test_skeleton_is_a_purity_error_naming_the_op():
    text = composed("return launch_k(x)").replace(
        "    out = torch.empty_like(x)\n",
        "    raise NotImplementedError('kernel k: no cuTile implementation for aten.sort.default')\n", 1)
    diags = check_text(text, model_source=ORIGINAL)
    assert [d.rule for d in diags] == ["PUR007"]
    assert "aten.sort.default" in diags[0].message


def test_syntax_error_is_one_diagnostic():
    diags = check_text("def f(:\n")
    assert [d.rule for d in diags] == ["PUR014"] and diags[0].line == 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(list("abcxy()[]{}.:=+-*/ \n\t'\"#@,0123456789_") + [
    "def ", "class ", "return ", "torch.", "F.", "self.", "launch_", "import ", "if __name__ == '__main__':",
    "ModelCuTile", "forward", "    ", "\n    "]), max_size=120).map("".join))
def test_checker_never_crashes_on_arbitrary_text(src):
    for d in check_text(src):
        assert d.rule.startswith("PUR") and d.line >= 1 and d.column >= 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([
    "h = launch_k(x)", "h = x.view(-1)", "h = x + y", "h = torch.relu(x)", "h = F.gelu(x)", "h = x.exp()",
    "h = torch.empty_like(x)", "h = torch.cat([x, y])", "h = m.lin(x)", "h = h.permute(0)", "h = 2 * 3",
]), min_size=1, max_size=8))
def test_checker_flags_exactly_the_impure_statements(stmts):
    text = composed("\n".join(stmts) + "\nreturn h")
    impure = {"h = x + y", "h = torch.relu(x)", "h = F.gelu(x)", "h = x.exp()", "h = m.lin(x)"}
    expected = sum(s in impure for s in stmts)
    assert len(check_text(text, model_source=ORIGINAL)) == expected
