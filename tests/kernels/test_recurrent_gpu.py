"""Recurrence kernels on the GPU vs the float64 reference: LSTM/GRU/RNN, both directions, fp32/fp16/bf16."""

import pytest

from kernels.helpers import decompose_source

pytestmark = pytest.mark.gpu

CASES = [
    ("nn.LSTM(20, 30, num_layers=2, batch_first=True)", "(3, 9, 20)", "float32"),
    ("nn.LSTM(16, 64, bidirectional=True)", "(12, 5, 16)", "float32"),
    ("nn.GRU(12, 17, bidirectional=True)", "(7, 5, 12)", "float32"),
    ("nn.GRU(32, 128, batch_first=True)", "(70, 33, 32)", "float32"),
    ("nn.RNN(8, 40, nonlinearity='relu', bias=False, batch_first=True)", "(4, 6, 8)", "float32"),
    ("nn.LSTM(16, 64, batch_first=True)", "(2, 5, 16)", "float16"),
    ("nn.GRU(24, 96, batch_first=True)", "(5, 11, 24)", "bfloat16"),
]


@pytest.mark.parametrize("module,shape,dtype", CASES)
def test_recurrence_matches_reference(module, shape, dtype):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.checking import check_kernel

    cast = {"float32": "", "float16": ".half()", "bfloat16": ".to(torch.bfloat16)"}[dtype]
    dec = decompose_source(f"""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = {module}{cast}
        def forward(self, x):
            return self.rnn(x)
    """, f"[torch.randn{shape}{cast}]")
    specs = [k for k in dec.kernels if k.family == "recurrent"]
    assert specs
    for spec in specs:
        result = check_kernel(spec, generate_kernel(spec))
        assert result.ok, f"{spec.id}: {result.message}"
