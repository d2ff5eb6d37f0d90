"""The packed keys of the topk family (topk.py's selection rounds, sort_bitonic.py's whole-line sorts,
sort_long.py's chunk sorts and ranks): every element of a line becomes one integer key, its value's
order-preserving image in the high bits and `span - 1 - column` in the low ones, so keys are unique, a descending
sort of them is PyTorch's stable order (ties at the lower index first), and one max gives both a value and the
first column holding it.

Two widths:
- wide (int64): the float32 image of the value (any source dtype, loaded as float32) << 32 | span - 1 - column;
- narrow (int32, SORT_TUNING["keys32"]): a float16 / bfloat16 value's own 16 bits << 16 | span - 1 - column, for
  lines whose span is at most 65536. Half the registers per key and one integer instruction per max / min / compare
  instead of two or three.

The image: the float's bits with the magnitude bits flipped for negatives (order-preserving as signed integers) and
moved up one, so -0.0 ranks with +0.0 (equal to PyTorch, kept in index order; a -0.0 comes back as +0.0),
complemented for largest=False. NaN (any sign, any payload) takes the rank above every number for largest and
below every number otherwise, as PyTorch orders NaN, and still above the padding key (the width's minimum), which
padding columns past the line and selected keys take.
"""

from __future__ import annotations

from dataclasses import dataclass

I = "    "
INT64_MIN = "-9223372036854775808"
INT32_MIN = "-2147483648"
NARROW_DTYPES = {"float16": "ct.float16", "bfloat16": "ct.bfloat16"}
NARROW_SPAN = 1 << 16


@dataclass(frozen=True)
class Keys:
    """One key width's code: `narrow` int32 keys of a 16-bit float `dtype`, else int64 keys of float32 images."""
    narrow: bool = False
    dtype: str = "float32"

    @classmethod
    def for_line(cls, dtype: str, span: int, narrow_allowed: bool) -> "Keys":
        """Narrow keys where allowed, the source a 16-bit float and `span` (the low part's range) fits 16 bits."""
        if narrow_allowed and dtype in NARROW_DTYPES and span <= NARROW_SPAN:
            return cls(True, dtype)
        return cls()

    @property
    def torch_dtype(self) -> str:
        return "torch.int32" if self.narrow else "torch.int64"

    @property
    def min_key(self) -> str:
        """The padding key: below every real key (NaN's included)."""
        return INT32_MIN if self.narrow else INT64_MIN

    @property
    def load_cast(self) -> str:
        """What follows a topk-family kernel's `ct.load` of the source tile `t`: wide keys read float32 values,
        narrow ones the 16-bit values themselves."""
        return "" if self.narrow else ".astype(ct.float32)"

    def nan_rank(self, largest: bool) -> str:
        """A NaN's rank: above every number for largest, below every number (yet above the padding key's rank, so
        a NaN in a line's last column is no padding key) otherwise."""
        if self.narrow:
            return "32767" if largest else "-32767"
        return "2147483647" if largest else "-2147483647"

    def encode(self, largest: bool, n: int, span: str = "BN") -> list[str]:
        """The keys of the tile `t` (columns `cols`); padding columns (column >= n) take the padding key."""
        rank = "okey" if largest else "~okey"
        if self.narrow:
            bits = [f"{I}bits = ct.bitcast(t, ct.int16).astype(ct.int32)",
                    f"{I}okey = ct.where(bits < 0, (bits ^ 32767) + 1, bits)  # -0.0 ranks with +0.0"]
            pack = f"{I}keys = (rank << 16) | ({span} - 1 - cols)"
        else:
            bits = [f"{I}bits = ct.bitcast(t, ct.int32)",
                    f"{I}okey = ct.where(bits < 0, (bits ^ 2147483647) + 1, bits)  # -0.0 ranks with +0.0"]
            pack = f"{I}keys = (rank.astype(ct.int64) << 32) | ({span} - 1 - cols).astype(ct.int64)"
        return bits + [f"{I}rank = ct.where(t != t, {self.nan_rank(largest)}, {rank})", pack,
                       f"{I}keys = ct.where(cols >= {n}, {self.min_key}, keys)  # the tile's padding columns"]

    def rank_of(self, key: str) -> str:
        """The int32 rank (the value's image) of the key expression `key`."""
        if self.narrow:  # the high half sign-extended, whatever the shift's kind
            return f"((({key} >> 16) & 65535) ^ 32768) - 32768"
        return f"({key} >> 32).astype(ct.int32)"

    def column_of(self, key: str, span: str) -> str:
        """The column of the key expression `key` (int32)."""
        if self.narrow:
            return f"{span} - 1 - ({key} & 65535)"
        return f"{span} - 1 - ({key} & 4294967295).astype(ct.int32)"

    def rank_decode(self, largest: bool, rank: str, okey: str, bits: str, val: str, indent: str) -> list[str]:
        """The float32 `val` of the int32 `rank` (the encoding undone: complemented back for largest=False, a
        negative's shift by one and flipped magnitude bits reversed, NaN restored), through `okey` and `bits`."""
        if self.narrow:
            half = NARROW_DTYPES[self.dtype]
            flip, value = "32767", f"ct.bitcast({bits}.astype(ct.int16), {half}).astype(ct.float32)"
        else:
            flip, value = "2147483647", f"ct.bitcast({bits}, ct.float32)"
        return [f"{indent}{okey} = {rank if largest else '~' + rank}",
                f"{indent}{bits} = ct.where({okey} < 0, ({okey} - 1) ^ {flip}, {okey})",
                f"{indent}{val} = ct.where({rank} == {self.nan_rank(largest)}, math.nan, {value})"]

    def decode(self, largest: bool, key: str, span: str) -> list[str]:
        """`top_val` (float32, NaN restored) and `top_col` (int32) of the keys `key`."""
        return ([f"{I}rank = {self.rank_of(key)}"] + self.rank_decode(largest, "rank", "okey", "bits", "top_val", I)
                + [f"{I}top_col = {self.column_of(key, span)}"])
