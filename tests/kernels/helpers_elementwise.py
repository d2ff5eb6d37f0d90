"""Test helpers of the elementwise family (and expr.py): snippet models, hand-built specs, compiling."""

from __future__ import annotations

# Model snippets covering the elementwise family's variants: name → (forward body, get_inputs expression).
# {shape} / {dtype} placeholders are filled per test (compile tests use small unaligned shapes, GPU tests more).
ACTIVATIONS_A = '''
class Model(nn.Module):
    def forward(self, x):
        x = F.relu(x) - 0.5
        x = F.relu6(x * 4.0) - 1.0
        x = F.leaky_relu(x, 0.1)
        x = F.elu(x, alpha=1.3)
        x = F.selu(x)
        x = F.celu(x, alpha=0.7)
        x = F.gelu(x)
        x = F.gelu(x * 3.0, approximate="tanh")
        x = F.silu(x - 0.2)
        x = F.mish(x)
        return x
'''
ACTIVATIONS_B = '''
class Model(nn.Module):
    def forward(self, x):
        # ops with a jump at a threshold read the raw input, so float32 and float64 agree on the branch
        a = F.softplus(x, beta=2.0, threshold=4.0) + F.hardshrink(x, 0.1) + F.threshold(x, 0.05, -1.0)
        y = F.softplus(x * 3.0)
        y = F.hardtanh(y * 2.0 - 1.0, -0.8, 0.9)
        y = F.hardswish(y * 5.0)
        y = F.hardsigmoid(y * 3.0) - 0.5
        y = torch.sigmoid(y * 4.0)
        y = torch.tanh(y * 2.0 - 1.0)
        y = F.logsigmoid(y * 3.0)
        y = F.softshrink(y + 1.0, 0.3)
        return y + a
'''
MATH = '''
class Model(nn.Module):
    def forward(self, x):
        a = torch.exp(x) + torch.log(x.abs() + 1.0) + torch.sqrt(x.abs()) + torch.rsqrt(x.abs() + 0.5)
        b = torch.sin(x) * torch.cos(x) + torch.erf(x) + torch.expm1(x * 0.1) + torch.log1p(x.abs())
        c = torch.floor(x) + torch.ceil(x) + torch.round(x) + torch.trunc(x) + torch.sign(x)
        d = torch.reciprocal(x.abs() + 1.0) + torch.square(x) + torch.log2(x.abs() + 2.0) + torch.exp2(x)
        e = torch.logaddexp(x, x * 0.5 - 1.0) + torch.logaddexp2(x, -x) + torch.heaviside(x, x * 0.5)
        return a + b + c + d + e
'''
BROADCAST_NCHW = '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.randn({c}, 1, 1, dtype=torch.{dtype}))
        self.shift = nn.Parameter(torch.randn({c}, 1, 1, dtype=torch.{dtype}))

    def forward(self, x):
        return torch.relu(x * self.scale + self.shift)
'''
ROW_COL = '''
class Model(nn.Module):
    def forward(self, x, row, col):
        return torch.sigmoid(x * row + col) * 2.0 - x
'''
OUTER = '''
class Model(nn.Module):
    def forward(self, a, b):
        return torch.maximum(a, b) - torch.minimum(a * 2.0, b)
'''
SCALARS = '''
class Model(nn.Module):
    def forward(self, x):
        y = 0.5 * x + 3.0
        y = y ** 2 + 2.0 ** x - x ** 3 + torch.pow(x.abs() + 0.1, 0.5) + torch.pow(x.abs() + 0.1, 1.7)
        y = 1.0 - y / 7.0
        return torch.clamp(y, min=-4.0, max=4.0)
'''
MASKED_FILL = '''
class Model(nn.Module):
    def forward(self, scores, mask):
        return scores.masked_fill(mask, float("-inf")) * 0.125
'''
WHERE = '''
class Model(nn.Module):
    def forward(self, x, y):
        z = torch.where(x > y, x - y, y * 0.1)
        z = torch.where(z < 0.5, z, 0.0)
        return z + (x >= 0.0).float()
'''
CLAMP_TENSOR = '''
class Model(nn.Module):
    def forward(self, x, lo, hi):
        return torch.clamp(x, lo, hi) + torch.clamp_min(x, -0.1) * torch.clamp_max(x, 0.2)
'''
COMPARE = '''
class Model(nn.Module):
    def forward(self, x, y):
        return torch.logical_or(torch.logical_and(x > y, x < 1.0), torch.logical_not(x > 2.0))
'''
INT_MASK = '''
class Model(nn.Module):
    def forward(self, ids, x):
        return (ids == 0).to(x.dtype) * x + ids.to(x.dtype) * 0.5
'''
# index_put with boolean masks, lowered to where: a clamp by mask, a mask over the last two dims, a row mask += v
SETITEM_MASK = '''
class Model(nn.Module):
    def forward(self, x, m, r):
        y = x.clone()
        y[y < -0.5] = -0.5
        y[:, m] = float("-inf")
        y.index_put_((r,), torch.tensor(2.0), accumulate=True)
        return y * 1.5
'''
SPECIAL = '''
class Model(nn.Module):
    def forward(self, x):
        return (torch.lgamma(x) + 0.5 * torch.digamma(x) + torch.special.i0(x * 0.3)
                + torch.special.erfcx(x) + torch.special.ndtri(x * 0.09))
'''
TRIL = '''
class Model(nn.Module):
    def forward(self, x):
        return torch.tril(x) * 2.0 + torch.triu(x, 1)
'''
CHAIN_1D = '''
class Model(nn.Module):
    def forward(self, x, y):
        return torch.tanh(x * 0.3) * y + torch.exp(-x * x)
'''
LEADING_BROADCAST = '''
class Model(nn.Module):
    def forward(self, x, p):
        return x * torch.sigmoid(p) + p
'''
ROTARY = '''
def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    def forward(self, q, cos, sin):
        return q * cos + rotate_half(q) * sin
'''
HALF_MODULE = '''
class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn({n}))

    def forward(self, x):
        return F.gelu(x + self.bias) * torch.sigmoid(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner().{cast}()

    def forward(self, x):
        return self.inner(x)
'''


def elementwise_specs(decomposition):
    return [k for k in decomposition.kernels if k.family == "elementwise"]


def t(name, shape, dtype="float32", role="activation"):
    from tilestudio.core.specs import TensorSpec

    return TensorSpec(name=name, shape=list(shape), dtype=dtype, role=role, graph_value=name)


def op(node, target, args, out_shape, out_dtype="float32", **kwargs):
    from tilestudio.core.specs import OpRecord

    name = target.split(".")[1]
    inputs = [a["ref"] for a in args if isinstance(a, dict) and "ref" in a]
    return OpRecord(node=node, op=name, target=target, category="elementwise_binary", inputs=inputs, args=args,
                    kwargs=kwargs, output_dtype=out_dtype, output=list(out_shape))


def multi_output_spec(n: int = 37, m: int = 29, dtype: str = "float32"):
    """A hand-built spec with three outputs, one of them smaller than the iteration space (scatter path):
    s = w * 2 (shape (m,)), a = x * s (n, m), b = relu(a) + x (n, m)."""
    from tilestudio.core.specs import KernelSpec

    x, w = {"ref": "x"}, {"ref": "w"}
    ops = [
        op("s", "aten.mul.Tensor", [w, 2.0], [m], dtype),
        op("a", "aten.mul.Tensor", [x, {"ref": "s"}], [n, m], dtype),
        op("r", "aten.relu.default", [{"ref": "a"}], [n, m], dtype),
        op("b", "aten.add.Tensor", [{"ref": "r"}, x], [n, m], dtype),
    ]
    reference = (
        "def reference_multi_out(x, w):\n"
        "    aten = torch.ops.aten\n"
        "    s = aten.mul.Tensor(w, 2.0)\n"
        "    a = aten.mul.Tensor(x, s)\n"
        "    r = aten.relu.default(a)\n"
        "    b = aten.add.Tensor(r, x)\n"
        "    return s, a, b\n"
    )
    return KernelSpec(id="multi_out", family="elementwise", description="hand-built multi-output spec",
                      operations=[o.op for o in ops], ops=ops, inputs=[t("x", [n, m], dtype), t("w", [m], dtype)],
                      outputs=[t("s", [m], dtype), t("a", [n, m], dtype), t("b", [n, m], dtype)],
                      reference=reference)


def scalar_input_spec(shape=(19, 33), dtype: str = "float32"):
    """A hand-built spec with a Python-scalar input and a 0-d tensor input: y = where(x > c0, x * alpha + c0, x)."""
    from tilestudio.core.specs import KernelSpec, TensorSpec

    x, alpha, c0 = {"ref": "x"}, {"ref": "alpha"}, {"ref": "c0"}
    ops = [
        op("m", "aten.mul.Tensor", [x, alpha], shape, dtype),
        op("a", "aten.add.Tensor", [{"ref": "m"}, c0], shape, dtype),
        op("g", "aten.gt.Tensor", [x, c0], shape, "bool"),
        op("y", "aten.where.self", [{"ref": "g"}, {"ref": "a"}, x], shape, dtype),
    ]
    reference = (
        "def reference_scalar_in(x, alpha, c0):\n"
        "    aten = torch.ops.aten\n"
        "    m = aten.mul.Tensor(x, alpha)\n"
        "    a = aten.add.Tensor(m, c0)\n"
        "    g = aten.gt.Tensor(x, c0)\n"
        "    return aten.where.self(g, a, x)\n"
    )
    inputs = [t("x", shape, dtype), TensorSpec(name="alpha", shape=[], dtype="float32", role="scalar", value=0.75,
                                               graph_value="alpha"), t("c0", [], dtype)]
    return KernelSpec(id="scalar_in", family="elementwise", description="hand-built spec with scalar inputs",
                      operations=[o.op for o in ops], ops=ops, inputs=inputs, outputs=[t("y", shape, dtype)],
                      reference=reference)
