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
from .recurrent import CHUNK, gate_lines, wrapper_head

# (BB, 64) float32 accumulators per gate are live together: gates * BB * 64 <= this (LSTM: BB 32, RNN: 64)
STEP_ACC_ELEMS = 8192


def step_block_rows(batch: int, gates: int) -> int:
    """Batch rows per block: a power of two from 16 (the mma's M) up to 64, within STEP_ACC_ELEMS and the batch."""
    limit = min(64, max(16, STEP_ACC_ELEMS // (gates * CHUNK)))
    rows = 16
    while rows * 2 <= limit and rows < batch:
        rows *= 2
    return rows


def step_kernel_lines(kid: str, kind: str, gates: int, nk: int, split_tf32: bool) -> list[str]:
    lstm = kind == "lstm_recurrence"
    sig = ["gx", "w", "b", "hp", "cp", "y", "cs", "hn", "cn"] if lstm else ["gx", "w", "b", "hp", "y", "hn"]
    k = ["@ct.kernel",
         f"def {kid}_kernel({', '.join(sig)}, t, C: ct.Constant[int], BB: ct.Constant[int],",
         "        HAS_BIAS: ct.Constant[int], RELU: ct.Constant[int], LAST: ct.Constant[int]):",
         "    pid = ct.bid(0)",
         "    j = ct.bid(1)",
         "    zero = ct.PaddingMode.ZERO"]
    L = k.append
    for g in range(gates):
        L(f"    r{g} = ct.zeros((BB, C), dtype=ct.float32)")
    L(f"    for kk in range({nk}):")
    L("        hk = ct.load(hp, index=(pid, kk), shape=(BB, C), padding_mode=zero)")
    if split_tf32:
        L("        hk = hk.astype(ct.float32)")
        L("        hk_hi = hk.astype(ct.tfloat32)")
        L("        hk_lo = (hk - hk_hi.astype(ct.float32)).astype(ct.tfloat32)")
    else:
        L("        hk = hk.astype(w.dtype)")
    for g in range(gates):
        tile = (f"ct.reshape(ct.load(w, index=({g}, kk, j), shape=(1, C, C), order=(0, 2, 1), padding_mode=zero), "
                "(C, C))")
        if split_tf32:
            L(f"        wt = {tile}.astype(ct.float32)")
            L("        wt_hi = wt.astype(ct.tfloat32)")
            L("        wt_lo = (wt - wt_hi.astype(ct.float32)).astype(ct.tfloat32)")
            L(f"        r{g} = ct.mma(hk_hi, wt_lo, r{g})")  # small terms first
            L(f"        r{g} = ct.mma(hk_lo, wt_hi, r{g})")
            L(f"        r{g} = ct.mma(hk_hi, wt_hi, r{g})")
        else:
            L(f"        r{g} = ct.mma(hk, {tile}, r{g})")
    for g in range(gates):
        L("    if HAS_BIAS:")
        L(f"        r{g} = r{g} + ct.reshape(ct.load(b, index=({g}, j), shape=(1, C), padding_mode=zero), (1, C))"
          ".astype(ct.float32)")
        L(f"    x{g} = ct.reshape(ct.load(gx, index=(pid, t, {g}, j), shape=(BB, 1, 1, C), padding_mode=zero), "
          "(BB, C)).astype(ct.float32)")
    if lstm:
        L("    c = ct.load(cp, index=(pid, j), shape=(BB, C), padding_mode=zero).astype(ct.float32)")
    if kind == "gru_recurrence":
        L("    h = ct.load(hp, index=(pid, j), shape=(BB, C), padding_mode=zero).astype(ct.float32)")
    k += gate_lines(kind, "    ", "c", "h", "n")
    L("    ct.store(y, index=(pid, t, j), tile=ct.reshape(n, (BB, 1, C)).astype(y.dtype))")
    if lstm:
        L("    ct.store(cs, index=(pid, j), tile=c)")
    L("    if LAST:")
    L("        ct.store(hn, index=(pid, j), tile=n.astype(hn.dtype))")
    if lstm:
        L("        ct.store(cn, index=(pid, j), tile=c.astype(cn.dtype))")
    return k


def generate_stepped(kid: str, kind: str, gates: int, names: dict, shapes: dict, flags: dict, dtype: str,
                     params: list[str], rets: list[str]) -> KernelSource:
    """The per-step kernel and its launch wrapper (a host loop over the T steps). `names`: the spec inputs bound
    to gx, w, b (or None), h0, c0 (LSTM); `shapes`: batch, steps, hidden; `flags`: batch_first, reverse, relu."""
    lstm = kind == "lstm_recurrence"
    batch, steps, hidden = shapes["batch"], shapes["steps"], shapes["hidden"]
    batch_first, reverse, relu = flags["batch_first"], flags["reverse"], flags["relu"]
    nk = -(-hidden // CHUNK)
    bb = step_block_rows(batch, gates)
    split_tf32 = dtype == "float32"
    gx_n, w_n, b_n, h0_n = names["gx"], names["w"], names["b"], names["h0"]
    has_bias = b_n is not None
    w = wrapper_head(kid, params, gx_n, w_n, b_n, gates, batch, steps, hidden, batch_first, lstm)
    W = w.append
    if lstm:
        W(f"    cs = torch.empty(({batch}, {hidden}), dtype=torch.float32, device={gx_n}.device)  # cell state")
    W(f"    grid = (ct.cdiv({batch}, {bb}), {nk})")
    W(f"    for step in range({steps}):")
    W(f"        t = {steps - 1} - step if {bool(reverse)} else step")
    W(f"        hp = {h0_n} if step == 0 else y_bt[:, t {'+' if reverse else '-'} 1]")
    state = ["cp", "y_bt", "cs", "hn", "cn"] if lstm else ["y_bt", "hn"]
    if lstm:
        W(f"        cp = {names['c0']} if step == 0 else cs")
    W(f"        ct.launch(torch.cuda.current_stream(), grid, {kid}_kernel,")
    W(f"                  (gx, w, b, hp, {', '.join(state)}, t, {CHUNK}, {bb}, {int(has_bias)}, {int(relu)}, "
      f"int(step == {steps - 1})))")
    W(f"    return {', '.join(rets)}")
    code = "\n".join(step_kernel_lines(kid, kind, gates, nk, split_tf32)) + "\n\n\n" + "\n".join(w) + "\n"
    return KernelSource(spec_id=kid, family="recurrent", code=code, launch_name=f"launch_{kid}",
                        kernel_names=[f"{kid}_kernel"],
                        notes=[f"{kind}: hidden {hidden} is wider than one persistent kernel holds; one launch per "
                               f"step ({steps}), grid of {-(-batch // bb)} x {nk} blocks of {bb} batch rows x "
                               f"{CHUNK} hidden columns, W_hh read from L2 each step"
                               + ("; float32: split-TF32 (3 mma)" if split_tf32 else "")])
