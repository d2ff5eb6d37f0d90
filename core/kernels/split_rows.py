"""Rows too long for one block's registers, read once: each row is split over S cooperating blocks.

A two-pass row kernel (statistics, then normalize) reads a long row twice: 0.67 of a copy at best. Here a block
takes an atomic ticket (row = ticket // S, segment = ticket % S), loads its segment's chunks into registers,
reduces them to a few float32 statistics, publishes each as a 64-bit word (flag 1 << 32 | float32 bits: one
atomic exchange publishes a value and its flag together, so relaxed ordering suffices), spins until every
segment of its row has published, merges them, and finishes its chunks from registers. Deadlock-free because
tickets are taken in start order: while a row is incomplete, the running blocks that wait hold the lowest
unfinished tickets, all of one row, at most S - 1 of them, so a free slot starts the next ticket (the GPU must
hold S blocks at once: plan() caps S at TUNING["split_max_segments"], 32). The ticket and the status words are
zeroed by the wrapper on every call, in one allocation. Users: norm_split.py (layer / rms / instance / group
norm), softmax_split.py.
"""

from __future__ import annotations

from .base import pow2_at_least
from .rowwise import TUNING, Kernel, Layout, cdiv

RELAXED = "memory_order=ct.MemoryOrder.RELAXED"
LOW32 = "4294967295"
FLAGGED = "4294967296"  # the smallest status word that carries a flag: a word below it is not yet published


def flag_word(flag: str, value: str) -> str:
    """A 64-bit status word: `flag` in the high half, the float32 bits of `value` in the low half (one atomic
    exchange publishes both; scan.py's look-back uses the same words)."""
    return f"({flag} << 32) | (ct.bitcast({value}, ct.int32).astype(ct.int64) & {LOW32})"


def word_value(word: str) -> str:
    """The float32 in the low half of a status word."""
    return f"ct.bitcast(({word} & {LOW32}).astype(ct.int32), ct.float32)"


def plan(L: Layout, elems, ragged: bool = False) -> tuple[int, int] | None:
    """(segments S, chunks per segment) for rows of one-row tiles with several chunks, or None: `elems` unset,
    fewer than two segments, more than TUNING["split_max_segments"], or segments of half `elems` or less (a
    chunk count without a divisor near `elems / chunk`). Chunks per segment: the largest divisor of the chunk
    count within `elems`; with `ragged`, when no divisor is near, about `elems / chunk` chunks per segment and a
    short last segment (SplitRow.chunk: its slots past the row repeat the row's last chunk, left out of the
    statistics by the caller)."""
    if not elems or L.kind not in ("row", "group") or L.BO != 1 or L.nch < 2:
        return None
    elems = int(elems)
    cps = max([d for d in range(1, L.nch + 1) if L.nch % d == 0 and d * L.chunk_elems <= elems] or [1])
    if ragged and 2 * cps * L.chunk_elems <= elems:
        cps = max(1, elems // L.chunk_elems)
        cps = cdiv(L.nch, cdiv(L.nch, cps))  # the same segment count, the slots spread evenly
    segments = cdiv(L.nch, cps)
    if not 2 <= segments <= int(TUNING["split_max_segments"]) or 2 * cps * L.chunk_elems <= elems:
        return None
    return segments, cps


class SplitRow:
    """The protocol's code in `kern`: coordinates from the ticket, publishing, waiting and reading back."""

    def __init__(self, kern: Kernel, L: Layout, segments: int, prefix: str, names: list[str]):
        self.kern, self.L, self.S, self.prefix, self.names = kern, L, segments, prefix, names
        self.k = kern.body
        L.hints = True  # split rows' loads and stores take the row kernels' hints, chunk loads their TMA choice
        L.chunk_tma = TUNING["split_chunk_tma"]
        if TUNING["split_occupancy"]:
            kern.options["occupancy"] = int(TUNING["split_occupancy"])

    def emit_coords(self) -> None:
        k, L, S = self.k, self.L, self.S
        ticket = self.kern.tensor(f"{self.prefix}_ticket", f"{self.prefix}_ticket")
        k(f"tid = ct.atomic_add({ticket}, 0, 1, {RELAXED})")
        k(f"seg = tid % {S}")
        k(f"pid = tid // {S}")
        if L.kind == "group":  # group norm's channel rows: (group, channel row, position) tiles
            k("rows = pid + ct.arange(1, dtype=ct.int32)[:, None, None]")
            k(f"chans = ct.arange({L.BC}, dtype=ct.int32)[None, :, None]")
        else:
            k("rows = pid + ct.arange(1, dtype=ct.int32)[:, None]")

    def chunk(self, i: int, cps: int) -> str:
        """Emit and return the variable of the segment's `i`-th chunk index (of `cps` chunks per segment). In a
        short last segment (plan's `ragged`) a slot past the row reads and writes the row's last chunk again
        (same block, same values) and `in<i>` says whether the slot is a chunk of its own: its statistics must
        leave that repeat out (see past_row)."""
        nch = self.L.nch
        if not self.past_row(i, cps):
            self.k(f"c{i} = seg * {cps} + {i}" if cps > 1 else f"c{i} = seg")
        else:
            self.k(f"in{i} = seg * {cps} + {i} < {nch}")
            self.k(f"c{i} = ct.minimum(seg * {cps} + {i}, {nch - 1})")
        return f"c{i}"

    def past_row(self, i: int, cps: int) -> bool:
        """Whether slot `i` of the last segment lies past the row (then `in<i>` was emitted by chunk())."""
        return (self.S - 1) * cps + i >= self.L.nch

    def status(self, v: str) -> str:
        return self.kern.tensor(f"st_{v}", f"{self.prefix}_st_{v}")

    def publish(self) -> None:
        """Publish each statistic `v` (a one-element tile in scope under its name) for this segment."""
        for v in self.names:
            self.k(f"ct.atomic_xchg({self.status(v)}, (pid, seg), {flag_word('1', f'ct.sum({v})')}, {RELAXED})")

    def gather(self) -> str:
        """Wait until every segment of the row has published; `a_<v>` are then (Sp,) tiles of their values
        (Sp = S rounded up to a power of two; lanes past S repeat the last segment). Returns the live-lane mask."""
        k, S = self.k, self.S
        sp = pow2_at_least(S)
        k(f"sidx = ct.arange({sp}, dtype=ct.int32)")
        segs = "sidx" if sp == S else f"ct.minimum(sidx, {S - 1})"
        spin_read(k, {v: self.status(v) for v in self.names}, f"(pid, {segs})")
        return f"sidx < {S}"

    def workspace(self, device: str) -> list[str]:
        """Wrapper lines zeroing the ticket and the (rows, S) status words (status_workspace)."""
        return status_workspace(self.prefix, device, self.L.O * self.S, self.names, f".view({self.L.O}, {self.S})")

    def grid(self) -> tuple[int]:
        return (self.L.O * self.S,)


def spin_read(k, arrays: dict[str, str], index: str) -> None:
    """Read the status words at `index` of each array (statistic name -> kernel array) until all carry a flag;
    `a_<name>` are then their float32 values. (softmax_flat.py waits on its window of blocks the same way.)"""
    names = list(arrays)

    def read():
        for v in names:
            k(f"w_{v} = ct.atomic_add({arrays[v]}, {index}, 0, {RELAXED})")
        if len(names) > 1:
            out = f"w_{names[0]}"
            for v in names[1:]:
                out = f"ct.minimum({out}, w_{v})"
            k(f"w_min = {out}")

    read()
    lowest = "w_min" if len(names) > 1 else f"w_{names[0]}"
    with k.block(f"while ct.min({lowest}) < {FLAGGED}:"):
        read()
    for v in names:
        k(f"a_{v} = {word_value(f'w_{v}')}")


def status_workspace(p: str, device: str, n: int, names, view: str = "") -> list[str]:
    """Wrapper lines zeroing the ticket `<p>_ticket` and the status arrays `<p>_st_<name>` of `n` words each (then
    `view`) in one allocation (one fill per call, not one per array); each part starts on a 16-byte boundary."""
    stride = n + n % 2  # int64 words per status array, rounded up to 16 bytes
    lines = [f"{p}_ws = torch.zeros(({2 + stride * len(names)},), dtype=torch.int64, device={device}.device)",
             f"{p}_ticket = {p}_ws[:1].view(torch.int32)[:1]"]
    for i, v in enumerate(names):
        start = 2 + i * stride
        lines.append(f"{p}_st_{v} = {p}_ws[{start}:{start + n}]{view}")
    return lines
