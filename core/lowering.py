"""Rewrites of the captured graph before fusion: recurrent layers into matmul + recurrence/gate ops.

- `aten.lstm/gru/rnn_tanh/rnn_relu.input` (a whole multi-layer, maybe bidirectional layer stack) becomes, per layer
  and direction, an input projection for all time steps (`aten.linear`, a matmul spec) and one recurrence op
  (`tilestudio.<kind>_recurrence`: the hidden-state matmul and gate math of every step in one persistent kernel),
  with glue (select/cat/stack) for initial states, bidirectional concatenation and the stacked final states.
- `aten.lstm_cell/gru_cell/rnn_*_cell` become plain ATen ops (two linears, slices, gate elementwise ops), which the
  ordinary fusion rules turn into matmul kernels and one fused gate kernel.
- `aten.glu` (`F.glu(x, dim)`, `nn.GLU`) becomes its definition, `a * sigmoid(b)` over the two halves of x along
  dim (two slices, glue), so it is an ordinary elementwise kernel that fuses with its neighbours.
- `aten.baddbmm` with beta != 0 whose only use is a softmax (ALiBi attention: `baddbmm(alibi, q, k^T, beta=1,
  alpha=D ** -0.5)` into softmax) becomes bmm(q, k^T) * alpha + beta * bias, so fusion rule R8 sees the scores'
  matmul with a scale and an additive mask and makes the attention one flash kernel. Other baddbmms stay: the
  matmul family takes their bias itself.
- `aten.cdist` with p = 2 becomes PyTorch's own matrix form, sqrt(clamp_min(|x1|^2 + |x2|^2 - 2 x1 @ x2^T, 0)):
  row sums of squares and one matmul whose epilogue adds them, clamps and takes the root, on tensor cores. Other
  p > 0: the broadcast difference reduced over the features (sum of |d| for p = 1, amax for inf, (sum
  |d|^p)^(1/p)), one reduction kernel with the difference as its prologue.
- `aten.einsum` of three or more operands becomes a chain of two-operand einsums, left to right, each keeping the
  subscripts a later operand or the output still needs (the forms the matmul family takes).
- `aten.index_put` with one boolean mask (`h[h < -1] = -1`, `scores[:, causal] = -inf`, `x[mask] += v`) whose
  values broadcast over the dims after the mask's is elementwise: where(mask, values, self) (accumulate: self +
  where(mask, values, 0)), the mask viewed with trailing unit dims. It then fuses like any elementwise op (a masked
  score matrix stays one flash-attention kernel). Integer indices stay index_put (the scatter family's).
- `aten.embedding_bag` (nn.EmbeddingBag; sum or mean, optional per-sample weights, 1-D indices with offsets or
  2-D bags) becomes each index's bag (`bucketize(arange(N), offsets, right=True) - 1`), the embedding rows (times
  the weights), an `index_add` of the rows into their bags (the scatter family) and, for mean, a division by the
  bag sizes (offset differences, empty bags divided by 1, giving 0 as PyTorch). mode max, padding_idx and uses
  of the auxiliary results (offset2bag, bag sizes) keep the op (an unsupported spec).
- `aten.kthvalue`, `aten.median` and `aten.nanmedian` (with a dim, or over all elements) become a stable ascending
  `aten.sort` along the dim (NaN sorts last, ties keep their order) and a pick at one sorted position: k - 1 for
  kthvalue (a view); for median, the lower middle (n - 1) // 2, or the first NaN (position = the count of numbers)
  where the line has one, as PyTorch propagates it; for nanmedian the lower middle of the numbers alone, (count -
  1) // 2. Data-dependent positions are gathered (`aten.gather`), the count a sum of `~isnan`.
Final values keep the names of the original graph values, so everything downstream (and verify) is unchanged.
"""

from __future__ import annotations

import math
from typing import Any

from .opgraph import OpGraph, OpNode, SourceLoc, TensorMeta

_SEQUENCE = {"lstm": ("lstm_recurrence", 4), "gru": ("gru_recurrence", 3), "rnn_tanh": ("rnn_recurrence", 1),
             "rnn_relu": ("rnn_recurrence", 1)}
_CELLS = {"lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"}
_ORDER_STATS = {"kthvalue", "median", "nanmedian"}
_BAG_ARGS = ("weight", "indices", "offsets", "scale_grad_by_freq", "mode", "sparse", "per_sample_weights",
             "include_last_offset", "padding_idx")


def ref(name: str) -> dict:
    return {"ref": name}


class _Emitter:
    def __init__(self, graph: OpGraph, node: OpNode):
        self.graph, self.node = graph, node
        self.out: list[OpNode] = []
        self.shapes: dict[str, list[int]] = {}
        self.dtype = next((o.dtype for o in node.outputs if o is not None), "float32")

    def emit(self, name: str, target: str, args: list[Any], shapes: list[list[int]] | list[int],
             attrs: dict | None = None, tuple_output: bool = False) -> str:
        outs = [TensorMeta(shape=s, dtype=self.dtype) for s in shapes] if tuple_output \
            else [TensorMeta(shape=shapes, dtype=self.dtype)]
        self.out.append(OpNode(name=name, target=target, args=args, attrs=attrs or {}, outputs=outs,
                               tuple_output=tuple_output, source=self.node.source,
                               module_path=self.node.module_path, module_type=self.node.module_type))
        if not tuple_output:
            self.shapes[name] = list(shapes)  # type: ignore[arg-type]
        return name


def lower(graph: OpGraph) -> OpGraph:
    kinds = {n.op for n in graph.nodes}
    if not (kinds & (set(_SEQUENCE) | _CELLS | _ORDER_STATS | {"embedding_bag"} |
                     {"glu", "baddbmm", "cdist", "einsum", "index_put", "index_put_"})):
        return graph
    shapes = {i.name: i.meta.shape for i in graph.inputs if i.meta}
    dtypes = {i.name: i.meta.dtype for i in graph.inputs if i.meta}
    for n in graph.nodes:
        if n.meta:
            shapes[n.name] = n.meta.shape
            dtypes[n.name] = n.meta.dtype
    getitems: dict[str, dict[int, str]] = {}
    for n in graph.nodes:
        if n.target == "getitem" and isinstance(n.args[0], dict):
            getitems.setdefault(n.args[0]["ref"], {})[n.args[1]] = n.name
    consumers: dict[str, list[OpNode]] = {}
    for n in graph.nodes:
        for r in {a["ref"] for a in n.args if isinstance(a, dict) and "ref" in a}:
            consumers.setdefault(r, []).append(n)
    new_nodes: list[OpNode] = []
    dropped: set[str] = set()
    for node in graph.nodes:
        if node.name in dropped:
            continue
        lowered = None
        if node.op in _SEQUENCE and node.target.endswith(".input"):
            lowered = _lower_sequence(graph, node, shapes, getitems.get(node.name, {}))
        elif node.op in _CELLS:
            lowered = _lower_cell(graph, node, shapes, getitems.get(node.name, {}))
        elif node.op == "glu":
            lowered = _lower_glu(graph, node, shapes)
        elif node.op == "einsum":
            lowered = _lower_einsum_chain(graph, node, shapes)
        elif node.op == "cdist":
            lowered = _lower_cdist(graph, node, shapes)
        elif node.op == "baddbmm":
            lowered = _lower_baddbmm(graph, node, shapes, consumers.get(node.name, []))
        elif node.op in ("index_put", "index_put_"):
            lowered = _lower_index_put_mask(graph, node, shapes, dtypes)
        elif node.op == "embedding_bag":
            lowered = _lower_embedding_bag(graph, node, shapes, getitems.get(node.name, {}), consumers)
        elif node.op in _ORDER_STATS:
            lowered = _lower_order_stat(graph, node, shapes, getitems.get(node.name, {}))
        if lowered is None:
            new_nodes.append(node)
            continue
        new_nodes.extend(n.model_copy(update={"origin": node.name}) for n in lowered)
        dropped |= set(getitems.get(node.name, {}).values())
    return graph.model_copy(update={"nodes": new_nodes})


def _lower_sequence(graph, node, shapes, items) -> list[OpNode] | None:
    kind = node.op
    rec_name, gates = _SEQUENCE[kind]
    x, hx, params, has_biases, num_layers, _dropout, _train, bidirectional, batch_first = node.args
    x_shape = shapes[x["ref"]]
    if len(x_shape) != 3:
        return None  # unbatched input: left as is (reported as an unsupported recurrent op)
    dirs = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    if len(params) != num_layers * dirs * per:
        return None  # projections (proj_size) are not lowered
    h0 = hx[0]["ref"] if kind == "lstm" else hx["ref"]
    c0 = hx[1]["ref"] if kind == "lstm" else None
    hidden = shapes[h0][-1]
    batch = x_shape[0] if batch_first else x_shape[1]
    steps = x_shape[1] if batch_first else x_shape[0]
    seq = [batch, steps] if batch_first else [steps, batch]
    em = _Emitter(graph, node)
    base = node.name
    layer_in = x["ref"]
    finals_h, finals_c = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = (layer * dirs + d) * per
            w_ih, w_hh = params[k], params[k + 1]
            b_ih, b_hh = (params[k + 2], params[k + 3]) if has_biases else (None, None)
            tag = f"{base}_l{layer}{'_reverse' if d else ''}"
            proj = em.emit(f"{tag}_input_proj", "aten.linear.default", [ref(layer_in), w_ih, b_ih],
                           seq + [gates * hidden])
            state = em.emit(f"{tag}_h0", "aten.select.int", [ref(h0), 0, layer * dirs + d], [batch, hidden],
                            {"dim": 0, "index": layer * dirs + d})
            args = [ref(proj), w_hh, b_hh, ref(state)]
            out_shapes = [seq + [hidden], [batch, hidden]]
            if kind == "lstm":
                cstate = em.emit(f"{tag}_c0", "aten.select.int", [ref(c0), 0, layer * dirs + d], [batch, hidden],
                                 {"dim": 0, "index": layer * dirs + d})
                args.append(ref(cstate))
                out_shapes.append([batch, hidden])
            args += [bool(batch_first), bool(d)]
            if rec_name == "rnn_recurrence":
                args.append(kind == "rnn_relu")
            attrs = {"batch_first": bool(batch_first), "reverse": bool(d), "hidden_size": hidden,
                     "nonlinearity": "relu" if kind == "rnn_relu" else "tanh"}
            rec = em.emit(f"{tag}_recurrence", f"tilestudio.{rec_name}", args, out_shapes, attrs, tuple_output=True)
            last_layer_single = layer == num_layers - 1 and dirs == 1
            y_name = items.get(0, f"{tag}_y") if last_layer_single else f"{tag}_y"
            em.out.append(OpNode(name=y_name, target="getitem", args=[ref(rec), 0],
                                 outputs=[TensorMeta(shape=seq + [hidden], dtype=em.dtype)], source=node.source,
                                 module_path=node.module_path, module_type=node.module_type))
            em.shapes[y_name] = seq + [hidden]
            outs.append(y_name)
            for idx, bucket in ((1, finals_h), (2, finals_c)):
                if idx < len(out_shapes):
                    name = f"{tag}_{'h' if idx == 1 else 'c'}n"
                    em.out.append(OpNode(name=name, target="getitem", args=[ref(rec), idx],
                                         outputs=[TensorMeta(shape=[batch, hidden], dtype=em.dtype)],
                                         source=node.source, module_path=node.module_path,
                                         module_type=node.module_type))
                    bucket.append(name)
        if dirs == 2:
            cat_name = items.get(0, f"{base}_l{layer}_out") if layer == num_layers - 1 else f"{base}_l{layer}_out"
            layer_in = em.emit(cat_name, "aten.cat.default", [[ref(o) for o in outs], -1], seq + [2 * hidden],
                               {"dim": -1})
        else:
            layer_in = outs[0]
    for idx, bucket in ((1, finals_h), (2, finals_c)):
        if idx in items and bucket:
            em.emit(items[idx], "aten.stack.default", [[ref(b) for b in bucket], 0],
                    [len(bucket), batch, hidden], {"dim": 0})
    return em.out


def _lower_cell(graph, node, shapes, items) -> list[OpNode] | None:
    kind = node.op
    x, hx, w_ih, w_hh = node.args[:4]
    b_ih = node.args[4] if len(node.args) > 4 else None
    b_hh = node.args[5] if len(node.args) > 5 else None
    h = hx[0] if kind == "lstm_cell" else hx
    if len(shapes[x["ref"]]) != 2:
        return None
    batch, hidden = shapes[h["ref"]]
    em = _Emitter(graph, node)
    base = node.name
    gates = {"lstm_cell": 4, "gru_cell": 3}.get(kind, 1)
    gx = em.emit(f"{base}_input_proj", "aten.linear.default", [x, w_ih, b_ih], [batch, gates * hidden])
    gh = em.emit(f"{base}_hidden_proj", "aten.linear.default", [h, w_hh, b_hh], [batch, gates * hidden])
    shape = [batch, hidden]

    def op(name, fn, *args, attrs=None):
        return em.emit(f"{base}_{name}", f"aten.{fn}", list(args), shape, attrs)

    def chunk(src, i):
        return em.emit(f"{src}_{i}", "aten.slice.Tensor", [ref(src), 1, i * hidden, (i + 1) * hidden], shape,
                       {"dim": 1, "start": i * hidden, "end": (i + 1) * hidden, "step": 1})

    if kind in ("rnn_tanh_cell", "rnn_relu_cell"):
        pre = op("pre", "add.Tensor", ref(gx), ref(gh), attrs={"alpha": 1})
        fn = "relu.default" if kind == "rnn_relu_cell" else "tanh.default"
        em.emit(base, f"aten.{fn}", [ref(pre)], shape)
        return em.out
    if kind == "gru_cell":
        xr, xz, xn = (chunk(gx, i) for i in range(3))
        hr, hz, hn = (chunk(gh, i) for i in range(3))
        r = op("r", "sigmoid.default", ref(op("r_pre", "add.Tensor", ref(xr), ref(hr), attrs={"alpha": 1})))
        z = op("z", "sigmoid.default", ref(op("z_pre", "add.Tensor", ref(xz), ref(hz), attrs={"alpha": 1})))
        rn = op("rn", "mul.Tensor", ref(r), ref(hn))
        n = op("n", "tanh.default", ref(op("n_pre", "add.Tensor", ref(xn), ref(rn), attrs={"alpha": 1})))
        delta = op("delta", "sub.Tensor", h, ref(n), attrs={"alpha": 1})
        zd = op("z_delta", "mul.Tensor", ref(z), ref(delta))
        em.emit(base, "aten.add.Tensor", [ref(n), ref(zd)], shape, {"alpha": 1})
        return em.out
    c = hx[1]
    g = op("gates", "add.Tensor", ref(gx), ref(gh), attrs={"alpha": 1})
    em.shapes[g] = [batch, 4 * hidden]
    em.out[-1].outputs = [TensorMeta(shape=[batch, 4 * hidden], dtype=em.dtype)]
    gi, gf, gg, go = (chunk(g, i) for i in range(4))
    i_ = op("i", "sigmoid.default", ref(gi))
    f_ = op("f", "sigmoid.default", ref(gf))
    g_ = op("g", "tanh.default", ref(gg))
    o_ = op("o", "sigmoid.default", ref(go))
    fc = op("fc", "mul.Tensor", ref(f_), c)
    ig = op("ig", "mul.Tensor", ref(i_), ref(g_))
    c_name = items.get(1, f"{base}_c")
    em.emit(c_name, "aten.add.Tensor", [ref(fc), ref(ig)], shape, {"alpha": 1})
    tc = op("tanh_c", "tanh.default", ref(c_name))
    em.emit(items.get(0, f"{base}_h"), "aten.mul.Tensor", [ref(o_), ref(tc)], shape)
    return em.out


def _lower_glu(graph, node, shapes) -> list[OpNode] | None:
    """glu(x, dim) = x[..., :h, ...] * sigmoid(x[..., h:, ...]) along dim (h = half of x's size there)."""
    x = node.args[0]
    if not isinstance(x, dict) or x.get("ref") not in shapes or node.meta is None:
        return None
    shape = list(shapes[x["ref"]])
    dim = node.attrs.get("dim", -1)
    dim = dim + len(shape) if dim < 0 else dim
    if not 0 <= dim < len(shape) or shape[dim] % 2:
        return None  # PyTorch's own error (odd size) is raised by the model's reference run
    half = shape[dim] // 2
    out = list(node.meta.shape)
    em = _Emitter(graph, node)
    em.dtype = node.meta.dtype
    a, b = (em.emit(f"{node.name}_{part}", "aten.slice.Tensor", [x, dim, i * half, (i + 1) * half], out,
                    {"dim": dim, "start": i * half, "end": (i + 1) * half, "step": 1})
            for i, part in enumerate(("a", "b")))
    gate = em.emit(f"{node.name}_gate", "aten.sigmoid.default", [ref(b)], out)
    em.emit(node.name, "aten.mul.Tensor", [ref(a), ref(gate)], out)
    return em.out


def _lower_baddbmm(graph, node, shapes, users: list[OpNode]) -> list[OpNode] | None:
    """baddbmm(bias, a, b, beta, alpha) read only by a softmax = bmm(a, b) * alpha + bias * beta."""
    beta, alpha = node.attrs.get("beta", 1), node.attrs.get("alpha", 1)
    if beta == 0 or node.meta is None or len(users) != 1 or users[0].op not in ("softmax", "_softmax"):
        return None
    if not all(isinstance(a, dict) and a.get("ref") in shapes for a in node.args[:3]):
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (beta, alpha)):
        return None
    bias, a, b = node.args[:3]
    out = list(node.meta.shape)
    em = _Emitter(graph, node)
    em.dtype = node.meta.dtype
    scores = em.emit(f"{node.name}_mm", "aten.bmm.default", [a, b], out)
    if alpha != 1:
        scores = em.emit(f"{node.name}_scaled", "aten.mul.Tensor", [ref(scores), alpha], out)
    if beta != 1:
        bias = ref(em.emit(f"{node.name}_bias", "aten.mul.Tensor", [bias, beta], list(shapes[bias["ref"]])))
    em.emit(node.name, "aten.add.Tensor", [ref(scores), bias], out)
    return em.out


def _lower_cdist(graph, node, shapes) -> list[OpNode] | None:
    """cdist(x1, x2, p=2) = sqrt(clamp_min(sum(x1^2, -1, keepdim) + sum(x2^2, -1)[..., None, :] - 2 x1 @ x2^T, 0))."""
    x1, x2 = node.args[:2]
    p = node.attrs.get("p", 2.0)
    if node.meta is None or not all(isinstance(a, dict) and a.get("ref") in shapes for a in (x1, x2)):
        return None
    s1, s2 = list(shapes[x1["ref"]]), list(shapes[x2["ref"]])
    out = list(node.meta.shape)
    if len(s1) < 2 or len(s2) < 2 or s1[:-2] != s2[:-2] or s1[-1] != s2[-1]:
        return None  # batch broadcasting between x1 and x2 is left to the unsupported-op path
    if p != 2:
        return _lower_cdist_p(graph, node, x1, x2, s1, s2, out, p)
    em = _Emitter(graph, node)
    em.dtype = node.meta.dtype
    n = node.name
    sq1 = em.emit(f"{n}_x1_sq", "aten.mul.Tensor", [x1, x1], s1)
    n1 = em.emit(f"{n}_x1_norm", "aten.sum.dim_IntList", [ref(sq1), [-1], True], s1[:-1] + [1],
                 {"dim": [-1], "keepdim": True})
    sq2 = em.emit(f"{n}_x2_sq", "aten.mul.Tensor", [x2, x2], s2)
    n2 = em.emit(f"{n}_x2_norm", "aten.sum.dim_IntList", [ref(sq2), [-1], False], s2[:-1],
                 {"dim": [-1], "keepdim": False})
    n2r = em.emit(f"{n}_x2_norm_row", "aten.unsqueeze.default", [ref(n2), -2], s2[:-2] + [1, s2[-2]], {"dim": -2})
    x2t = em.emit(f"{n}_x2_t", "aten.transpose.int", [x2, -1, -2], s2[:-2] + [s2[-1], s2[-2]],
                  {"dim0": -1, "dim1": -2})
    mm = em.emit(f"{n}_dot", "aten.matmul.default", [x1, ref(x2t)], out)
    t = em.emit(f"{n}_dot2", "aten.mul.Tensor", [ref(mm), -2.0], out)
    t = em.emit(f"{n}_sq_a", "aten.add.Tensor", [ref(t), ref(n1)], out)
    t = em.emit(f"{n}_sq", "aten.add.Tensor", [ref(t), ref(n2r)], out)
    t = em.emit(f"{n}_sq_pos", "aten.clamp_min.default", [ref(t), 0.0], out, {"min": 0.0})
    em.emit(n, "aten.sqrt.default", [ref(t)], out)
    return em.out


def _lower_index_put_mask(graph, node, shapes, dtypes) -> list[OpNode] | None:
    """index_put(x, [None] * d + [mask], v, accumulate) = where(mask[..., None...], v, x) (+ x for accumulate)."""
    x, indices, v = (node.args + [None, None, None])[:3]
    if not all(isinstance(a, dict) and a.get("ref") in shapes for a in (x, v)) or not isinstance(indices, list):
        return None
    given = [i for i, t in enumerate(indices) if t is not None]
    if len(given) != 1 or node.meta is None:
        return None
    d, mask = given[0], indices[given[0]]
    if not isinstance(mask, dict) or dtypes.get(mask.get("ref")) != "bool":
        return None
    out, mshape, vshape = list(node.meta.shape), list(shapes[mask["ref"]]), list(shapes[v["ref"]])
    k = len(mshape)
    trailing = out[d + k:]
    if out[d:d + k] != mshape or len(vshape) > len(trailing) or \
            not all(n in (1, m) for n, m in zip(vshape[::-1], trailing[::-1])):
        return None  # the selection's size depends on the mask: the op stays (an unsupported spec)
    xt, vt = dtypes.get(x["ref"]), dtypes.get(v["ref"])
    floats = all(t and t.startswith(("float", "bfloat")) for t in (xt, vt))
    if vt != xt and (vshape or not floats):
        return None  # index_put casts the values to x's dtype; where would promote
    em = _Emitter(graph, node)
    em.dtype = "bool"
    cond, cshape = mask, mshape + [1] * len(trailing)
    if trailing:
        cond = ref(em.emit(f"{node.name}_mask", "aten.view.default", [mask, cshape], cshape))
    em.dtype = node.meta.dtype
    if node.attrs.get("accumulate"):
        add = em.emit(f"{node.name}_add", "aten.where.ScalarOther", [cond, v, 0.0], _broadcast(cshape, vshape))
        em.emit(node.name, "aten.add.Tensor", [x, ref(add)], out)
    else:
        em.emit(node.name, "aten.where.self", [cond, v, x], out)
    return em.out


def _lower_embedding_bag(graph, node, shapes, items, consumers) -> list[OpNode] | None:
    """embedding_bag = index_add(zeros(B, D), 0, bucketize(arange(N), offsets, right) - 1, weight[indices] * w)
    (/ bag sizes for mean)."""
    a = dict(zip(_BAG_ARGS, node.args))
    weight, indices, offsets, w = a.get("weight"), a.get("indices"), a.get("offsets"), a.get("per_sample_weights")
    mode, last, pad = a.get("mode", 0), bool(a.get("include_last_offset", False)), a.get("padding_idx")
    if mode not in (0, 1) or pad is not None or not all(isinstance(t, dict) and t.get("ref") in shapes
                                                        for t in (weight, indices, offsets)):
        return None
    if any(consumers.get(name) for idx, name in items.items() if idx != 0) or not node.outputs[0]:
        return None  # offset2bag / bag_size / max_indices are read: the op stays
    ws, xs, os_ = shapes[weight["ref"]], shapes[indices["ref"]], shapes[offsets["ref"]]
    if len(ws) != 2 or len(xs) != 1 or len(os_) != 1 or os_[0] < (2 if last else 1):
        return None
    (_, D), (N,), (M,) = ws, xs, os_
    B = M - 1 if last else M
    dtype = node.outputs[0].dtype
    em = _Emitter(graph, node)
    n = node.name

    def alloc(name, target, args, shape, dt):
        em.out.append(OpNode(name=name, target=target, args=args,
                             kwargs={"dtype": {"dtype": dt}, "device": {"device": "meta"}, "pin_memory": False},
                             outputs=[TensorMeta(shape=shape, dtype=dt)], source=node.source,
                             module_path=node.module_path, module_type=node.module_type))
        em.shapes[name] = shape
        return name

    pos = alloc(f"{n}_pos", "aten.arange.default", [N], [N], "int64")
    em.dtype = "int64"
    em.out.append(OpNode(name=f"{n}_bag1", target="aten.bucketize.Tensor", args=[ref(pos), offsets],
                         kwargs={"right": True}, attrs={"out_int32": False, "right": True},
                         outputs=[TensorMeta(shape=[N], dtype="int64")], source=node.source,
                         module_path=node.module_path, module_type=node.module_type))
    bag = em.emit(f"{n}_bag", "aten.sub.Tensor", [ref(f"{n}_bag1"), 1], [N], {"alpha": 1})
    em.dtype = dtype
    rows = em.emit(f"{n}_rows", "aten.embedding.default", [weight, indices], [N, D])
    if isinstance(w, dict) and w.get("ref") in shapes:
        wc = em.emit(f"{n}_w", "aten.unsqueeze.default", [w, -1], [N, 1], {"dim": -1})
        rows = em.emit(f"{n}_wrows", "aten.mul.Tensor", [ref(rows), ref(wc)], [N, D])
    zeros = alloc(f"{n}_zeros", "aten.zeros.default", [[B, D]], [B, D], dtype)
    out = items.get(0, f"{n}_out")
    if mode == 0:
        em.emit(out, "aten.index_add.default", [ref(zeros), 0, ref(bag), ref(rows)], [B, D], {"dim": 0, "alpha": 1})
        return em.out
    summed = em.emit(f"{n}_sum", "aten.index_add.default", [ref(zeros), 0, ref(bag), ref(rows)], [B, D],
                     {"dim": 0, "alpha": 1})
    em.dtype = "int64"
    starts = em.emit(f"{n}_starts", "aten.slice.Tensor", [offsets, 0, 0, B], [B],
                     {"dim": 0, "start": 0, "end": B, "step": 1})
    if last:
        ends = em.emit(f"{n}_ends", "aten.slice.Tensor", [offsets, 0, 1, M], [B], {"dim": 0, "start": 1, "end": M,
                                                                                  "step": 1})
    else:
        total = alloc(f"{n}_total", "aten.full.default", [[1], N], [1], "int64")
        nxt = em.emit(f"{n}_next", "aten.slice.Tensor", [offsets, 0, 1, M], [M - 1],
                      {"dim": 0, "start": 1, "end": M, "step": 1})
        ends = em.emit(f"{n}_ends", "aten.cat.default", [[ref(nxt), ref(total)]], [B], {"dim": 0})
    size = em.emit(f"{n}_size", "aten.sub.Tensor", [ref(ends), ref(starts)], [B], {"alpha": 1})
    size = em.emit(f"{n}_size1", "aten.clamp_min.default", [ref(size), 1], [B], {"min": 1})
    size = em.emit(f"{n}_size_col", "aten.unsqueeze.default", [ref(size), -1], [B, 1], {"dim": -1})
    em.dtype = dtype
    em.emit(out, "aten.div.Tensor", [ref(summed), ref(size)], [B, D])
    return em.out


def _lower_order_stat(graph, node, shapes, items) -> list[OpNode] | None:
    """kthvalue / median / nanmedian = a stable ascending sort along dim and a pick at one sorted position."""
    x = node.args[0] if node.args else None
    if not isinstance(x, dict) or x.get("ref") not in shapes or not node.outputs or node.outputs[0] is None:
        return None
    xshape = list(shapes[x["ref"]])
    whole = node.target.endswith(".default") and node.op != "kthvalue"  # median(x): over all elements
    em = _Emitter(graph, node)
    dtype = node.outputs[0].dtype
    em.dtype = dtype
    n = node.name
    if whole:
        numel = 1
        for d in xshape:
            numel *= d
        x = ref(em.emit(f"{n}_flat", "aten.reshape.default", [x, [numel]], [numel]))
        xshape, dim, keepdim = [numel], 0, False
    else:
        dim = int(node.attrs.get("dim", -1))
        keepdim = bool(node.attrs.get("keepdim", False))
    if not xshape:
        return None
    dim = dim + len(xshape) if dim < 0 else dim
    size = xshape[dim]
    picked = list(xshape)
    picked[dim] = 1
    final = picked if keepdim else xshape[:dim] + xshape[dim + 1:]
    # names of the results: the getitems of a tuple result, or the node itself
    names = [items.get(0, f"{n}_values"), items.get(1, f"{n}_indices")] if node.tuple_output else [n]
    sort = f"{n}_sort"
    em.out.append(OpNode(name=sort, target="aten.sort.stable", args=[x], kwargs={"stable": True, "dim": dim},
                         attrs={"stable": True, "dim": dim, "descending": False}, tuple_output=True,
                         outputs=[TensorMeta(shape=xshape, dtype=dtype), TensorMeta(shape=xshape, dtype="int64")],
                         source=node.source, module_path=node.module_path, module_type=node.module_type))
    sorted_parts = []
    for idx, part, dt in ((0, "sorted", dtype), (1, "order", "int64")):
        name = f"{n}_{part}"
        em.out.append(OpNode(name=name, target="getitem", args=[ref(sort), idx],
                             outputs=[TensorMeta(shape=xshape, dtype=dt)], source=node.source,
                             module_path=node.module_path, module_type=node.module_type))
        sorted_parts.append(name)
    if node.op == "kthvalue":
        k = int(node.attrs.get("k", node.args[1] if len(node.args) > 1 else 1))
        if not 1 <= k <= size:
            return None  # PyTorch's own error, from the model's reference run
        for name, src, dt in zip(names, sorted_parts, (dtype, "int64")):
            em.dtype = dt
            if keepdim:
                em.emit(name, "aten.slice.Tensor", [ref(src), dim, k - 1, k], final,
                        {"dim": dim, "start": k - 1, "end": k, "step": 1})
            else:
                em.emit(name, "aten.select.int", [ref(src), dim, k - 1], final, {"dim": dim, "index": k - 1})
        return em.out
    em.dtype = "bool"
    nan = em.emit(f"{n}_isnan", "aten.isnan.default", [x], xshape)
    num = em.emit(f"{n}_isnum", "aten.logical_not.default", [ref(nan)], xshape)
    em.dtype = "int64"
    count = em.emit(f"{n}_count", "aten.sum.dim_IntList", [ref(num), [dim], True], picked,
                    {"dim": [dim], "keepdim": True})
    if node.op == "median":  # the first NaN where there is one (its position: the count), else the lower middle
        has_nan = em.emit(f"{n}_has_nan", "aten.lt.Scalar", [ref(count), size], picked)
        em.out[-1].outputs = [TensorMeta(shape=picked, dtype="bool")]
        pos = em.emit(f"{n}_pos", "aten.where.ScalarOther", [ref(has_nan), ref(count), (size - 1) // 2], picked)
    else:  # nanmedian: the lower middle of the numbers (position 0 of an all-NaN line: a NaN)
        less = em.emit(f"{n}_count_m1", "aten.sub.Tensor", [ref(count), 1], picked, {"alpha": 1})
        half = em.emit(f"{n}_half", "aten.floor_divide.Scalar", [ref(less), 2], picked)
        pos = em.emit(f"{n}_pos", "aten.clamp_min.default", [ref(half), 0], picked, {"min": 0})
    for i, (name, src, dt) in enumerate(zip(names, sorted_parts, (dtype, "int64"))):
        em.dtype = dt
        target = name if keepdim else f"{name}_kept"
        em.emit(target, "aten.gather.default", [ref(src), dim, ref(pos)], picked, {"dim": dim})
        if not keepdim:
            em.emit(name, "aten.squeeze.dim", [ref(target), dim], final, {"dim": dim})
    return em.out


def _broadcast(a: list[int], b: list[int]) -> list[int]:
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b)
    return [max(p, q) for p, q in zip(a, b)]


def _lower_cdist_p(graph, node, x1, x2, s1, s2, out, p) -> list[OpNode] | None:
    """cdist with p != 2: |x1[..., i, None, :] - x2[..., None, j, :]| reduced over the features (the difference is
    the reduction kernel's prologue, never stored): sum for p = 1, amax for p = inf, (sum |d|^p)^(1/p) otherwise."""
    if isinstance(p, dict) and p.get("float") == "inf":
        p = math.inf
    if not isinstance(p, (int, float)) or isinstance(p, bool) or p <= 0:
        return None  # (p = 0, the count of nonzero differences, stays an unsupported op)
    em = _Emitter(graph, node)
    em.dtype = node.meta.dtype
    n = node.name
    a = em.emit(f"{n}_x1_rows", "aten.unsqueeze.default", [x1, -2], s1[:-1] + [1, s1[-1]], {"dim": -2})
    b = em.emit(f"{n}_x2_rows", "aten.unsqueeze.default", [x2, -3], s2[:-2] + [1] + s2[-2:], {"dim": -3})
    pair = out + [s1[-1]]
    d = em.emit(f"{n}_diff", "aten.sub.Tensor", [ref(a), ref(b)], pair, {"alpha": 1})
    ad = em.emit(f"{n}_absdiff", "aten.abs.default", [ref(d)], pair)
    if p == math.inf:
        em.emit(n, "aten.amax.default", [ref(ad), [-1], False], out, {"dim": [-1], "keepdim": False})
    elif p == 1:
        em.emit(n, "aten.sum.dim_IntList", [ref(ad), [-1], False], out, {"dim": [-1], "keepdim": False})
    else:
        pw = em.emit(f"{n}_pow", "aten.pow.Tensor_Scalar", [ref(ad), float(p)], pair, {"exponent": float(p)})
        sm = em.emit(f"{n}_sum", "aten.sum.dim_IntList", [ref(pw), [-1], False], out, {"dim": [-1], "keepdim": False})
        em.emit(n, "aten.pow.Tensor_Scalar", [ref(sm), 1.0 / float(p)], out, {"exponent": 1.0 / float(p)})
    return em.out


def _lower_einsum_chain(graph, node, shapes) -> list[OpNode] | None:
    """einsum(eq, [t0, t1, t2, ...]) = einsum(.., [einsum(.., [t0, t1]), t2]) ...: each step keeps the subscripts of
    its operands that a later operand or the output uses, in order of first appearance."""
    eq, tensors = node.args[0], node.args[1]
    if not isinstance(eq, str) or not isinstance(tensors, list) or len(tensors) < 3 or node.meta is None:
        return None
    eq = eq.replace(" ", "")
    if "..." in eq or "->" not in eq:
        return None  # ellipses and implicit outputs keep the op as it is
    lhs, out_sub = eq.split("->")
    subs = lhs.split(",")
    if len(subs) != len(tensors) or not all(isinstance(t, dict) and t.get("ref") in shapes for t in tensors):
        return None
    sizes: dict[str, int] = {}
    for sub, t in zip(subs, tensors):
        shape = shapes[t["ref"]]
        if len(sub) != len(shape):
            return None
        for ch, n in zip(sub, shape):
            sizes.setdefault(ch, n)
    em = _Emitter(graph, node)
    em.dtype = node.meta.dtype
    cur, cur_sub = tensors[0], subs[0]
    for i in range(1, len(tensors)):
        last = i == len(tensors) - 1
        if last:
            keep = out_sub
        else:
            later = set("".join(subs[i + 1:]) + out_sub)
            keep = "".join(dict.fromkeys(ch for ch in cur_sub + subs[i] if ch in later))
        name = node.name if last else f"{node.name}_{i}"
        step = f"{cur_sub},{subs[i]}->{keep}"
        em.emit(name, "aten.einsum.default", [step, [cur, tensors[i]]], [sizes[ch] for ch in keep],
                {"equation": step})
        cur, cur_sub = ref(name), keep
    return em.out


__all__ = ["lower", "SourceLoc"]
