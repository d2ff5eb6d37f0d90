"""Run a whole composed file on the CPU emulator: `ModelCuTile` against the user's own model.

The composed text is executed with `ct` bound to the emulator (its `import cuda.tile as ct` line dropped), inside
`emulation()`, so every launch wrapper, glue step and kernel of the file runs as written; only cuTile itself is
replaced. Each forward's launches are counted (kernel names), which is how the caching of forward-invariant steps
is observed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from . import cutile_emulator as emu


@dataclass
class ComposedRun:
    outputs: list[list[torch.Tensor]]  # per forward call, the flattened outputs of ModelCuTile
    reference: list[torch.Tensor]  # the user's model on the same inputs
    launches: list[list[str]] = field(default_factory=list)  # per forward call, the kernels launched

    def max_diff(self, call: int = 0) -> float:
        return max((float((o.double() - r.double()).abs().max()) if o.numel() else 0.0)
                   for o, r in zip(self.outputs[call], self.reference))


def _flat(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flat(v)]
    return []


def run_composed(text: str, calls: int = 2, seed: int = 0) -> ComposedRun:
    """Build the model from its get_init_inputs (seeded), call ModelCuTile `calls` times on get_inputs()."""
    assert "import cuda.tile as ct\n" in text
    namespace = {"ct": emu.EMULATED_CT, "__name__": "tilestudio_emu_composed"}
    real_launch = emu.EMULATED_CT.launch
    launched: list[str] = []

    def counting(stream, grid, kern, args):
        launched.append(getattr(kern, "__name__", str(kern)))
        return real_launch(stream, grid, kern, args)

    with emu.emulation():
        exec(compile(text.replace("import cuda.tile as ct\n", ""), "<emulated composed>", "exec"), namespace)  # noqa: S102
        torch.manual_seed(seed)
        init = namespace["get_init_inputs"]() if "get_init_inputs" in namespace else []
        entry = next(v for k, v in namespace.items() if k.endswith("CuTile") and isinstance(v, type))
        model_cls = namespace[_model_class(text)]
        model = model_cls(*init).eval()
        inputs = namespace["get_inputs"]()
        run = ComposedRun(outputs=[], reference=[])
        emu.EMULATED_CT.launch = counting
        try:
            with torch.no_grad():
                cutile = entry(model)
                for _ in range(calls):
                    launched.clear()
                    run.outputs.append(_flat(cutile(*inputs)))
                    run.launches.append(list(launched))
                run.reference = _flat(model(*inputs))
        finally:
            emu.EMULATED_CT.launch = real_launch
    return run


def _model_class(text: str) -> str:
    """The user's model class the composed __main__ builds (`model = Name(*init_inputs)`)."""
    marker = "    model = "
    line = next(l for l in text.splitlines() if l.startswith(marker) and "(*init_inputs)" in l)
    return line[len(marker):line.index("(")]
