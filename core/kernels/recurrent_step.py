"""Recurrences too wide for one persistent kernel (hidden > 256): one launch per time step.

Step t is a grid of (batch blocks of BB rows) x (64-column chunks j of the hidden dim). Each block sums, over the
input chunks kk, the (BB, 64) x (64, 64) `ct.mma`s of h_{t-1}[:, kk] with W_g^T[kk, j] for every gate g (float32
accumulation; float32 layers use the same split-TF32 triple as the persistent kernel), adds the bias and the input
projection x[t, g, j], applies the gate math (recurrent.gate_lines) and writes h_t[:, j] into y[:, t]. h_{t-1} is
read back from y[:, t-1] (h0 at the first step), so a step's blocks never read what another block of the same step
writes; an LSTM's cell state lives in a float32 (B, H) buffer that each block updates only at its own columns (c0
at the first step). The last step also writes h_n (and c_n). W_hh is read from L2 each step (8 MB for an LSTM with
hidden 1024 in bf16). The host loop launches T kernels; the hidden size needs no padding beyond its last chunk.
"""

from __future__ import annotations

from .base import KernelSource
from .gemm_common import tf32_split
from .recurrent import CHUNK, Layer, gate_lines, gx_tile, mma_lines, w_tile, wrapper_head

# (BB, 64) float32 accumulators per gate are live together: gates * BB * 64 <= this (LSTM: BB 32, RNN: 64)
STEP_ACC_ELEMS = 8192


def step_block_rows(batch: int, gates: int) -> int:
    """Batch rows per block: a power of two from 16 (the mma's M) up to 64, within STEP_ACC_ELEMS and the batch."""
    limit = min(64, max(16, STEP_ACC_ELEMS // (gates * CHUNK)))
    rows = 16
    while rows * 2 <= limit and rows < batch:
        rows *= 2
    return rows


def step_kernel_lines(ly: Layer, nk: int) -> list[str]:
    sig = ["gx", "w", "b", "hp", "cp", "y", "cs", "hn", "cn"] if ly.lstm else ["gx", "w", "b", "hp", "y", "hn"]
    k = ["@ct.kernel",
         f"def {ly.kid}_kernel({', '.join(sig)}, t, C: ct.Constant[int], BB: ct.Constant[int],",
         "        HAS_BIAS: ct.Constant[int], RELU: ct.Constant[int], LAST: ct.Constant[int]):",
         "    pid = ct.bid(0)",
         "    j = ct.bid(1)",
         "    zero = ct.PaddingMode.ZERO"]
    L = k.append
    for g in range(ly.gates):
        L(f"    r{g} = ct.zeros((BB, C), dtype=ct.float32)")
    L(f"    for kk in range({nk}):")
    L("        hk = ct.load(hp, index=(pid, kk), shape=(BB, C), padding_mode=zero)")
    if ly.split_tf32:
        L("        hk = hk.astype(ct.float32)")
        k += tf32_split("        ", "hk")
        lhs = ["hk_hi", "hk_lo"]
    else:
        L("        hk = hk.astype(w.dtype)")
        lhs = ["hk"]
    for g in range(ly.gates):
        k += mma_lines("        ", g, w_tile(g, "kk", "j"), lhs, ly.split_tf32)
    for g in range(ly.gates):
        L("    if HAS_BIAS:")
        L(f"        r{g} = r{g} + ct.reshape(ct.load(b, index=({g}, j), shape=(1, C), padding_mode=zero), (1, C))"
          ".astype(ct.float32)")
        L(f"    x{g} = {gx_tile(g, 'j')}")
    if ly.lstm:
        L("    c = ct.load(cp, index=(pid, j), shape=(BB, C), padding_mode=zero).astype(ct.float32)")
    if ly.kind == "gru_recurrence":
        L("    h = ct.load(hp, index=(pid, j), shape=(BB, C), padding_mode=zero).astype(ct.float32)")
    k += gate_lines(ly.kind, "    ", "c", "h", "n")
    L("    ct.store(y, index=(pid, t, j), tile=ct.reshape(n, (BB, 1, C)).astype(y.dtype))")
    if ly.lstm:
        L("    ct.store(cs, index=(pid, j), tile=c)")
    L("    if LAST:")
    L("        ct.store(hn, index=(pid, j), tile=n.astype(hn.dtype))")
    if ly.lstm:
        L("        ct.store(cn, index=(pid, j), tile=c.astype(cn.dtype))")
    return k


def generate_stepped(ly: Layer) -> KernelSource:
    """The per-step kernel and its launch wrapper (a host loop over the T steps)."""
    steps = ly.steps
    nk = -(-ly.hidden // CHUNK)
    bb = step_block_rows(ly.batch, ly.gates)
    w = wrapper_head(ly)
    W = w.append
    if ly.lstm:
        W(f"    cs = torch.empty(({ly.batch}, {ly.hidden}), dtype=torch.float32, device={ly.gx}.device)  # cell state")
    W(f"    grid = (ct.cdiv({ly.batch}, {bb}), {nk})")
    W("    stream = torch.cuda.current_stream()  # once, not per step: the loop is host-bound")
    W(f"    for step in range({steps}):")
    W(f"        t = {steps - 1} - step if {ly.reverse} else step")
    W(f"        hp = {ly.h0} if step == 0 else y_bt[:, t {'+' if ly.reverse else '-'} 1]")
    state = ["cp", "y_bt", "cs", "hn", "cn"] if ly.lstm else ["y_bt", "hn"]
    if ly.lstm:
        W(f"        cp = {ly.c0} if step == 0 else cs")
    W(f"        ct.launch(stream, grid, {ly.kid}_kernel,")
    W(f"                  (gx, w, b, hp, {', '.join(state)}, t, {CHUNK}, {bb}, {int(ly.b is not None)}, "
      f"{int(ly.relu)}, int(step == {steps - 1})))")
    W(f"    return {', '.join(ly.rets)}")
    code = "\n".join(step_kernel_lines(ly, nk)) + "\n\n\n" + "\n".join(w) + "\n"
    return KernelSource(spec_id=ly.kid, family="recurrent", code=code, launch_name=f"launch_{ly.kid}",
                        kernel_names=[f"{ly.kid}_kernel"],
                        notes=[f"{ly.kind}: hidden {ly.hidden} is wider than one persistent kernel holds; one launch "
                               f"per step ({steps}), grid of {-(-ly.batch // bb)} x {nk} blocks of {bb} batch rows x "
                               f"{CHUNK} hidden columns, W_hh read from L2 each step"
                               + ("; float32: split-TF32 (3 mma)" if ly.split_tf32 else "")])
