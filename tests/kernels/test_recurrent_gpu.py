"""Recurrence kernels on the GPU vs the float64 reference: LSTM/GRU/RNN, both directions, fp32/fp16/bf16.

W_hh and b_hh are drawn like PyTorch's initialisation, U(-1/sqrt(H), 1/sqrt(H)) (checking.spec_input_maker does it for
every recurrence check), not N(0, 1): with N(0, 1) weights (spectral radius ~ sqrt(H)) the recurrence is chaotic, a
1e-7 relative perturbation grows to O(1) within ~20 steps at H = 128, and no float32 implementation — PyTorch's own
included — meets a float64 reference (the GRU-128, 33-step case failed that way). `CHECK` is swapped for the CPU
emulator by test_recurrent_compile.py.
"""


import pytest

from kernels.helpers import decompose_source

pytestmark = pytest.mark.gpu
CHECK = None  # None: checking.check_kernel on the GPU

CASES = [
    ("nn.LSTM(20, 30, num_layers=2, batch_first=True)", "(3, 9, 20)", "float32"),
    ("nn.LSTM(16, 64, bidirectional=True)", "(12, 5, 16)", "float32"),
    ("nn.GRU(12, 17, bidirectional=True)", "(7, 5, 12)", "float32"),
    ("nn.GRU(32, 128, batch_first=True)", "(70, 33, 32)", "float32"),
    ("nn.RNN(8, 40, nonlinearity='relu', bias=False, batch_first=True)", "(4, 6, 8)", "float32"),
    ("nn.LSTM(16, 64, batch_first=True)", "(2, 5, 16)", "float16"),
    ("nn.GRU(24, 96, batch_first=True)", "(5, 11, 24)", "bfloat16"),
    # batch > 64: several BB=64 blocks, the last one partly padded; hidden at and near the on-chip limit
    ("nn.LSTM(24, 128, batch_first=True)", "(100, 17, 24)", "float32"),
    # hidden 256 (four 64-column chunks; ~25 s of tileiras, ~7 minutes before the chunking)
    ("nn.LSTM(16, 256)", "(9, 80, 16)", "float32"),
    # half precision over several chunks, the last one partly padded (200 -> 256, 100 -> 128), 16-row blocks
    ("nn.GRU(24, 200, batch_first=True)", "(40, 7, 24)", "bfloat16"),
    ("nn.LSTM(10, 100)", "(6, 33, 10)", "float16"),
    # hidden > 256: one launch per step (recurrent_step.py), the hidden dim over 64-column blocks, the last partial
    ("nn.LSTM(24, 300, batch_first=True)", "(5, 7, 24)", "float32"),
    ("nn.GRU(16, 520, bidirectional=True)", "(6, 3, 16)", "bfloat16"),
    ("nn.RNN(8, 320, nonlinearity='relu', batch_first=True)", "(40, 5, 8)", "float16"),
    ("nn.LSTM(16, 1024, num_layers=2)", "(3, 4, 16)", "bfloat16"),
    ("nn.GRU(8, 300, batch_first=True)", "(70, 4, 8)", "float16"),  # 3 blocks of 32 batch rows, the last partial
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
    check = CHECK or check_kernel
    for spec in specs:
        result = check(spec, generate_kernel(spec))  # inputs: checking.spec_input_maker
        assert result.ok, f"{spec.id}: {result.message} (max abs err {result.max_abs_err:.3g})"
