"""Recurrence kernels (family "recurrent"): one persistent kernel per LSTM/GRU/RNN layer direction.

The input projection of every time step (x @ W_ih^T + b_ih) is a separate matmul spec before this one; this
kernel owns the sequential part. Each block takes BB batch rows and walks all T steps: per step and gate, the
hidden-state GEMM `h @ W_hh_g^T` runs as `ct.mma` with float32 accumulation, then the gate math updates h (and c)
in registers and h is stored as y[t]. Batch rows and the hidden size are padded to powers of two with zeros, which
keep padded lanes out of every real result (a padded h column only ever meets zero weight rows; padded batch rows
are independent rows of the GEMM and are masked out of every store). The hidden size is limited by what fits on
chip (HP ≤ 256); larger layers raise Unsupported with that reason.

Float32 layers: an f32 x f32 `ct.mma` is not a tensor-core op on sm_90 (it lowers to scalar FFMA) and holding
G f32 HPxHP weight tiles across the loop spills heavily (GRU hidden 128: ~5 minutes of tileiras, 4 MB cubin). So
float32 layers load each gate's weight tile inside the step loop (it stays in L1/L2) and multiply with split
TF32 ("3xTF32"): a = a_hi + a_lo with a_hi = tf32(a), a_lo = tf32(a - a_hi), and h @ W ≈ h_hi@W_lo + h_lo@W_hi +
h_hi@W_hi on tensor cores. The dropped h_lo@W_lo term is below 2^-22 relative, i.e. float32-level accuracy — plain
TF32 (2^-11 per operand) would not be, since the error compounds over the steps. float16/bfloat16 layers keep
their weight tiles on chip (half the bytes) and use float32 mma.

Numerical conditioning: a recurrence with W_hh ~ N(0, 1) (spectral radius ~ sqrt(H)) is chaotic — a 1e-7 relative
perturbation of the input grows to O(1) differences within ~20 steps at H = 128 even in float64 — so no float32
implementation (PyTorch's own included) matches a float64 reference there. The tests draw W_hh and b_hh like
PyTorch's initialisation, U(-1/sqrt(H), 1/sqrt(H)), where float32 vs float64 differs by ~1e-6.
"""

from __future__ import annotations

from ..specs import KernelSpec
from .base import KernelSource, Unsupported, pow2_at_least

GATES = {"lstm_recurrence": 4, "gru_recurrence": 3, "rnn_recurrence": 1}
CT = {"float32": "ct.float32", "float16": "ct.float16", "bfloat16": "ct.bfloat16"}


def generate(spec: KernelSpec) -> KernelSource:
    if len(spec.ops) != 1 or spec.ops[0].op not in GATES:
        raise Unsupported(f"recurrent spec with ops {spec.operations}")
    op = spec.ops[0]
    kind, gates = op.op, GATES[op.op]
    by_value = {t.graph_value: t for t in spec.inputs}
    args = op.args
    gx, w, b, h0 = args[0], args[1], args[2], args[3]
    c0 = args[4] if kind == "lstm_recurrence" else None
    flags = args[5:] if kind == "lstm_recurrence" else args[4:]
    batch_first, reverse = bool(flags[0]), bool(flags[1])
    relu = bool(flags[2]) if kind == "rnn_recurrence" else False

    def name(v):
        return by_value[v["ref"]].name if isinstance(v, dict) else None

    t_gx, t_w = by_value[gx["ref"]], by_value[w["ref"]]
    if t_gx.dtype not in CT:
        raise Unsupported(f"recurrence in {t_gx.dtype}")
    hidden = t_w.shape[1]
    batch, steps = (t_gx.shape[0], t_gx.shape[1]) if batch_first else (t_gx.shape[1], t_gx.shape[0])
    hp = pow2_at_least(hidden, 16)
    if hp > 256:
        raise Unsupported(f"{kind} with hidden size {hidden}: the per-gate weight tile ({hp}x{hp}) does not fit "
                          "on chip; split the hidden dimension across blocks")
    bb = pow2_at_least(min(batch, 64), 16)
    kid = spec.id
    dt = CT[t_gx.dtype]
    gx_n, w_n, b_n, h0_n, c0_n = name(gx), name(w), name(b), name(h0), name(c0) if c0 else None
    params = [t.name for t in spec.inputs]
    has_bias = b_n is not None
    lstm = kind == "lstm_recurrence"

    k = []
    L = k.append
    sig = ["gx", "w", "b", "h0"] + (["c0"] if lstm else []) + ["y", "hn"] + (["cn"] if lstm else [])
    L("@ct.kernel")
    L(f"def {kid}_kernel({', '.join(sig)}, T: ct.Constant[int], HP: ct.Constant[int], BB: ct.Constant[int],")
    L("        REVERSE: ct.Constant[int], HAS_BIAS: ct.Constant[int], RELU: ct.Constant[int]):")
    L("    pid = ct.bid(0)")
    L("    zero = ct.PaddingMode.ZERO")
    L("    h = ct.load(h0, index=(pid, 0), shape=(BB, HP), padding_mode=zero).astype(ct.float32)")
    if lstm:
        L("    c = ct.load(c0, index=(pid, 0), shape=(BB, HP), padding_mode=zero).astype(ct.float32)")
    split_tf32 = t_gx.dtype == "float32"

    def load_w(g: int, indent: str) -> None:
        # w viewed as (G, H, H): W_g^T via a transposed tile order
        L(f"{indent}w{g} = ct.reshape(ct.load(w, index=({g}, 0, 0), shape=(1, HP, HP), order=(0, 2, 1), "
          "padding_mode=zero), (HP, HP)).astype(ct.float32)")

    for g in range(gates):
        if not split_tf32:
            load_w(g, "    ")  # loaded once, kept on chip for all steps
        L(f"    b{g} = ct.reshape(ct.load(b, index=({g}, 0), shape=(1, HP), padding_mode=zero), (1, HP))"
          ".astype(ct.float32)")
    L("    for step in range(T):")
    L("        t = T - 1 - step if REVERSE else step")
    if split_tf32:
        L("        h_hi = h.astype(ct.tfloat32)")
        L("        h_lo = (h - h_hi.astype(ct.float32)).astype(ct.tfloat32)")
    for g in range(gates):
        L(f"        x{g} = ct.reshape(ct.load(gx, index=(pid, t, {g}, 0), shape=(BB, 1, 1, HP), padding_mode=zero), "
          "(BB, HP)).astype(ct.float32)")
        if split_tf32:
            load_w(g, "        ")
            L(f"        w{g}_hi = w{g}.astype(ct.tfloat32)")
            L(f"        w{g}_lo = (w{g} - w{g}_hi.astype(ct.float32)).astype(ct.tfloat32)")
            # small terms first, so they are not lost against the large one
            L(f"        r{g} = ct.mma(h_hi, w{g}_lo, ct.zeros((BB, HP), dtype=ct.float32))")
            L(f"        r{g} = ct.mma(h_lo, w{g}_hi, r{g})")
            L(f"        r{g} = ct.mma(h_hi, w{g}_hi, r{g})")
        else:
            L(f"        r{g} = ct.mma(h, w{g}, ct.zeros((BB, HP), dtype=ct.float32))")
        L(f"        if HAS_BIAS:")
        L(f"            r{g} = r{g} + b{g}")
    if lstm:
        L("        ig = 1.0 / (1.0 + ct.exp(-(x0 + r0)))")
        L("        fg = 1.0 / (1.0 + ct.exp(-(x1 + r1)))")
        L("        gg = ct.tanh(x2 + r2)")
        L("        og = 1.0 / (1.0 + ct.exp(-(x3 + r3)))")
        L("        c = fg * c + ig * gg")
        L("        h = og * ct.tanh(c)")
    elif kind == "gru_recurrence":
        L("        rg = 1.0 / (1.0 + ct.exp(-(x0 + r0)))")
        L("        zg = 1.0 / (1.0 + ct.exp(-(x1 + r1)))")
        L("        ng = ct.tanh(x2 + rg * r2)")
        L("        h = (1.0 - zg) * ng + zg * h")
    else:
        L("        pre = x0 + r0")
        L("        h = ct.maximum(pre, 0.0) if RELU else ct.tanh(pre)")
    L(f"        ct.store(y, index=(pid, t, 0), tile=ct.reshape(h, (BB, 1, HP)).astype(y.dtype))")
    L("    ct.store(hn, index=(pid, 0), tile=h.astype(hn.dtype))")
    if lstm:
        L("    ct.store(cn, index=(pid, 0), tile=c.astype(cn.dtype))")

    outs_by_index = {o.tuple_index: o for o in spec.outputs}
    w_host = []
    W = w_host.append
    W(f"def launch_{kid}({', '.join(params)}):")
    W(f"    gx = {gx_n}.reshape({gx_n}.shape[0], {gx_n}.shape[1], {gates}, {hidden})")
    if not batch_first:
        W("    gx = gx.transpose(0, 1)  # (B, T, G, H) view, read with its strides")
    W(f"    w = {w_n}.reshape({gates}, {hidden}, {hidden})")
    W(f"    b = {b_n}.reshape({gates}, {hidden})" if has_bias else f"    b = w[:, 0, :]  # unused (HAS_BIAS=0)")
    y_shape = f"({batch}, {steps}, {hidden})" if batch_first else f"({steps}, {batch}, {hidden})"
    W(f"    y = torch.empty({y_shape}, dtype={gx_n}.dtype, device={gx_n}.device)")
    W(f"    hn = torch.empty(({batch}, {hidden}), dtype={gx_n}.dtype, device={gx_n}.device)")
    if lstm:
        W(f"    cn = torch.empty(({batch}, {hidden}), dtype={gx_n}.dtype, device={gx_n}.device)")
    W(f"    y_bt = y if {batch_first} else y.transpose(0, 1)")
    launch_args = ["gx", "w", "b", h0_n] + ([c0_n] if lstm else []) + ["y_bt", "hn"] + (["cn"] if lstm else [])
    W(f"    ct.launch(torch.cuda.current_stream(), (ct.cdiv({batch}, {bb}),), {kid}_kernel,")
    W(f"              ({', '.join(launch_args)}, {steps}, {hp}, {bb}, {int(reverse)}, {int(has_bias)}, {int(relu)}))")
    results = {0: "y", 1: "hn", 2: "cn"}
    rets = [results[o.tuple_index] for o in spec.outputs if o.tuple_index in results]
    if len(rets) != len(spec.outputs):
        raise Unsupported(f"{kind}: outputs {[o.name for o in spec.outputs]} are not elements of the recurrence")
    W(f"    return {', '.join(rets)}")
    del outs_by_index
    code = "\n".join(k) + "\n\n\n" + "\n".join(w_host) + "\n"
    return KernelSource(spec_id=kid, family="recurrent", code=code, launch_name=f"launch_{kid}",
                        kernel_names=[f"{kid}_kernel"],
                        notes=[f"{kind}: BB={bb} batch rows per block, hidden {hidden} padded to {hp}, {steps} steps "
                               "in one persistent kernel; "
                               + ("float32: per-step W_hh tile loads, split-TF32 (3 mma) tensor-core GEMM"
                                  if split_tf32 else "per-gate W_hh tile kept on chip")])
