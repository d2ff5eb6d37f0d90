"""Recurrence kernels (LSTM/GRU/RNN layers): generated, traced and compiled ahead of time for sm_90 and sm_100."""

import functools
import re

import pytest

from kernels.helpers import compile_all, decompose_source

CASES = {
    "lstm2_batch_first": ("nn.LSTM(20, 30, num_layers=2, batch_first=True)", "[torch.randn(3, 9, 20)]"),
    "gru_seq_first_bidir": ("nn.GRU(12, 17, bidirectional=True)", "[torch.randn(7, 5, 12)]"),
    "rnn_relu_no_bias": ("nn.RNN(8, 40, nonlinearity='relu', bias=False, batch_first=True)", "[torch.randn(4, 6, 8)]"),
    "lstm_half": ("nn.LSTM(16, 64, batch_first=True).half()", "[torch.randn(2, 5, 16).half()]"),
    # hidden > 256: one launch per step (recurrent_step.py)
    "lstm_wide_stepped": ("nn.LSTM(16, 300, batch_first=True)", "[torch.randn(2, 3, 16)]"),
    "gru_wide_stepped_bf16": ("nn.GRU(8, 520).to(torch.bfloat16)", "[torch.randn(3, 2, 8).to(torch.bfloat16)]"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_recurrence_compiles(case):
    module, inputs = CASES[case]
    dec = decompose_source(f"""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = {module}
        def forward(self, x):
            return self.rnn(x)[0]
    """, inputs)
    recurrent = [k for k in dec.kernels if k.family == "recurrent"]
    assert recurrent
    for spec in recurrent:
        compile_all(spec, ("sm_90", "sm_100"))


# The GPU file's cases, through that file's own code on the CPU emulator (tf32 rounding emulated): the GRU with
# hidden 128, batch 70 (a second, partly padded BB=64 block) and 33 steps among them.
from . import test_recurrent_gpu  # noqa: E402
from .cutile_emulator import check_emulated  # noqa: E402


@pytest.mark.parametrize("module,shape,dtype", test_recurrent_gpu.CASES)
def test_gpu_cases_pass_on_the_emulator(module, shape, dtype, monkeypatch):
    monkeypatch.setattr(test_recurrent_gpu, "CHECK", check_emulated)
    test_recurrent_gpu.test_recurrence_matches_reference(module, shape, dtype)


@functools.lru_cache(maxsize=None)
def _gru128_batch70():
    """The configuration that failed on the GPU in session 1: GRU hidden 128, batch 70, 33 steps, float32."""
    return decompose_source("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(32, 128, batch_first=True)
        def forward(self, x):
            return self.rnn(x)
    """, "[torch.randn(70, 33, 32)]")


def test_gru_hidden128_batch70_compiles_with_split_tf32():
    """The failing GPU configuration: float32 uses split-TF32 tensor-core mma with per-step weight loads, the
    hidden size in two 64-column chunks (3 gates x 3 mmas per output chunk, summed over a loop of input chunks), and
    16 batch rows per block (STATE_ELEMS 2048 / 128) — 5 blocks for 70 rows, the last partly padded."""
    dec = _gru128_batch70()
    (spec,) = [k for k in dec.kernels if k.family == "recurrent"]
    source = compile_all(spec, ("sm_90",))
    assert "ct.tfloat32" in source.code and source.code.count("ct.mma(") == 2 * 9
    assert source.code.count("for kk in range(2):") == 2
    assert "ct.launch(torch.cuda.current_stream(), (ct.cdiv(70, 16),)" in source.code


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_hidden256_compiles_in_seconds(dtype):
    """nn.LSTM(16, 256): whole 256x256 gate tiles took ~7 minutes of tileiras in float32 (register spills); 64-column
    chunks with one weight chunk per gate live at a time compile in ~25 s on a 2-core host. The bound leaves room
    for a slow CI machine while still catching a return to whole-tile GEMMs."""
    import time

    cast = "" if dtype == "float32" else ".half()"
    dec = decompose_source(f"""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(16, 256){cast}
        def forward(self, x):
            return self.rnn(x)[0]
    """, f"[torch.randn(9, 20, 16){cast}]")
    (spec,) = [k for k in dec.kernels if k.family == "recurrent"]
    start = time.perf_counter()
    source = compile_all(spec, ("sm_90",))
    assert time.perf_counter() - start < 150
    assert "for kk in range(4):" in source.code and "ct.cdiv(20, 16)" in source.code


def test_recurrence_checks_draw_parameters_like_torch_init():
    """Checks (GPU tests, `tilestudio validate`) draw a recurrence's weights U(±1/sqrt(H)); others stay N(0, 1)."""
    import torch

    from tilestudio.core.kernels.checking import make_inputs

    dec = _gru128_batch70()
    rec = next(k for k in dec.kernels if k.family == "recurrent")
    inputs = dict(zip((t.name for t in rec.inputs), make_inputs(rec, "cpu", seed=0)))
    params = [inputs[t.name] for t in rec.inputs if t.role == "parameter"]
    assert params and all(float(p.abs().max()) <= 1 / 128 ** 0.5 for p in params)
    acts = [inputs[t.name] for t in rec.inputs if t.role == "activation"]
    assert any(float(a.abs().max()) > 1.0 for a in acts)
    other = next(k for k in dec.kernels if k.family != "recurrent")
    assert any(isinstance(x, torch.Tensor) and float(x.abs().max()) > 1.0 for x in make_inputs(other, "cpu", seed=0))


def test_wide_recurrence_steps_on_the_host():
    """nn.LSTM(1024, 1024) used to be an explicit skeleton (its gate tiles do not fit on chip); it is now one
    kernel launched once per time step over a (batch blocks x 16 hidden chunks) grid, float32 cell state kept in a
    buffer, h read back from the previous step's output, h_n/c_n written by the last launch."""
    dec = decompose_source("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(1024, 1024, batch_first=True).to(torch.bfloat16)
        def forward(self, x):
            return self.rnn(x)
    """, "[torch.randn(64, 5, 1024).to(torch.bfloat16)]")
    (spec,) = [k for k in dec.kernels if k.family == "recurrent"]
    from tilestudio.core.kernels import generate_kernel

    source = generate_kernel(spec)
    assert not source.skeleton
    assert "for step in range(5):" in source.code and "grid = (ct.cdiv(64, 32), 16)" in source.code
    assert re.search(r"hp = \w+ if step == 0 else y_bt\[:, t - 1\]", source.code)
    assert source.code.count("ct.mma(") == 4 and "if LAST:" in source.code
