"""The real validation runner on the GPU: corpus models pass; a wrong kernel fails; a faulting kernel is reported."""

import textwrap
import time

import pytest

from corpus import corpus_files

pytestmark = pytest.mark.gpu


def _compose(path):
    from tilestudio.core.analyze import analyze_file
    from tilestudio.core.composer import compose_model

    analysis = analyze_file(str(path))
    return analysis.decomposition, compose_model(str(path), analysis.decomposition)


def _validate(tmp_path, text, name="m_cutile.py", **kw):
    from tilestudio.core.validate import Validation

    out = tmp_path / name
    out.write_text(text)
    run = Validation(str(out), reps=5, torch_compile=False, **kw)
    events = list(run.run())
    return run.report, events


@pytest.mark.parametrize("model", ["fused_gemm_gelu_residual", "arch_resnet_basic_block",
                                   "fused_residual_add_layernorm", "op_softmax"])
def test_corpus_model_validates(model, tmp_path):
    _, composed = _compose(corpus_files(model)[0])
    report, events = _validate(tmp_path, composed.text)
    assert report.status == "pass", report.errors or [k for k in report.kernels if not k.ok]
    assert report.environment["compute_capability"].startswith("sm_")
    assert all(k.ok and k.compile_s is not None for k in report.kernels)
    assert report.timings["cutile_ms"] > 0 and report.timings["eager_ms"] > 0
    t = report.timings
    assert 0 < t["cutile_device_ms"] and 0 < t["cutile_host_ms"] and 0 < t["eager_device_ms"]
    assert all(k.device_ms and k.device_ms > 0 for k in report.kernels)
    assert t.get("cutile_graph_ms", 0) > 0, t.get("cutile_graph_error")  # every generated wrapper captures


RELU_MODEL = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x):
            return torch.relu(x)

    def get_inputs():
        return [torch.randn(1000, 77)]
""")


def _replace_kernel(dec, composed, code: str) -> str:
    kid = dec.execution_order[0]
    first, last = composed.line_map[f"kernel:{kid}"]
    lines = composed.text.split("\n")
    code = code.replace("KID", kid)
    return "\n".join(lines[:first - 1] + code.strip("\n").split("\n") + lines[last:])


WRONG = """
@ct.kernel
def KID_kernel(x, out, BLOCK: ct.Constant[int]):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid,), shape=(BLOCK,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(pid,), tile=t)  # deliberately wrong: identity instead of relu


def launch_KID(x):
    flat = x.reshape(-1)
    out = torch.empty_like(flat)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(flat.numel(), 1024),), KID_kernel, (flat, out, 1024))
    return out.reshape(x.shape)
"""

FAULT = """
@ct.kernel
def KID_kernel(x, out, BLOCK: ct.Constant[int]):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid + 40000000,), shape=(BLOCK,), check_bounds=False)  # far out of bounds
    ct.store(out, index=(pid,), tile=t)


def launch_KID(x):
    flat = x.reshape(-1)
    out = torch.empty_like(flat)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(flat.numel(), 1024),), KID_kernel, (flat, out, 1024))
    return out.reshape(x.shape)
"""


def test_wrong_kernel_fails(tmp_path):
    model = tmp_path / "relu_model.py"
    model.write_text(RELU_MODEL)
    dec, composed = _compose(model)
    report, _ = _validate(tmp_path, _replace_kernel(dec, composed, WRONG), "relu_model_cutile.py")
    assert report.status == "fail"
    assert report.kernels[0].ok is False
    assert report.end_to_end and report.end_to_end["ok"] is False


def test_faulting_kernel_is_reported_without_hanging(tmp_path):
    model = tmp_path / "relu_model.py"
    model.write_text(RELU_MODEL)
    dec, composed = _compose(model)
    start = time.monotonic()
    report, events = _validate(tmp_path, _replace_kernel(dec, composed, FAULT), "relu_model_cutile.py",
                               timeout_s=120)
    assert time.monotonic() - start < 150
    assert report.status == "error"
    kinds = {e.get("kind") for e in report.errors}
    assert kinds & {"cuda_fault", "crash", "launch", "timeout"}, report.errors
