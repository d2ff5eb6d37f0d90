"""The kernel compile check (core/kernel_check.py): the child's protocol and its error locations."""

import json

import pytest

from tilestudio.core.kernel_check import (RESULT_PREFIX, KernelCheckRequest, KernelCheckResult, check_kernel,
                                          parse_output)
from tilestudio.core.kernels.base import KernelSource
from tilestudio.core.specs import KernelSpec, TensorSpec


def test_the_result_line_is_found_among_other_output():
    result = KernelCheckResult(kernel_id="k", arch="sm_90", ok=False, stage="compile", message="boom", line=3)
    stdout = "some warning\n" + RESULT_PREFIX + json.dumps(result.model_dump(mode="json")) + "\nmore\n"
    assert parse_output(stdout, "k", "sm_90") == result


@pytest.mark.parametrize("stdout", ["", "garbage\n", RESULT_PREFIX + "{not json\n"])
def test_no_result_says_why(stdout):
    result = parse_output(stdout, "k", "sm_100", stderr="Traceback ...\nMemoryError\n", exit_code=-9)
    assert not result.ok and result.stage == "child" and result.arch == "sm_100"
    assert "exit code -9" in result.message and "MemoryError" in result.message


def _spec() -> KernelSpec:
    return KernelSpec(id="k", family="elementwise", description="", operations=["relu"], ops=[],
                      inputs=[TensorSpec(name="x", shape=[4], dtype="float32")],
                      outputs=[TensorSpec(name="y", shape=[4], dtype="float32")], reference="")


@pytest.mark.parametrize("code, stage, line", [
    ("def launch_k(x):\n    return (\n", "load", 2),
    ("def launch_k(x):\n    y = torch.empty_like(x)\n    raise ValueError('no')\n", "trace", 3),
    ("def launch_k(x):\n    return torch.empty_like(x)\n", "trace", None),  # launches nothing
])
def test_errors_point_into_the_kernel_code(code, stage, line):
    pytest.importorskip("cuda.tile")
    source = KernelSource(spec_id="k", family="elementwise", code=code, launch_name="launch_k")
    result = check_kernel(KernelCheckRequest(spec=_spec(), source=source))
    assert not result.ok and result.stage == stage and result.line == line and result.message
