"""Sorts and top-k over lines longer than one tile holds (topk family): `torch.sort` / `argsort` over a vocabulary
(top-p sampling sorts 32000-50257 logits per token), `torch.topk(logits, 50)` for top-k sampling, and top-k with
k above the selection kernel's over lines longer than the bitonic tile.

Two kernels over the packed keys of sort_keys.py (the value's order-preserving image in the high bits, P - 1 -
column in the low ones, P the line length rounded up to whole chunks: every key unique, descending key order is
PyTorch's order with ties at the lower index first and NaN first for largest=True, last otherwise):

1. chunks: every (line, chunk of C elements) block sorts its chunk's keys descending with the bitonic network of
   sort_bitonic.py and stores the first KC = min(C, next power of two >= k) of them to a (lines, chunks, KC)
   scratch buffer (a key past its chunk's first KC has at least KC >= k larger keys: never in the top k); for
   KC < C by groups of KC and halving rounds (SORT_TUNING["topk_rounds"]: 3x fewer compare-exchanges for KC = 64
   of 4096) rather than a whole sort;
2. ranks: every kept key finds, in each chunk's sorted run, how many keys are larger by a binary search (log2 KC + 1
   gathers; in its own chunk that is its position), adds them up to its rank in the whole line (exact: keys are
   unique) and, when the rank is below k, scatters its value and column to output position `rank`. A run
   truncated at KC only undercounts a key whose rank is >= KC >= k anyway. Padding keys (past the line) rank at
   least n >= k and are masked off as well.

Work: the chunk sorts are the bitonic sort's (log2 C (log2 C + 1) / 2 stages per element), the ranks chunks x
(log2 KC + 1) dependent gathers per kept key, from a buffer that L2 mostly holds; no atomics, no global
synchronisation, deterministic.
"""

from __future__ import annotations

from .base import pow2_at_least
from .indexing import array_param, module, out_param, ret_outputs
from .sort_bitonic import SORT_TUNING, first_keys, line_keys, line_wrapper_head, sort_decorator
from .sort_keys import Keys
I = "    "


def plan(n: int, k: int) -> tuple[int, int, int, int]:
    """(C, NC, KC, T): chunk length, chunks per line, keys kept per chunk, keys per rank block."""
    C = min(int(SORT_TUNING["long_chunk"]), pow2_at_least(n, 2))
    NC = -(-n // C)
    KC = min(C, pow2_at_least(k))
    return C, NC, KC, min(KC, int(SORT_TUNING["rank_tile"]))


def kernels(kid: str, spec, x, op: str, k: int, n: int, largest: bool, kinds: list[int],
            keys: Keys) -> list[str]:
    """The chunk-sort and rank kernels' sources over `keys` (spanning P = C * NC columns)."""
    C, NC, KC, T = plan(n, k)
    P = C * NC
    xp = array_param(x)
    order = "descending" if largest else "ascending"
    sort = [sort_decorator(),
            f"def {kid}_chunks_kernel({xp}, S, C: ct.Constant[int], KC: ct.Constant[int]):",
            f'{I}"""{op}: chunk {order} sort of lines of {n} ({NC} chunks of {C}, the first {KC} keys of each '
            'kept)"""',
            f"{I}pid = ct.bid(0)",
            f"{I}row = pid // {NC}",
            f"{I}ch = pid % {NC}",
            f"{I}t = ct.load({xp}, index=(row, ch), shape=(1, C), padding_mode=ct.PaddingMode.ZERO)"
            + keys.load_cast,
            f"{I}cols = ch * C + ct.broadcast_to(ct.arange(C, dtype=ct.int32)[None, :], (1, C))"]
    sort += keys.encode(largest, n, span=str(P))
    sort += first_keys("1", C, "C", KC, "KC", SORT_TUNING["topk_rounds"], into="keys")
    sort.append(f"{I}ct.store(S, index=(row, ch, 0), tile=ct.reshape(keys, (1, 1, KC)))")
    outs = [out_param(o) for o in spec.outputs]
    rank = ["@ct.kernel",
            f"def {kid}_rank_kernel(S, {', '.join(outs)}, T: ct.Constant[int]):",
            f'{I}"""{op}: each kept key\'s rank in its whole line, by a binary search of every chunk\'s sorted '
            f'run; the top {k} scattered to their positions"""',
            f"{I}pid = ct.bid(0)",
            f"{I}tb = pid % {KC // T}",
            f"{I}ch = (pid // {KC // T}) % {NC}",
            f"{I}row = pid // {(KC // T) * NC}",
            f"{I}key = ct.reshape(ct.load(S, index=(row, ch, tb), shape=(1, 1, T)), (T,))",
            f"{I}place = ct.full((T,), 0, dtype=ct.int32)",
            f"{I}for c in range({NC}):",
            f"{I}{I}pos = ct.full((T,), 0, dtype=ct.int32)"]
    step = KC // 2
    while step >= 1:  # the larger keys of a descending run are a prefix: find its length
        rank += [f"{I}{I}probe = ct.gather(S, (row, c, {f'pos + {step - 1}' if step > 1 else 'pos'}))",
                 f"{I}{I}pos = ct.where(probe > key, pos + {step}, pos)"]
        step //= 2
    rank += [f"{I}{I}probe = ct.gather(S, (row, c, pos))",
             f"{I}{I}place = place + ct.where(probe > key, pos + 1, pos)",
             f"{I}keep = (place < {k}) & (key != {keys.min_key})"]
    rank += keys.decode(largest, "key", str(P))
    for o, kind in zip(outs, kinds):
        tile = "top_val" if kind == 0 else "top_col"
        rank.append(f"{I}ct.scatter({o}, (row, place), {tile}.astype({o}.dtype), mask=keep)")
    return ["\n".join(sort), "\n".join(rank)]


def generate(spec, rec, x, shape, dim, k, largest, rows, kinds):
    kid = spec.id
    n = shape[dim]
    C, NC, KC, T = plan(n, k)
    keys = line_keys(x.dtype, C * NC)
    srcs = kernels(kid, spec, x, rec.op, k, n, largest, kinds, keys)
    xp = array_param(x)
    w, outs, device = line_wrapper_head(spec, x, shape, dim, k, rows)
    runs = f"{kid}_runs"
    w += [f"{I}{runs} = torch.empty(({rows}, {NC}, {KC}), dtype={keys.torch_dtype}, device={device})  # sorted runs",
          f"{I}ct.launch(torch.cuda.current_stream(), ({rows * NC}, 1, 1), {kid}_chunks_kernel, "
          f"({xp}, {runs}, {C}, {KC}))",
          f"{I}ct.launch(torch.cuda.current_stream(), ({rows * NC * (KC // T)}, 1, 1), {kid}_rank_kernel, "
          f"({', '.join([runs] + outs + [str(T)])}))",
          ret_outputs(spec)]
    note = (f"{rec.op} k={k} {'largest' if largest else 'smallest'} along dim {dim} of {shape}: {rows} lines of {n} "
            f"as {NC} chunks of {C} sorted by a bitonic network (first {KC} kept), then each kept key ranked in "
            f"its line by binary searches of the {NC} runs and the top {k} scattered")
    return module(spec, srcs, "\n".join(w), [f"{kid}_chunks_kernel", f"{kid}_rank_kernel"], [note])
