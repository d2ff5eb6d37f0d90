"""Recurrence kernels (LSTM/GRU/RNN layers): generated, traced and compiled ahead of time for sm_90 and sm_100."""

import pytest

from kernels.helpers import compile_all, decompose_source

CASES = {
    "lstm2_batch_first": ("nn.LSTM(20, 30, num_layers=2, batch_first=True)", "[torch.randn(3, 9, 20)]"),
    "gru_seq_first_bidir": ("nn.GRU(12, 17, bidirectional=True)", "[torch.randn(7, 5, 12)]"),
    "rnn_relu_no_bias": ("nn.RNN(8, 40, nonlinearity='relu', bias=False, batch_first=True)", "[torch.randn(4, 6, 8)]"),
    "lstm_half": ("nn.LSTM(16, 64, batch_first=True).half()", "[torch.randn(2, 5, 16).half()]"),
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
