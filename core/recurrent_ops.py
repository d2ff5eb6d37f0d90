"""The recurrence ops that recurrent layers lower to (see lowering.py), as PyTorch code.

Each is one kernel spec (family "recurrent"): the hidden-state matmul and the gate math of every time step, in one
persistent kernel. The input projection of all time steps is a separate matmul spec before it. The source text
below is both executed (verify, ground truth) and inlined into each spec's self-contained reference.
"""

from __future__ import annotations

import torch

from .recurrent_sources import SOURCES

_namespace: dict = {"torch": torch}
for _src in SOURCES.values():
    exec(_src, _namespace)  # noqa: S102 - our own source, kept as text so references can inline it

lstm_recurrence = _namespace["lstm_recurrence"]
gru_recurrence = _namespace["gru_recurrence"]
rnn_recurrence = _namespace["rnn_recurrence"]
