"""Fusion: partition the compute ops of an `OpGraph` into kernels, by deterministic, documented rules.

Rules (each has a test in tests/test_fusion.py):

R1 epilogue   An elementwise op whose main input is the single-use result of an anchor (matmul, conv, norm,
              reduction, pool, softmax, scan, attention) or of an elementwise kernel joins that kernel, provided its
              result has the same shape (no broadcast growth). Covers bias, activation, scaling, clamp and residual
              adds after a GEMM/conv, and pure elementwise chains.
R2 norm/softmax prologue
              A norm, softmax, reduction or loss whose input is the result of a purely elementwise kernel absorbs that
              kernel as its prologue when the result has no other use. A residual add feeding a norm fuses even when
              the sum is also used later (the residual stream): the fused kernel then also writes the sum.
R3 elementwise trees
              A purely elementwise kernel that computes a side input of an elementwise op (a mask, a scaled bias)
              joins the consumer's kernel when that input has no other use, or when all its uses are ops of that
              kernel (a GRU cell's candidate n, read by both h - n and n + z * (h - n)).
R4 glue       Data movement (view/reshape/permute/transpose/slice/cat/stack/expand), allocation and identities
              (dropout in eval, contiguous, clone) are glue between kernels, not kernels. Alias-like glue
              (dropout in eval, contiguous, clone, detach, and a cast to the dtype the value already has:
              `x.to(torch.float32)` / `.float()` / `.type_as(y)` on a float32 x, which PyTorch returns as x itself;
              an expand read only by elementwise ops of the expanded shape, which broadcast by themselves) is
              transparent to R1-R3 and R7.
R5 parallel   Kernels with no path between them are independent; kernels are levelled by longest dependency path
              and each level is a parallel group.
R6 BN folding An eval-mode batch norm directly after a convolution or linear, on its single-use result, joins it
              as a per-channel scale and shift (folded into the weights by the kernel library).
R7 row statistic broadcast back
              An elementwise op that broadcasts the single-use keepdim result of a reduction (sum, mean, amax, amin,
              var, std, logsumexp, vector norm over trailing dims of at most ROW_STAT_MAX elements, plus its R1
              epilogue) back over the rows it reduced joins that kernel, whose epilogue then has the input's shape:
              a hand-written RMS norm, x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w, is one kernel that
              keeps each row in registers instead of a reduction and an elementwise kernel that reads x twice.
R8 attention  A matmul of the single-use result of a last-dim softmax (alone in its kernel, or with the cast back
              of Hugging Face's softmax(..., dtype=float32).to(q.dtype); dropout in eval being transparent) whose
              input is the single-use result of a matmul kernel (scores = q @ k^T as matmul, bmm, einsum or
              baddbmm with beta=0, and its elementwise epilogue: scale, masked_fill, additive mask) joins both:
              attention written by hand is one flash-attention kernel (the library's family "attention"), never
              materializing the scores. Grouped-query heads repeated by Hugging Face's repeat_kv (unsqueeze,
              expand, reshape; repeat_kv.py) join too: the kernel reads key/value head h // n_rep. So does a
              transpose(1, 2) that is the only use of an attention kernel's rank-4 result (this one's or
              scaled_dot_product_attention's): the kernel writes (B, L, H, D) itself, and the model's
              .contiguous() before merging the heads copies nothing.
R9 rotate_half
              Rotary embeddings' rotate_half(x) = cat((-x[..., H:], x[..., :H]), -1) over a last dim of 2H
              (rotate_half.py) is one elementwise value: the two slices and the cat join the kernel of the
              negation (each of the four results single-use), so R1/R3 take it into x * cos + rotate_half(x) * sin
              and the kernel reads x rotated instead of the halves and the concatenation passing through memory.
Anchors never merge with each other (apart from R6 and R8), so each kernel has at most one parallelisation
strategy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .catalog import ALIAS_OPS, OpInfo, base_op, lookup
from . import repeat_kv, rotate_half
from .einsum_forms import A_B, A_BT, attention_matmul_form
from .op_values import Value
from .opgraph import OpGraph, OpNode, node_refs

EPILOGUE_ANCHORS = {"matmul", "convolution", "normalization", "reduction", "pooling", "softmax", "scan",
                    "attention", "gather", "loss"}
PROLOGUE_ANCHORS = {"normalization", "softmax", "reduction", "loss"}
# R7: reductions whose keepdim result may be broadcast back over their rows, and the longest row (elements) that
# the kernel library keeps in one tile (core/kernels/reduction_rows.py)
ROW_STAT_OPS = {"sum", "mean", "amax", "amin", "var", "std", "logsumexp", "linalg_vector_norm"}
ROW_STAT_MAX = 8192
# R8: a cast between the softmax and the probabilities' matmul that the flash kernel absorbs (it casts the
# probabilities to v's dtype for the tensor cores anyway)
SOFTMAX_CASTS = {"to", "_to_copy"}
# casts that return their input itself when it already has the target dtype (`_to_copy` always copies)
NOOP_CAST_OPS = {"to", "type_as"}


@dataclass
class Group:
    gid: int
    nodes: list[str]
    anchor: str | None = None  # node name of the anchor op, None for a purely elementwise kernel
    rules: list[str] = field(default_factory=list)
    sealed: bool = False  # ends in glue it absorbed (an attention output's head transpose): nothing joins after

    def add_rule(self, rule: str) -> None:
        if rule not in self.rules:
            self.rules.append(rule)


@dataclass
class FusionPlan:
    groups: list[Group]  # in order of first node
    group_of: dict[str, int]  # compute node → group id
    glue: list[str]  # glue node names, in graph order
    alias: dict[str, str]  # value → the value it is an alias of (through R4 transparent glue), fully resolved
    info: dict[str, OpInfo]
    uses: dict[str, list[str]]  # resolved value → consumer nodes
    graph_outputs: list[str]  # resolved values the forward returns

    def resolve(self, value: str) -> str:
        return self.alias.get(value, value)


class _Fuser:
    def __init__(self, graph: OpGraph):
        self.graph = graph
        self.order = {n.name: i for i, n in enumerate(graph.nodes)}
        self.info = {n.name: lookup(n) for n in graph.nodes}
        self.nodes = {n.name: n for n in graph.nodes}
        self.alias: dict[str, str] = {}
        self.uses: dict[str, list[str]] = {}  # resolved value → consumer node names (resolved through aliases)
        self.groups: dict[int, Group] = {}
        self.group_of: dict[str, int] = {}
        self.output_values = {r for o in graph.outputs for r in _refs(o)}
        self.noop_casts = {n.name for n in graph.nodes if self._is_noop_cast(n)}
        for name in self.noop_casts:  # glue, not an elementwise kernel
            self.info[name] = OpInfo("data_movement", "glue")
        consumers: dict[str, list[OpNode]] = {}
        for n in graph.nodes:
            for r in dict.fromkeys(node_refs(n)):
                consumers.setdefault(r, []).append(n)
        self.broadcast_expands = {n.name for n in graph.nodes
                                  if self._is_broadcast_expand(n, consumers.get(n.name, []))}

    # ---- value bookkeeping ------------------------------------------------------------------------------------
    def resolve(self, value: str) -> str:
        while value in self.alias:
            value = self.alias[value]
        return value

    def producer(self, value: str) -> str | None:
        """The compute node that produces `value` (getitem of a tuple op resolves to the op), else None."""
        value = self.resolve(value)
        node = self.nodes.get(value)
        if node is None:
            return None
        if node.target == "getitem":
            src = node_refs(node)[0]
            return self.producer(src)
        return None if self.info[value].is_glue and value not in self.group_of else value

    def use_count(self, value: str) -> int:
        value = self.resolve(value)
        return len(self.uses.get(value, [])) + (1 if value in self._resolved_outputs() else 0)

    def _resolved_outputs(self) -> set[str]:
        cached = getattr(self, "_outs", None)
        if cached is None:
            cached = {self.resolve(v) for v in self.output_values}
            self._outs = cached
        return cached

    # ---- groups -----------------------------------------------------------------------------------------------
    def gdeps(self, gid: int) -> set[int]:
        deps: set[int] = set()
        for name in self.groups[gid].nodes:
            for ref in node_refs(self.nodes[name]):
                for g in self._producing_groups(ref):
                    if g != gid:
                        deps.add(g)
        return deps

    def _producing_groups(self, value: str, seen: set[str] | None = None) -> set[int]:
        """Groups a value depends on directly, looking through glue."""
        value = self.resolve(value)
        prod = self.producer(value)
        if prod is not None:
            return {self.group_of[prod]} if prod in self.group_of else set()
        node = self.nodes.get(value)
        if node is None:
            return set()
        seen = seen if seen is not None else set()
        if value in seen:
            return set()
        seen.add(value)
        out: set[int] = set()
        for ref in node_refs(node):
            out |= self._producing_groups(ref, seen)
        return out

    def reaches(self, src: int, dst: int, skip_direct: bool) -> bool:
        """Is there a dependency path dst ← ... ← src (dst depends on src), optionally ignoring direct edges?"""
        stack = [g for g in self.gdeps(dst) if not (skip_direct and g == src)]
        seen: set[int] = set()
        while stack:
            g = stack.pop()
            if g == src:
                return True
            if g in seen:
                continue
            seen.add(g)
            stack.extend(self.gdeps(g))
        return False

    def merge(self, into: int, other: int, rule: str) -> None:
        a, b = self.groups[into], self.groups.pop(other)
        a.nodes = sorted(a.nodes + b.nodes, key=self.order.__getitem__)
        if a.anchor is None:
            a.anchor = b.anchor
        for r in b.rules:
            a.add_rule(r)
        a.add_rule(rule)
        for n in b.nodes:
            self.group_of[n] = into

    def can_merge(self, g: int, h: int) -> bool:
        """Merging h into g (h's node consumes g's output) must not create a cycle through a third group."""
        return not self.reaches(g, h, skip_direct=True) and not self.reaches(h, g, skip_direct=True)

    def is_pure_elementwise(self, gid: int) -> bool:
        return self.groups[gid].anchor is None

    # ---- the pass ---------------------------------------------------------------------------------------------
    def run(self) -> FusionPlan:
        glue: list[str] = []
        self.glue = glue
        for node in self.graph.nodes:
            info = self.info[node.name]
            refs = node_refs(node)
            if (info.is_glue and (base_op(node.op) in ALIAS_OPS or node.name in self.noop_casts
                                  or node.name in self.broadcast_expands) and refs and node.meta is not None):
                self.alias[node.name] = refs[0]
                continue  # an alias is not a consumer: its own consumers are counted through it
            if info.category == "identity" and node.meta is None:
                continue  # runtime assertions (_assert_tensor_metadata) consume nothing
            for ref in dict.fromkeys(refs):
                self.uses.setdefault(self.resolve(ref), []).append(node.name)
        for node in self.graph.nodes:
            info = self.info[node.name]
            if node.target == "getitem":
                src = self.producer(node_refs(node)[0])
                if src is not None and src in self.group_of:  # an element of a kernel's tuple result
                    group = self.groups[self.group_of[src]]
                    group.nodes.append(node.name)
                    self.group_of[node.name] = group.gid
                    continue
            if info.is_glue and base_op(node.op) == "cat" and self._fuse_rotate_half(node):
                continue
            if info.is_glue and base_op(node.op) == "transpose" and self._absorb_head_transpose(node):
                continue
            if info.is_glue:
                glue.append(node.name)
                continue
            gid = self._new_gid()
            self.groups[gid] = Group(gid, [node.name], anchor=None if info.is_elementwise else node.name)
            self.group_of[node.name] = gid
            if info.is_elementwise:
                self._fuse_elementwise(node, gid)
            elif info.category in PROLOGUE_ANCHORS:
                self._fuse_prologue(node, gid)
            elif info.category == "matmul":
                self._fuse_attention(node, gid)
            if base_op(node.op) == "batch_norm" and not node.attrs.get("training", False):
                self._fold_batch_norm(node)
        self._absorb_shared_prologues()
        groups = sorted(self.groups.values(), key=lambda g: self.order[g.nodes[0]])
        return FusionPlan(groups=groups, group_of=dict(self.group_of), glue=glue,
                          alias={k: self.resolve(k) for k in self.alias}, info=self.info,
                          uses={k: list(v) for k, v in self.uses.items()},
                          graph_outputs=sorted(self._resolved_outputs()))

    def _new_gid(self) -> int:
        self._next = getattr(self, "_next", -1) + 1
        return self._next

    def _is_noop_cast(self, node: OpNode) -> bool:
        """`to(dtype)` / `type_as` to the dtype its input already has, without copy=True or a memory format:
        PyTorch returns the input itself, so no kernel and no copy."""
        if base_op(node.op) not in NOOP_CAST_OPS or node.meta is None or node.tuple_output:
            return False
        refs = node_refs(node)
        src = self._meta(refs[0]) if refs else None
        attrs = node.attrs
        return (src is not None and src.dtype == node.meta.dtype and list(src.shape) == list(node.meta.shape)
                and not attrs.get("copy") and attrs.get("memory_format") is None)

    def _is_broadcast_expand(self, node: OpNode, consumers: list[OpNode]) -> bool:
        """`expand`/`expand_as` read only by elementwise ops whose result has the expanded shape because another
        operand has it (F.normalize's `x / norm.expand_as(x)`): the ops' own broadcasting does the same, so the
        expand is an alias and the statistic can meet its rows (R7). `relu(v.expand(...))` keeps its expand."""
        if base_op(node.op) not in ("expand", "expand_as") or node.meta is None or not consumers:
            return False
        if node.name in self.output_values:
            return False
        shape = list(node.meta.shape)

        def broadcasts_back(c: OpNode) -> bool:  # another operand of c has the expanded shape already
            others = [r for r in node_refs(c) if r != node.name]
            return any(m is not None and list(m.shape) == shape for m in map(self._meta, others))

        return all(lookup(c).is_elementwise and c.meta is not None and list(c.meta.shape) == shape
                   and c.name not in self.noop_casts and broadcasts_back(c) for c in consumers)

    def _tensor_inputs(self, node: OpNode) -> list[str]:
        return [r for r in node_refs(node) if self._meta(r) is not None]

    def _meta(self, value: str):
        value = self.resolve(value)
        node = self.nodes.get(value)
        if node is not None:
            return node.meta
        inp = self.graph.input(value)
        return inp.meta if inp else None

    def _fuse_elementwise(self, node: OpNode, gid: int) -> None:
        out = node.meta
        # R1: join the kernel that produced the main input.
        for ref in self._tensor_inputs(node):
            prod = self.producer(ref)
            if prod is None or self.use_count(ref) != 1 or out is None:
                continue
            pmeta = self._meta(ref)
            if pmeta is None or pmeta.shape != out.shape:
                continue
            pg = self.group_of[prod]
            anchor = self.groups[pg].anchor
            if anchor is not None and self.info[anchor].category not in EPILOGUE_ANCHORS or self.groups[pg].sealed:
                continue
            if self.nodes[self.resolve(ref)].target == "getitem" and anchor is None:
                continue
            if pg != gid and self.can_merge(pg, gid):
                self.merge(pg, gid, "R1")
                gid = pg
                break
        else:
            gid = self._fuse_broadcast_back(node, gid)
        # R3: pull in purely elementwise producers of side inputs used only here (once, or by several ops of
        # this kernel). A merge can make another producer's uses all local (var.clamp read by both the log and
        # the division of a Gaussian NLL), so the kernel's elementwise ops are rescanned until nothing joins.
        scan = self._tensor_inputs(node)
        while scan:
            joined = False
            for ref in scan:
                prod = self.producer(ref)
                if prod is None or (self.use_count(ref) != 1 and not self._used_only_in(ref, gid)):
                    continue
                pg = self.group_of[prod]
                if pg == gid or not self.is_pure_elementwise(pg):
                    continue
                if self.can_merge(pg, gid):
                    self.merge(gid, pg, "R3")
                    joined = True
            scan = [r for n in self.groups[gid].nodes if self.info[n].is_elementwise
                    for r in self._tensor_inputs(self.nodes[n])] if joined else []

    def _used_only_in(self, value: str, gid: int) -> bool:
        """Every use of `value` is an op of group `gid` (not a graph output, no glue in between)."""
        value = self.resolve(value)
        users = self.uses.get(value, [])
        return (bool(users) and value not in self._resolved_outputs()
                and all(self.group_of.get(u) == gid for u in users))

    def _fuse_rotate_half(self, node: OpNode) -> bool:
        """R9: rotate_half(x) (rotate_half.py) joins the kernel of its negation, which then yields the whole
        rotated tensor; the two halves leave the glue. Each of the four results must have no other use."""
        m = rotate_half.match(node.name, node.args, self._value)
        if m is None or node.meta is None or any(self.use_count(v) != 1 for v in (m.neg, m.lo, m.hi)):
            return False
        gid = self.group_of.get(m.neg)
        if gid is None or self.groups[gid].nodes != [m.neg] or not {m.lo, m.hi} <= set(self.glue):
            return False
        for name in (m.lo, m.hi):
            self.glue.remove(name)
        group = self.groups[gid]
        group.nodes = sorted(group.nodes + [m.lo, m.hi, node.name], key=self.order.__getitem__)
        for name in (m.lo, m.hi, node.name):
            self.group_of[name] = gid
        group.add_rule("R9")
        return True

    def _value(self, name: str) -> Value | None:
        node = self.nodes.get(name)
        meta = self._meta(name)
        if meta is None:
            return None
        return Value(base_op(node.op) if node else "", node.args if node else [], list(meta.shape))

    def _fuse_broadcast_back(self, node: OpNode, gid: int) -> int:
        """R7: join the kernel of a row statistic that `node` broadcasts back over the rows it reduced."""
        out = node.meta
        if out is None:
            return gid
        for ref in self._tensor_inputs(node):
            prod = self.producer(ref)
            if prod is None or self.use_count(ref) != 1 or prod not in self.group_of:
                continue
            pg = self.group_of[prod]
            anchor = self.groups[pg].anchor
            if pg == gid or anchor is None or not self._row_stat(anchor, out.shape):
                continue
            if list(self._meta(ref).shape) != list(self.nodes[anchor].meta.shape):
                continue
            if self.can_merge(pg, gid):
                self.merge(pg, gid, "R7")
                return pg
        return gid

    def _fuse_attention(self, node: OpNode, gid: int) -> None:
        """R8: `node` (probabilities @ v) joins the softmax and the scores' matmul kernel before it."""
        refs = self._tensor_inputs(node)
        if len(refs) != 2 or node.meta is None or self._matmul_form(node) != A_B:
            return
        sm = self.producer(refs[0])
        if sm is None or self.use_count(refs[0]) != 1 or sm not in self.group_of:
            return
        sg = self.group_of[sm]
        tail = [sm]
        if base_op(self.nodes[sm].op) in SOFTMAX_CASTS:  # Hugging Face: softmax(s, -1, dtype=float32).to(q.dtype)
            crefs = self._tensor_inputs(self.nodes[sm])
            sm = self.producer(crefs[0]) if len(crefs) == 1 and self.use_count(crefs[0]) == 1 else None
            if sm is None or self.group_of.get(sm) != sg:
                return
            tail.insert(0, sm)
        snode = self.nodes[sm]
        if self.groups[sg].nodes != tail or base_op(snode.op) not in ("softmax", "_softmax") or snode.meta is None:
            return
        if snode.attrs.get("dtype") not in (None, {"dtype": "float32"}):
            return
        rank = len(snode.meta.shape)
        dim = snode.attrs.get("dim", -1)
        if rank not in (3, 4) or not isinstance(dim, int) or dim % rank != rank - 1:
            return
        srefs = self._tensor_inputs(snode)
        mm = self.producer(srefs[0]) if srefs else None
        if mm is None or self.use_count(srefs[0]) != 1 or mm not in self.group_of:
            return
        mg = self.group_of[mm]
        anchor = self.groups[mg].anchor
        form = self._matmul_form(self.nodes[anchor]) if anchor is not None else None
        if form is None or {"R6", "R8"} & set(self.groups[mg].rules):
            return
        operands = self._tensor_inputs(self.nodes[anchor])[-2:]  # baddbmm(beta=0): its first input is ignored
        qk = self.nodes[anchor].meta
        if qk is None or list(qk.shape) != list(snode.meta.shape) or not self._flash_operands(
                operands + refs[1:], rank, k_stored=form == A_BT):
            return
        if self.can_merge(mg, sg):
            self.merge(mg, sg, "R8")
            if self.can_merge(mg, gid):
                self.merge(mg, gid, "R8")
                for ref, stored_k in ((operands[-1], form == A_BT), (refs[1], True)):
                    self._absorb_repeat_kv(mg, ref, transposed=not stored_k)
            else:  # keep the plan as it was: the softmax (and its cast) go back to their own kernel
                self._split_off(mg, tail)

    def _absorb_repeat_kv(self, gid: int, operand: str, transposed: bool) -> None:
        """R8 with grouped-query heads: the repeat_kv glue (repeat_kv.py) that makes `operand` joins the attention
        kernel, which reads key/value head h // n_rep, so the kernel's input is the unrepeated tensor. `transposed`:
        the operand must be the repeated tensor's transpose (k^T)."""
        m = repeat_kv.match(operand, self._value)
        if m is None or m.transposed != transposed or m.n_rep < 2 or not set(m.nodes) <= set(self.glue):
            return
        if any(self.use_count(v) != 1 for v in m.nodes):
            return
        group = self.groups[gid]
        for name in m.nodes:
            self.glue.remove(name)
            self.group_of[name] = gid
        group.nodes = sorted(group.nodes + list(m.nodes), key=self.order.__getitem__)

    def _absorb_head_transpose(self, node: OpNode) -> bool:
        """R8 / attention: `node`, transpose(1, 2) of a rank-4 attention kernel's only result and its only use
        (`(p @ v).transpose(1, 2).contiguous()`: the heads back beside the features), joins that kernel, which then
        writes the (B, L, H, D) tensor directly instead of glue copying it; the kernel is sealed."""
        refs = node_refs(node)
        if len(refs) != 1 or node.meta is None or len(node.meta.shape) != 4 or len(node.args) != 3:
            return False
        if not all(isinstance(d, int) for d in node.args[1:]) or {d % 4 for d in node.args[1:]} != {1, 2}:
            return False
        src = self.resolve(refs[0])
        prod = self.producer(src)
        if prod is None or prod not in self.group_of or self.use_count(src) != 1:
            return False
        gid = self.group_of[prod]
        group = self.groups[gid]
        anchor = group.anchor
        if group.sealed or not ("R8" in group.rules or anchor and self.info[anchor].category == "attention"):
            return False
        for n in group.nodes:  # the attention result must be the kernel's only value used outside it
            if n != prod and (n in self._resolved_outputs()
                              or any(self.group_of.get(u) != gid for u in self.uses.get(n, []))):
                return False
        group.nodes.append(node.name)
        group.sealed = True
        self.group_of[node.name] = gid
        return True

    def _matmul_form(self, node: OpNode) -> str | None:
        """einsum_forms.attention_matmul_form of `node`, with its two operands (baddbmm: and its ignored input)."""
        op = base_op(node.op)
        if len(self._tensor_inputs(node)) != (3 if op == "baddbmm" else 2):
            return None
        return attention_matmul_form(op, node.attrs)

    def _flash_operands(self, refs: list[str], rank: int, k_stored: bool = False) -> bool:
        """q, k^T (k when `k_stored`) and v as the flash kernel takes them: one float dtype, the same batch dims,
        head dims <= 256."""
        metas = [self._meta(r) for r in refs]
        if any(m is None or len(m.shape) != rank for m in metas):
            return False
        q, kt, v = (list(m.shape) for m in metas)
        if k_stored:
            kt = kt[:-2] + kt[-2:][::-1]
        return (len({m.dtype for m in metas}) == 1 and metas[0].dtype in _FLOATS
                and q[:-2] == kt[:-2] == v[:-2] and q[-1] == kt[-2] and kt[-1] == v[-2] and max(q[-1], v[-1]) <= 256)

    def _split_off(self, gid: int, names: list[str]) -> None:
        group = self.groups[gid]
        for name in names:
            group.nodes.remove(name)
        group.rules.remove("R8")
        new = self._new_gid()
        self.groups[new] = Group(new, list(names), anchor=names[0], rules=["R1"] if len(names) > 1 else [])
        for name in names:
            self.group_of[name] = new

    def _absorb_shared_prologues(self) -> None:
        """R2 for R7 kernels: a purely elementwise kernel whose every use lies in one row-statistic kernel (the
        float32 cast of a hand-written RMS norm, read by the reduction's prologue and by the broadcast-back
        epilogue) joins it, since that kernel holds the whole row (and writes the value too if the forward
        returns it)."""
        changed = True
        while changed:
            changed = False
            for pid, group in sorted(self.groups.items()):
                if group.anchor is not None:
                    continue
                consumers: set[int | None] = set()
                for name in group.nodes:
                    consumers |= {self.group_of.get(u) for u in self.uses.get(name, [])} - {pid}
                if len(consumers) != 1 or None in consumers:
                    continue
                gid = consumers.pop()
                if "R7" in self.groups[gid].rules and self.can_merge(pid, gid):
                    self.merge(gid, pid, "R2")
                    changed = True
                    break

    def _row_stat(self, anchor: str, shape) -> bool:
        """Whether `anchor` reduces trailing dims of a float tensor of `shape` with keepdim, to one result, over
        rows of at most ROW_STAT_MAX elements."""
        node = self.nodes[anchor]
        if base_op(node.op) not in ROW_STAT_OPS or node.meta is None or not node.attrs.get("keepdim", False):
            return False
        refs = self._tensor_inputs(node)
        src = self._meta(refs[0]) if refs else None
        if src is None or list(src.shape) != list(shape) or src.dtype not in _FLOATS:
            return False
        rank, red = len(shape), list(node.meta.shape)
        dims = node.attrs.get("dim")
        dims = list(range(rank)) if dims in (None, []) else [d % rank for d in (dims if isinstance(dims, list)
                                                                                 else [dims])]
        row = 1
        for d in dims:
            row *= shape[d]
        trailing = sorted(dims) == list(range(rank - len(dims), rank))
        return (trailing and len(red) == rank and all(red[d] == 1 for d in dims) and 1 < row <= ROW_STAT_MAX
                and len(dims) < rank)

    def _fuse_prologue(self, node: OpNode, gid: int) -> None:
        inputs = self._tensor_inputs(node)
        if not inputs:
            return
        ref = inputs[0]
        prod = self.producer(ref)
        if prod is None:
            return
        pg = self.group_of[prod]
        if pg == gid or not self.is_pure_elementwise(pg):
            return
        single = self.use_count(ref) == 1
        residual = self.info[node.name].category == "normalization"
        if (single or residual) and self.can_merge(pg, gid):
            self.merge(pg, gid, "R2")

    def _fold_batch_norm(self, node: OpNode) -> None:
        gid = self.group_of[node.name]
        if self.groups[gid].nodes != [node.name]:
            return
        ref = self._tensor_inputs(node)[0]
        prod = self.producer(ref)
        if prod is None or self.use_count(ref) != 1:
            return
        pg = self.group_of[prod]
        group = self.groups[pg]
        if group.anchor != prod or len(group.nodes) != 1:
            return
        if self.info[prod].category == "convolution" or base_op(self.nodes[prod].op) == "linear":
            if self.can_merge(pg, gid):
                self.merge(pg, gid, "R6")


_FLOATS = {"float32", "float16", "bfloat16"}  # TensorMeta.dtype names


def _refs(arg) -> list[str]:
    from .opgraph import refs_in

    return refs_in(arg)


def fuse(graph: OpGraph) -> FusionPlan:
    return _Fuser(graph).run()
