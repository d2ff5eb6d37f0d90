"""The convolution kernel's epilogue on the float32 accumulator tile: the conv bias (or the folded batch norm
shift), the fused elementwise ops with their side inputs passed as (N, [G,] C, D, H, W) views and loaded per tile
(gathered at the output coordinates when a strided transposed conv scatters its outputs), and the output stores.
`Epilogue` is a mixin of conv_builder.ConvBuilder; the path sets the tile names (channel_tile, channel_block,
store_batch) and `grouped`."""

from __future__ import annotations

from .base import Unsupported
from .conv_index import frame
from .gemm_common import SideOperands, is_ref, load_side_lines, prod, tup


def refs(v) -> list[str]:
    """Graph values referenced by an op argument."""
    if is_ref(v):
        return [v["ref"]]
    if isinstance(v, (list, tuple)):
        return [r for x in v for r in refs(x)]
    return []


class Epilogue(SideOperands):
    channel_tile = "BCO"  # kernel constant: output channels per block
    channel_block = "cob"  # kernel variable: the block's channel-tile index
    store_batch = "ng"  # kernel variable: the output view's leading index

    def side_values(self) -> list[str]:
        """Kernel inputs the epilogue reads (its side inputs)."""
        inside = {self.anchor.node} | ({self.bn.node} if self.bn else set())
        values = []
        for r in self.epilogue:
            inside.add(r.node)
            for v in r.args + list(r.kwargs.values()):
                for ref in refs(v):
                    if ref not in inside and ref in self.inputs:
                        values.append(ref)
        return values

    def side_view(self, shape: list[int], what: str) -> list[int]:
        cv = self.cv
        rank = len(self.out_shape)
        if len(shape) > rank:
            raise Unsupported(f"{what}: shape {shape} has more dims than the output {self.out_shape}")
        padded = [1] * (rank - len(shape)) + list(shape)
        for s_, o in zip(padded, self.out_shape):
            if s_ not in (1, o):
                raise Unsupported(f"{what}: shape {shape} does not broadcast to {self.out_shape}")
        n, c, sp = padded[0], padded[1], frame(padded[2:], 1)
        if self.flat:
            sp = [1, 1, 1 if all(v == 1 for v in sp) else prod(sp)]
        if not self.grouped:
            return [n, c] + sp
        return [n] + ([cv.G, cv.Cog] if c != 1 else [1, 1]) + sp

    def view_dims(self) -> list[tuple[str, object]]:
        """(index, tile) per side view dim for the tile-store paths."""
        g = [("g", None)] if self.grouped else []
        return [("n", None)] + g + [(self.channel_block, self.channel_tile), ("od", None), ("ohb", "BOH"),
                                    ("owb", "BOW")]

    def _side(self, host: str, shape: list[int], key: str) -> str:
        view = self.side_view(shape, f"fused operand {key}")
        param = f"S{len(self.sides)}"
        self.sides.append((param, f"{host}.reshape{tup(view)}"))
        var = f"side{len(self.sides) - 1}"
        full = [self.channel_tile, "BOH", "BOW"]
        if self.scatter:
            idx = self.coords
            index = ["0" if n == 1 else c for n, c in zip(view, idx)]
            expr = f"ct.gather({param}, {tup(index)}).astype(ct.float32)"
            self.body.append(f"    {var} = ct.broadcast_to({expr}, {tup(full)})")
        else:
            load_side_lines(var, param, view, self.view_dims(), full, self.body, "    ")
        self.side_vars[key] = var
        return var

    def epilogue_lines(self) -> None:
        """Bias, folded batch norm, fused elementwise ops and the stores, after the main loop left `acc`."""
        cv = self.cv
        env = {self.anchor.node: "acc"}
        if self.bias_name is not None:
            side = self._side(self.bias_name, [cv.Co] + [1] * cv.nd, "__conv_bias__")
            self.body.append(f"    acc = acc + {side}")
        if self.bn is not None:
            env[self.bn.node] = "acc"
        if self.epilogue:
            from .expr import emit_elementwise

            emit_elementwise(self.epilogue, env, self.load_side, self.body, "    ", shapes=self.shapes)
        self.store_lines(env)

    def store_lines(self, env: dict[str, str]) -> None:
        B = self.body.append
        for i, o in enumerate(self.spec.outputs):
            var = env.get(o.graph_value)
            if var is None:
                raise Unsupported(f"output {o.name} is not computed by this kernel")
            if self.scatter:
                B(f"    ct.scatter(O{i}, {tup(self.out_coords)}, {var}.astype(O{i}.dtype))")
            else:
                B(f"    ct.store(O{i}, index=({self.store_batch}, {self.channel_block}, od, ohb, owb), "
                  f"tile=ct.reshape({var}.astype(O{i}.dtype), (1, {self.channel_tile}, 1, BOH, BOW)))")
