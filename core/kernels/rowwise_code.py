"""Writing generated code: an indented line buffer (`Code`) and one `@ct.kernel` being assembled (`Kernel`: its
tensor, scalar and constant parameters, body, wrapper-side view preparation and launch line)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

class Code:
    def __init__(self, indent: int = 1):
        self.lines: list[str] = []
        self.level = indent
        self.counter = 0

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}{self.counter}"

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.level + line)

    @property
    def indent(self) -> str:
        return "    " * self.level

    @contextlib.contextmanager
    def block(self, header: str):
        self(header)
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1

    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class Param:
    name: str  # kernel parameter
    wrapper: str  # wrapper expression passed for it
    annotation: str = ""  # e.g. "ct.Constant[int]"


class Kernel:
    """One @ct.kernel being assembled: its parameters (tensors first, then constants) and body."""

    def __init__(self, name: str):
        self.name = name
        self.tensors: list[Param] = []
        self.scalars: list[Param] = []
        self.consts: list[Param] = []
        self.body = Code()
        self.prep: list[str] = []  # wrapper lines preparing views for this kernel's tensor params
        self.options: dict[str, int] = {}  # @ct.kernel(...) hints, e.g. occupancy

    def tensor(self, name: str, wrapper: str, prep: str | None = None) -> str:
        if not any(p.name == name for p in self.tensors):
            self.tensors.append(Param(name, wrapper))
            if prep:
                self.prep.append(prep)
        return name

    def scalar(self, name: str, wrapper: str) -> str:
        if not any(p.name == name for p in self.scalars):
            self.scalars.append(Param(name, wrapper))
        return name

    def const(self, name: str, value: int) -> str:
        if not any(p.name == name for p in self.consts):
            self.consts.append(Param(name, repr(int(value)), "ct.Constant[int]"))
        return name

    def source(self, doc: str) -> str:
        params = [p.name for p in self.tensors + self.scalars] + [f"{p.name}: {p.annotation}" for p in self.consts]
        from .rowwise import TUNING  # (rowwise imports this module)

        options = dict(self.options)
        if TUNING["worker_warps"]:
            options.setdefault("num_worker_warps", int(TUNING["worker_warps"]))
        opts = ", ".join(f"{k}={v}" for k, v in sorted(options.items()))
        deco = f"@ct.kernel({opts})" if opts else "@ct.kernel"
        head = f"{deco}\ndef {self.name}({', '.join(params)}):\n    \"\"\"{doc}\"\"\"\n"
        return head + self.body.text() + "\n"

    def launch(self, grid: tuple[int, ...]) -> str:
        args = [p.wrapper for p in self.tensors + self.scalars + self.consts]
        grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        return f"ct.launch(torch.cuda.current_stream(), {grid}, {self.name}, ({', '.join(args)},))"
