"""Recurrence kernels (family "recurrent"): one persistent kernel per LSTM/GRU/RNN layer direction.

The input projection of every time step (x @ W_ih^T + b_ih) is a separate matmul spec before this one; this
kernel owns the sequential part. Each block takes BB batch rows and walks all T steps: per step and gate, the
hidden-state GEMM `h @ W_hh_g^T` runs as `ct.mma` with float32 accumulation, then the gate math updates h (and c)
in registers and h is stored as y[t]. Batch rows and the hidden size are padded to powers of two with zeros, which
keep padded lanes out of every real result (a padded h column only ever meets zero weight rows; padded batch rows
are independent rows of the GEMM and are masked out of every store). The state must fit on chip (HP <= 256); wider
layers take recurrent_step.py (one launch per time step, the hidden dim spread over blocks).

Chunks: the hidden dimension is cut into NK = HP / 64 column chunks. The state is NK (BB, 64) tiles; per output
chunk j, the gates' pre-activations sum (BB, 64) x (64, 64) mmas over a loop of input chunks (ct.extract from the
joined state), so one weight chunk per gate is live at a time. Whole (HP, HP) gate tiles made tileiras spill for
minutes (float32 LSTM hidden 256: 236 s AOT, ~7 min JIT; chunked: ~25 s). BB shrinks with HP (BB * HP <= 2048,
BB >= 16) for the same reason, which also spreads a batch over more blocks.

Float32 layers: an f32 x f32 `ct.mma` is not a tensor-core op on sm_90 (it lowers to scalar FFMA). Float32 layers
multiply with split TF32 ("3xTF32"): a = a_hi + a_lo with a_hi = tf32(a), a_lo = tf32(a - a_hi), and
h @ W ~ h_hi@W_lo + h_lo@W_hi + h_hi@W_hi on tensor cores, loading each weight chunk inside the step loop (it stays
in L1/L2). The dropped h_lo@W_lo term is below 2^-22 relative, i.e. float32-level accuracy; plain TF32 (2^-11 per
operand) would not be, since the error compounds over the steps. float16/bfloat16 layers round h to the layer's
dtype for the mma (as PyTorch's own half-precision recurrences carry h), keep c and the gate math in float32, and
hold the weight tiles in registers across the steps when the layer is a single chunk (HP <= 64).

Numerical conditioning: a recurrence with W_hh ~ N(0, 1) (spectral radius ~ sqrt(H)) is chaotic — a 1e-7 relative
perturbation of the input grows to O(1) differences within ~20 steps at H = 128 even in float64 — so no float32
implementation (PyTorch's own included) matches a float64 reference there. The tests draw W_hh and b_hh like
PyTorch's initialisation, U(-1/sqrt(H), 1/sqrt(H)), where float32 vs float64 differs by ~1e-6.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..specs import KernelSpec
from .base import KernelSource, Unsupported, pow2_at_least
from .gemm_common import split_mmas, tf32_split

GATES = {"lstm_recurrence": 4, "gru_recurrence": 3, "rnn_recurrence": 1}
CT = {"float32": "ct.float32", "float16": "ct.float16", "bfloat16": "ct.bfloat16"}
# columns per hidden-dimension chunk (see the module text); 32-column chunks compiled 4x slower at hidden 128
CHUNK = 64
# Batch rows per block x padded hidden size: the state (h, c, float32's hi/lo split of h, the gate accumulators)
# lives in registers. Wider layers take fewer batch rows per block (at least 16, the mma's M), more blocks.
STATE_ELEMS = 2048
# wider layers (padded hidden size) take recurrent_step.py: one launch per time step, the hidden dim across blocks
MAX_PERSISTENT_HIDDEN = 256


@dataclass(frozen=True)
class Layer:
    """One recurrence spec, parsed: the spec inputs bound to the input projection gx, W_hh (w), b_hh (b, or None),
    h0 and c0 (LSTM), the sizes, the direction flags and the wrapper's return values (from y, hn, cn)."""

    kid: str
    kind: str
    gates: int
    gx: str
    w: str
    b: str | None
    h0: str
    c0: str | None
    batch: int
    steps: int
    hidden: int
    batch_first: bool
    reverse: bool
    relu: bool
    dtype: str
    params: list[str]
    rets: list[str]

    @property
    def lstm(self) -> bool:
        return self.kind == "lstm_recurrence"

    @property
    def split_tf32(self) -> bool:
        return self.dtype == "float32"


def parse_layer(spec: KernelSpec) -> Layer:
    if len(spec.ops) != 1 or spec.ops[0].op not in GATES:
        raise Unsupported(f"recurrent spec with ops {spec.operations}")
    op = spec.ops[0]
    kind = op.op
    by_value = {t.graph_value: t for t in spec.inputs}
    args = op.args
    gx, w, b, h0 = args[0], args[1], args[2], args[3]
    c0 = args[4] if kind == "lstm_recurrence" else None
    flags = args[5:] if kind == "lstm_recurrence" else args[4:]
    batch_first = bool(flags[0])

    def name(v):
        return by_value[v["ref"]].name if isinstance(v, dict) else None

    t_gx, t_w = by_value[gx["ref"]], by_value[w["ref"]]
    if t_gx.dtype not in CT:
        raise Unsupported(f"recurrence in {t_gx.dtype}")
    results = {0: "y", 1: "hn", 2: "cn"}
    rets = [results[o.tuple_index] for o in spec.outputs if o.tuple_index in results]
    if len(rets) != len(spec.outputs):
        raise Unsupported(f"{kind}: outputs {[o.name for o in spec.outputs]} are not elements of the recurrence")
    batch, steps = (t_gx.shape[0], t_gx.shape[1]) if batch_first else (t_gx.shape[1], t_gx.shape[0])
    return Layer(spec.id, kind, GATES[kind], name(gx), name(w), name(b), name(h0), name(c0) if c0 else None,
                 batch, steps, t_w.shape[1], batch_first, bool(flags[1]),
                 bool(flags[2]) if kind == "rnn_recurrence" else False, t_gx.dtype, [t.name for t in spec.inputs],
                 rets)


def generate(spec: KernelSpec) -> KernelSource:
    ly = parse_layer(spec)
    hp = pow2_at_least(ly.hidden, 16)
    if hp > MAX_PERSISTENT_HIDDEN:
        from .recurrent_step import generate_stepped

        return generate_stepped(ly)
    # the state (h, c and float32's split h) lives in registers: BB * HP is capped, wider layers take fewer rows
    bb = min(pow2_at_least(min(ly.batch, 64), 16), max(16, STATE_ELEMS // hp))
    chunk = min(hp, CHUNK)
    nk = hp // chunk
    hold = not ly.split_tf32 and nk == 1
    k = _kernel_lines(ly.kid, ly.kind, ly.gates, nk, ly.split_tf32, hold)
    w_host = wrapper_head(ly)
    W = w_host.append
    launch_args = ["gx", "w", "b", ly.h0] + ([ly.c0] if ly.lstm else []) + ["y_bt", "hn"] + (["cn"] if ly.lstm else [])
    W(f"    ct.launch(torch.cuda.current_stream(), (ct.cdiv({ly.batch}, {bb}),), {ly.kid}_kernel,")
    W(f"              ({', '.join(launch_args)}, {ly.steps}, {chunk}, {bb}, {int(ly.reverse)}, "
      f"{int(ly.b is not None)}, {int(ly.relu)}))")
    W(f"    return {', '.join(ly.rets)}")
    code = "\n".join(k) + "\n\n\n" + "\n".join(w_host) + "\n"
    return KernelSource(spec_id=ly.kid, family="recurrent", code=code, launch_name=f"launch_{ly.kid}",
                        kernel_names=[f"{ly.kid}_kernel"],
                        notes=[f"{ly.kind}: BB={bb} batch rows per block, hidden {ly.hidden} padded to {hp} in {nk} "
                               f"chunk(s) of {chunk}, {ly.steps} steps in one persistent kernel; "
                               + ("float32: per-step W_hh tile loads, split-TF32 (3 mma) tensor-core GEMM"
                                  if ly.split_tf32 else "W_hh tiles kept on chip" if hold
                                  else "per-step W_hh tile loads")])


def _kernel_lines(kid: str, kind: str, gates: int, nk: int, split_tf32: bool, hold: bool) -> list[str]:
    """The persistent kernel's text. The state is NK chunks hs{j} (and cs{j}) of (BB, C) carried through the step
    loop; per step and output chunk j, gate g's pre-activation is x[t, g, j] + b[g, j] + sum_k h_k @ W_g^T[k, j].
    With NK > 1 the k-sum is a loop over chunks of the whole state tile (ct.extract), so one weight chunk per gate
    is live at a time."""
    lstm = kind == "lstm_recurrence"
    k: list[str] = []
    L = k.append
    sig = ["gx", "w", "b", "h0", "c0"] if lstm else ["gx", "w", "b", "h0"]
    sig += ["y", "hn", "cn"] if lstm else ["y", "hn"]
    L("@ct.kernel")
    L(f"def {kid}_kernel({', '.join(sig)}, T: ct.Constant[int], C: ct.Constant[int], BB: ct.Constant[int],")
    L("        REVERSE: ct.Constant[int], HAS_BIAS: ct.Constant[int], RELU: ct.Constant[int]):")
    L("    pid = ct.bid(0)")
    L("    zero = ct.PaddingMode.ZERO")
    for j in range(nk):
        L(f"    hs{j} = ct.load(h0, index=(pid, {j}), shape=(BB, C), padding_mode=zero).astype(ct.float32)")
    if lstm:
        for j in range(nk):
            L(f"    cs{j} = ct.load(c0, index=(pid, {j}), shape=(BB, C), padding_mode=zero).astype(ct.float32)")

    for g in range(gates):
        for j in range(nk):
            L(f"    b{g}_{j} = ct.reshape(ct.load(b, index=({g}, {j}), shape=(1, C), padding_mode=zero), (1, C))"
              ".astype(ct.float32)")
    if hold:  # NK == 1: the weight tiles stay in registers for all steps
        for g in range(gates):
            L(f"    w{g} = {w_tile(g, '0', 0)}")
    L("    for step in range(T):")
    L("        t = T - 1 - step if REVERSE else step")
    # the GEMM's left operand(s): the whole state as one tile (chunks joined), float32 split in hi + lo TF32
    L(f"        hf = {_cat([f'hs{j}' for j in range(nk)])}")
    if split_tf32:
        k += tf32_split("        ", "hf")
        lhs = ["hf_hi", "hf_lo"]
    else:
        L("        hf = hf.astype(w.dtype)")
        lhs = ["hf"]
    ind = "            " if nk > 1 else "        "
    for j in range(nk):
        for g in range(gates):
            L(f"        r{g} = ct.zeros((BB, C), dtype=ct.float32)")
        if nk > 1:
            L(f"        for kk in range({nk}):")
            for name in lhs:
                L(f"            {name}_k = ct.extract({name}, (0, kk), shape=(BB, C))")
            ops = [f"{name}_k" for name in lhs]
        else:
            ops = lhs
        for g in range(gates):
            k += mma_lines(ind, g, f"w{g}" if hold else w_tile(g, "kk" if nk > 1 else "0", j), ops, split_tf32)
        for g in range(gates):
            L("        if HAS_BIAS:")
            L(f"            r{g} = r{g} + b{g}_{j}")
            L(f"        x{g} = {gx_tile(g, j)}")
        k += gate_lines(kind, "        ", f"cs{j}", f"hs{j}", f"n{j}")
        L(f"        ct.store(y, index=(pid, t, {j}), tile=ct.reshape(n{j}, (BB, 1, C)).astype(y.dtype))")
    for j in range(nk):
        L(f"        hs{j} = n{j}")
    for j in range(nk):
        L(f"    ct.store(hn, index=(pid, {j}), tile=hs{j}.astype(hn.dtype))")
        if lstm:
            L(f"    ct.store(cn, index=(pid, {j}), tile=cs{j}.astype(cn.dtype))")
    return k


def w_tile(g: int, kk: str, j: str | int) -> str:
    """Rows kk, columns j of W_g^T as a (C, C) tile: w viewed as (G, H, H), read through a transposed tile order."""
    return (f"ct.reshape(ct.load(w, index=({g}, {kk}, {j}), shape=(1, C, C), order=(0, 2, 1), "
            "padding_mode=zero), (C, C))")


def gx_tile(g: int, j: str | int) -> str:
    """Gate g's input projection at step t, columns j, as a (BB, C) float32 tile."""
    return (f"ct.reshape(ct.load(gx, index=(pid, t, {g}, {j}), shape=(BB, 1, 1, C), padding_mode=zero), "
            "(BB, C)).astype(ct.float32)")


def mma_lines(ind: str, g: int, wt: str, lhs: list[str], split_tf32: bool) -> list[str]:
    """r{g} += lhs @ wt: one mma, or split TF32 (lhs = [hi, lo]; three mmas, the small terms first so they are not
    lost against the large one)."""
    if not split_tf32:
        return [f"{ind}r{g} = ct.mma({lhs[0]}, {wt}, r{g})"]
    return ([f"{ind}wt = {wt}.astype(ct.float32)"] + tf32_split(ind, "wt")
            + split_mmas(ind, tuple(lhs), ("wt_hi", "wt_lo"), f"r{g}"))


def wrapper_head(ly: Layer) -> list[str]:
    """The launch wrapper's first lines: (B, T, G, H) view of the input projection, (G, H, H) weights, (G, H)
    bias, and the outputs y (with its (B, T, H) view y_bt), h_n and (LSTM) c_n."""
    gx, batch, steps, hidden = ly.gx, ly.batch, ly.steps, ly.hidden
    w = [f"def launch_{ly.kid}({', '.join(ly.params)}):",
         f"    gx = {gx}.reshape({gx}.shape[0], {gx}.shape[1], {ly.gates}, {hidden})"]
    if not ly.batch_first:
        w.append("    gx = gx.transpose(0, 1)  # (B, T, G, H) view, read with its strides")
    w.append(f"    w = {ly.w}.reshape({ly.gates}, {hidden}, {hidden})")
    w.append(f"    b = {ly.b}.reshape({ly.gates}, {hidden})" if ly.b else "    b = w[:, 0, :]  # unused (HAS_BIAS=0)")
    y_shape = f"({batch}, {steps}, {hidden})" if ly.batch_first else f"({steps}, {batch}, {hidden})"
    w.append(f"    y = torch.empty({y_shape}, dtype={gx}.dtype, device={gx}.device)")
    w.append(f"    hn = torch.empty(({batch}, {hidden}), dtype={gx}.dtype, device={gx}.device)")
    if ly.lstm:
        w.append(f"    cn = torch.empty(({batch}, {hidden}), dtype={gx}.dtype, device={gx}.device)")
    w.append(f"    y_bt = y if {ly.batch_first} else y.transpose(0, 1)")
    return w


def gate_lines(kind: str, ind: str, c: str, h: str, n: str) -> list[str]:
    """The gate math of one (BB, C) chunk from the pre-activations x<g> (input projection) and r<g> (recurrent
    GEMM, bias included): `n` = the new h; an LSTM also updates `c` in place; a GRU blends with the previous `h`."""
    if kind == "lstm_recurrence":
        return [f"{ind}ig = 1.0 / (1.0 + ct.exp(-(x0 + r0)))", f"{ind}fg = 1.0 / (1.0 + ct.exp(-(x1 + r1)))",
                f"{ind}gg = ct.tanh(x2 + r2)", f"{ind}og = 1.0 / (1.0 + ct.exp(-(x3 + r3)))",
                f"{ind}{c} = fg * {c} + ig * gg", f"{ind}{n} = og * ct.tanh({c})"]
    if kind == "gru_recurrence":
        return [f"{ind}rg = 1.0 / (1.0 + ct.exp(-(x0 + r0)))", f"{ind}zg = 1.0 / (1.0 + ct.exp(-(x1 + r1)))",
                f"{ind}ng = ct.tanh(x2 + rg * r2)", f"{ind}{n} = (1.0 - zg) * ng + zg * {h}"]
    return [f"{ind}pre = x0 + r0", f"{ind}{n} = ct.maximum(pre, 0.0) if RELU else ct.tanh(pre)"]


def _cat(names: list[str]) -> str:
    """One tile from equal power-of-two chunks along axis 1 (ct.cat joins two at a time)."""
    if len(names) == 1:
        return names[0]
    half = len(names) // 2
    return f"ct.cat(({_cat(names[:half])}, {_cat(names[half:])}), 1)"
