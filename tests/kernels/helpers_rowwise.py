"""Test cases shared by the reduction/softmax/norm/scan compile (CPU) and GPU tests.

A `Case` is a small model (forward statements over inputs x0, x1, ...) instantiated per (shape, dtype): the
first shape is the one the CPU tests compile and emulate; `gpu_shapes` (small unaligned, medium, and one that
takes the chunked/split path) run on the GPU in float32, the middle one also in float16 and bfloat16.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ROWWISE_FAMILIES = ("reduction", "softmax", "norm", "scan")


@dataclass
class Case:
    name: str
    family: str
    forward: str  # statements; `x = x0`; may use self.* from init; .format(s=shape, dt=dtype, last=shape[-1])
    inputs: str  # python list expression, same format fields
    shapes: list[tuple]  # [cpu shape, gpu shapes...]
    init: str = "pass"
    dtypes: tuple = ("float32", "float16", "bfloat16")
    n_inputs: int = 1
    ties: bool = False  # check with small integer-valued inputs (many equal values: first/last index rules)

    def fields(self, shape, dtype):
        return {"s": tuple(shape), "dt": dtype, "last": shape[-1], "s0": shape[0],
                "s1": shape[1] if len(shape) > 1 else 1, "s2": shape[2] if len(shape) > 2 else 1,
                "s3": shape[3] if len(shape) > 3 else 1}

    def source(self, shape, dtype="float32") -> tuple[str, str]:
        f = self.fields(shape, dtype)
        args = ", ".join(f"x{i}" for i in range(self.n_inputs))
        body = (f"class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                f"        {self.init.format(**f)}\n\n    def forward(self, {args}):\n        x = x0\n"
                + "".join(f"        {line}\n" for line in self.forward.format(**f).split("\n")))
        return body, self.inputs.format(**f)

    @property
    def cpu_shape(self):
        return self.shapes[0]

    @property
    def gpu_shapes(self):
        return self.shapes[1:] or self.shapes[:1]


def _x(extra: str = "") -> str:
    return "[torch.randn{s}.to(torch.{dt})" + extra + "]"


def C(name, family, forward, shapes, inputs=None, **kw):
    n = kw.pop("n_inputs", None)
    inputs = inputs or _x()
    if n is None:
        n = inputs.count("torch.rand")
    return Case(name, family, forward, inputs, shapes, n_inputs=n, **kw)


ROW_SHAPES = [(5, 77), (33, 1000), (1000, 4097), (3, 100003)]
INT_DT = ("int64",)

REDUCTION_CASES = [
    C("sum_last", "reduction", "return x.sum(-1)", ROW_SHAPES),
    C("sum_dims_keepdim", "reduction", "return x.sum(dim=(1, 2), keepdim=True)",
      [(4, 7, 33, 10), (4, 7, 33, 10), (8, 64, 130, 3), (2, 300, 300, 5)]),
    C("sum_full", "reduction", "return x.sum()", [(1000,), (1000,), (100000,), (1234, 4321)]),
    C("mean_middle", "reduction", "return x.mean(dim=1)", [(8, 50, 19), (8, 50, 19), (16, 1000, 33), (4, 20001, 3)]),
    C("mean_nonadjacent", "reduction", "return x.mean(dim=(0, 2))",
      [(6, 100, 7), (6, 100, 7), (64, 33, 129), (5, 1000, 3)]),
    C("mean_global_pool", "reduction", "return x.mean(dim=(2, 3))",
      [(2, 24, 16, 16), (2, 24, 16, 16), (8, 64, 56, 56), (3, 5, 129, 130)]),
    C("mean_keepdim_epilogue", "reduction", "return x.mean(dim=-1, keepdim=True) * 2.0 + 1.0", ROW_SHAPES),
    C("amax_amin", "reduction", "return x.amax(dim=-1), x.amin(dim=0, keepdim=True)",
      [(6, 45, 31), (6, 45, 31), (64, 33, 129), (3, 5000, 7)]),
    C("max_dim_tuple", "reduction", "v, i = torch.max(x, dim=1)\nreturn v, i",
      [(6, 45, 31), (6, 45, 31), (17, 1000), (4, 30000)], ties=True),
    C("min_dim_values", "reduction", "return torch.min(x, dim=-1).values * 2.0", ROW_SHAPES),
    C("max_min_full", "reduction", "return torch.max(x), torch.min(x)", [(5, 77), (5, 77), (300, 777), (1234, 4321)]),
    C("argmax_dim", "reduction", "return x.argmax(dim=1)", [(8, 37, 21), (8, 37, 21), (64, 1000), (3, 50000)]),
    C("argmin_keepdim", "reduction", "return x.argmin(dim=-1, keepdim=True)", ROW_SHAPES, ties=True),
    C("argmax_flat", "reduction", "return x.argmax()", [(33, 100), (33, 100), (1000, 333), (7, 100003)], ties=True),
    C("argmin_dim0", "reduction", "return x.argmin(dim=0)", [(300, 45), (300, 45), (5000, 7), (50000, 3)], ties=True),
    C("prod", "reduction", "return (1.0 + 0.01 * x).prod(dim=1)", [(4, 9, 30), (4, 9, 30), (64, 1000), (3, 20000)]),
    C("logsumexp", "reduction", "return torch.logsumexp(x, dim=-1)", ROW_SHAPES),
    C("logsumexp_relu_chain", "reduction",
      "y = torch.logsumexp(x, dim=1, keepdim=True)\nreturn F.gelu(torch.relu(F.leaky_relu(y)))", ROW_SHAPES),
    C("logsumexp_dim0", "reduction", "return torch.logsumexp(x, dim=0)",
      [(600, 30), (600, 30), (5000, 64), (40000, 3)]),
    C("norm_l2", "reduction", "return torch.linalg.vector_norm(x, 2, dim=1)",
      [(4, 30, 17), (4, 30, 17), (64, 1000, 9), (3, 20000)]),
    C("norm_l1_inf", "reduction",
      "return torch.linalg.vector_norm(x, 1, dim=-1), torch.linalg.vector_norm(x, float('inf'), dim=-1), "
      "torch.linalg.vector_norm(x, float('-inf'), dim=-1)", ROW_SHAPES),
    C("norm_p", "reduction", "return torch.linalg.vector_norm(x, 3, dim=-1), torch.linalg.vector_norm(x, 0.5, dim=-1)",
      ROW_SHAPES, dtypes=("float32", "bfloat16")),  # (sum |x|^0.5)^2 over 4097 elements overflows float16
    C("norm_fro_full", "reduction", "return torch.norm(x)", [(5, 7, 9), (5, 7, 9), (64, 1000), (1234, 4321)]),
    C("count_l0", "reduction", "return torch.linalg.vector_norm(torch.relu(x), 0, dim=-1), "
      "torch.count_nonzero(torch.relu(x), dim=-1)", ROW_SHAPES),
    C("var_last", "reduction", "return x.var(dim=-1)", ROW_SHAPES),
    C("std_dims_keepdim", "reduction", "return x.std(dim=(1, 2), keepdim=True)",
      [(3, 8, 25, 6), (3, 8, 25, 6), (16, 32, 64, 5), (2, 300, 300, 3)]),
    C("var_biased_offset", "reduction", "return (x + 100.0).var(dim=1, unbiased=False)",
      [(5, 77), (5, 77), (64, 1000, 3), (3, 50000)]),
    C("var_mean_std_mean", "reduction",
      "return torch.var_mean(x, dim=1, correction=0), torch.std_mean(x, dim=(0, 2))",
      [(5, 77, 3), (5, 77, 3), (64, 1000, 3), (3, 30000, 2)]),
    C("std_full", "reduction", "return x.std()", [(1000,), (1000,), (100000,), (1234, 4321)]),
    C("all_any", "reduction", "return (x > -2.5).all(dim=1), (x > 2.5).any(dim=1), (x > -4.5).all()", ROW_SHAPES),
    C("aminmax", "reduction", "return torch.aminmax(x, dim=1)", ROW_SHAPES),
    C("nansum_nanmean", "reduction", "return torch.nansum(torch.log(x), dim=1), torch.nanmean(torch.log(x), dim=1)",
      ROW_SHAPES),
    C("rmsnorm_hand", "reduction", "return torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)",
      [(4, 9, 96), (4, 9, 96), (64, 4096), (2, 33000)]),
    # fusion rule R7: row statistics broadcast back over their rows, one kernel per statistic (rows of more than
    # fusion.ROW_STAT_MAX elements, the last shape, stay a reduction and an elementwise kernel)
    C("rmsnorm_hand_full", "reduction", "return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w",
      [(4, 9, 96), (4, 9, 96), (4096, 4096), (3, 20000)], init="self.w = nn.Parameter(torch.randn({last}))"),
    C("layernorm_hand", "reduction",
      "m = x.mean(-1, keepdim=True)\nd = x - m\nv = (d * d).mean(-1, keepdim=True)\n"
      "return d / torch.sqrt(v + 1e-5) * self.w + self.b", [(5, 77), (5, 77), (2048, 768), (3, 10000)],
      init="self.w = nn.Parameter(torch.randn({last}))\n        self.b = nn.Parameter(torch.randn({last}))"),
    C("softmax_hand", "reduction", "e = torch.exp(x - x.amax(-1, keepdim=True))\nreturn e / e.sum(-1, keepdim=True)",
      [(6, 50), (6, 50), (1000, 197), (3, 9000)]),
    C("log_softmax_hand", "reduction", "return x - torch.logsumexp(x, -1, keepdim=True)",
      [(4, 3, 40), (4, 3, 40), (512, 1000), (3, 9000)]),
    C("center_two_dims_hand", "reduction", "p = x * 2.0\nreturn p - p.mean((-2, -1), keepdim=True), p",
      [(3, 4, 5, 7), (3, 4, 5, 7), (64, 8, 16, 24), (2, 3, 100, 100)]),
    C("standardize_hand", "reduction", "return (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True)",
      [(6, 33), (6, 33), (700, 300), (2, 9000)]),
    C("sum_epilogue_side", "reduction", "return (x.sum(dim=1) + x1) * 0.5",
      [(6, 77), (6, 77), (64, 1000), (5, 30000)], inputs=_x(", torch.randn({s0}).to(torch.{dt})")),
    C("sum_keepdim_col_side", "reduction", "return x.sum(dim=1, keepdim=True) - x1",
      [(6, 77, 5), (6, 77, 5), (16, 1000, 33), (2, 20000, 4)], inputs=_x(", torch.randn({s2}).to(torch.{dt})")),
    C("sum_prologue_side", "reduction", "return (x * x1).sum(dim=-1)",
      [(6, 9, 77), (6, 9, 77), (64, 8, 1000), (2, 1, 40000)], inputs=_x(", torch.randn({s1}, 1).to(torch.{dt})")),
    C("sum_int", "reduction", "return x.sum(dim=1), x.sum()", ROW_SHAPES,
      inputs="[torch.randint(0, 100, {s})]", dtypes=INT_DT),
    C("count_bool", "reduction", "return (x > 0).sum(dim=1)", ROW_SHAPES),
]

SOFTMAX_CASES = [
    C("softmax_last", "softmax", "return torch.softmax(x, dim=-1)", [(16, 1000), (16, 1000), (4097, 100), (3, 40000)]),
    C("log_softmax_scaled", "softmax", "return torch.log_softmax(x * 3.0, dim=-1)",
      [(10, 333), (10, 333), (64, 4096), (3, 20001)]),
    C("softmax_dim1_4d", "softmax", "return torch.softmax(x, dim=1)",
      [(2, 21, 10, 13), (2, 21, 10, 13), (8, 64, 32, 32), (2, 9000, 3, 5)]),
    C("softmax_dim0", "softmax", "return torch.softmax(x, dim=0)", [(300, 45), (300, 45), (1000, 64), (20000, 3)]),
    C("softmax_scale_mask", "softmax", "return torch.softmax(x * 0.125 + x1, dim=-1)",
      [(2, 4, 33, 33), (2, 4, 33, 33), (4, 8, 128, 128), (1, 2, 70, 9000)],
      inputs=_x(", torch.randn({s2}, {s3}).to(torch.{dt})")),
    C("softmax_masked_fill", "softmax", "return torch.softmax(x.masked_fill(self.mask, float('-inf')), dim=-1)",
      [(2, 4, 33, 33), (2, 4, 33, 33), (4, 8, 128, 128), (1, 2, 20, 40000)],
      init="self.register_buffer('mask', torch.rand({s2}, {s3}) > 0.7)"),
    C("safe_softmax", "softmax", "return torch.ops.aten._safe_softmax(x, -1)",
      [(16, 1000), (16, 1000), (64, 4096), (3, 30000)]),
    C("softmax_epilogue", "softmax", "return torch.softmax(x, dim=-1) * 2.0 + 1.0", [(6, 77), (6, 77), (64, 1000),
                                                                                   (3, 20000)]),
    C("softmax_epilogue_side", "softmax", "return torch.softmax(x, dim=-1) * x1",
      [(3, 170), (3, 170), (64, 1000), (3, 17000)], inputs=_x(", torch.randn({last}).to(torch.{dt})")),
    # stacked short rows of masked columns: TMA stores where the rows are whole 16-byte units (200), plain ones
    # where not (77), many tiles per block of the persistent grid
    C("softmax_attention_rows", "softmax", "return torch.softmax(x, dim=-1)",
      [(40, 200), (40, 200), (30000, 200), (20000, 77)]),
]

NORM_CASES = [
    C("layer_norm_short_rows", "norm", "return self.n(x)", [(24, 768), (24, 768), (20000, 768), (30000, 384)],
      init="self.n = nn.LayerNorm({last}).to(torch.{dt})"),
    C("layer_norm", "norm", "return self.n(x)", [(4, 17, 100), (4, 17, 100), (64, 1024), (3, 20000)],
      init="self.n = nn.LayerNorm({last}).to(torch.{dt})"),
    C("layer_norm_2d_shape", "norm", "return self.n(x)", [(3, 5, 9, 14), (3, 5, 9, 14), (8, 4, 32, 64),
                                                          (2, 1, 150, 150)],
      init="self.n = nn.LayerNorm([{s2}, {s3}], eps=1e-6).to(torch.{dt})"),
    C("layer_norm_noaffine_relu", "norm", "return torch.relu(self.n(x))", [(5, 77), (5, 77), (64, 4096), (2, 30000)],
      init="self.n = nn.LayerNorm({last}, elementwise_affine=False)"),
    C("layer_norm_nobias_gelu", "norm", "return F.gelu(self.n(x))", [(3, 21, 72), (3, 21, 72), (64, 1000),
                                                                     (2, 17000)],
      init="self.n = nn.LayerNorm({last}, bias=False).to(torch.{dt})"),
    C("residual_add_layer_norm", "norm", "h = x + x1\nreturn self.n(h), h * 2.0",
      [(4, 15, 96), (4, 15, 96), (64, 1024), (2, 17000)], inputs=_x(", torch.randn{s}.to(torch.{dt})"),
      init="self.n = nn.LayerNorm({last}).to(torch.{dt})"),
    C("rms_norm", "norm", "return F.rms_norm(x, ({last},), self.w, 1e-6)", [(4, 9, 96), (4, 9, 96), (64, 4096),
                                                                             (2, 30000)],
      init="self.w = nn.Parameter(torch.randn({last}).to(torch.{dt}))"),
    C("rms_norm_default_eps", "norm", "return self.n(x)", [(4, 9, 96), (4, 9, 96), (64, 4096), (2, 30000)],
      init="self.n = nn.RMSNorm({last}).to(torch.{dt})"),
    C("group_norm", "norm", "return self.n(x)", [(2, 12, 13, 9), (2, 12, 13, 9), (8, 64, 32, 32), (2, 8, 70, 70)],
      init="self.n = nn.GroupNorm(4, {s1}).to(torch.{dt})"),
    C("group_norm_prologue_silu", "norm", "return F.silu(self.n(x + x1))",
      [(2, 12, 13, 9), (2, 12, 13, 9), (8, 64, 32, 32), (2, 8, 70, 70)],
      inputs=_x(", torch.randn({s1}, 1, 1).to(torch.{dt})"), init="self.n = nn.GroupNorm(4, {s1}).to(torch.{dt})"),
    C("group_norm_3d_noaffine", "norm", "return self.n(x)", [(3, 6, 10), (3, 6, 10), (8, 48, 1000), (2, 6, 40000)],
      init="self.n = nn.GroupNorm(3, {s1}, affine=False)"),
    C("instance_norm_affine", "norm", "return self.n(x)", [(3, 7, 18, 22), (3, 7, 18, 22), (8, 32, 64, 64),
                                                           (2, 3, 150, 150)],
      init="self.n = nn.InstanceNorm2d({s1}, affine=True).to(torch.{dt})"),
    C("instance_norm_1d", "norm", "return self.n(x)", [(3, 7, 50), (3, 7, 50), (16, 64, 1000), (2, 3, 30000)],
      init="self.n = nn.InstanceNorm1d({s1})"),
    C("instance_norm_running", "norm", "return self.n(x)", [(3, 7, 18, 22), (3, 7, 18, 22), (8, 32, 64, 64),
                                                            (2, 3, 150, 150)],
      init="self.n = nn.InstanceNorm2d({s1}, affine=True, track_running_stats=True).to(torch.{dt})"),
    C("batch_norm_2d", "norm", "return self.n(x)", [(3, 12, 15, 20), (3, 12, 15, 20), (32, 64, 56, 56),
                                                    (2, 3, 129, 131)],
      init="self.n = nn.BatchNorm2d({s1}).to(torch.{dt})"),
    C("batch_norm_1d", "norm", "return self.n(x)", [(100, 37), (100, 37), (4096, 1000), (3, 5)],
      init="self.n = nn.BatchNorm1d({s1}).to(torch.{dt})"),
    C("batch_norm_1d_length", "norm", "return self.n(x)", [(10, 37, 5), (10, 37, 5), (64, 128, 20), (3, 5, 1000)],
      init="self.n = nn.BatchNorm1d({s1}).to(torch.{dt})"),
    C("batch_norm_3d", "norm", "return self.n(x)", [(2, 5, 4, 9, 9), (2, 5, 4, 9, 9), (4, 16, 8, 32, 32),
                                                    (1, 3, 7, 65, 65)],
      init="self.n = nn.BatchNorm3d({s1}).to(torch.{dt})"),
    C("batch_norm_residual_relu", "norm", "return torch.relu(self.n(x) + x1)",
      [(3, 12, 15, 20), (3, 12, 15, 20), (32, 64, 56, 56), (2, 3, 129, 131)],
      inputs=_x(", torch.randn{s}.to(torch.{dt})"), init="self.n = nn.BatchNorm2d({s1}).to(torch.{dt})"),
    C("batch_norm_noaffine", "norm", "return self.n(x)", [(3, 12, 15, 20), (3, 12, 15, 20), (32, 64, 56, 56),
                                                          (2, 3, 129, 131)],
      init="self.n = nn.BatchNorm2d({s1}, affine=False).to(torch.{dt})"),
]

SCAN_CASES = [
    C("cumsum_last", "scan", "return torch.cumsum(x, dim=1)", [(16, 1000), (16, 1000), (1000, 4097), (3, 100003)]),
    C("cumsum_dim0", "scan", "return torch.cumsum(x, dim=0)", [(300, 45), (300, 45), (5000, 64), (20000, 3)]),
    C("cumsum_middle_prologue_epilogue", "scan", "return torch.cumsum(x * 2.0, dim=1) + 1.0",
      [(2, 50, 3), (2, 50, 3), (16, 1000, 33), (2, 5000, 3)]),
    C("exclusive_cumsum", "scan", "return torch.cumsum(x, dim=1) - x",
      [(6, 129, 5), (6, 129, 5), (64, 1000), (3, 9000)]),
    C("cumprod", "scan", "return torch.cumprod(1.0 + 0.001 * x, dim=-1)", [(8, 100), (8, 100), (64, 1000),
                                                                            (3, 5000)]),
    C("logcumsumexp", "scan", "return torch.logcumsumexp(x, dim=-1)", [(5, 300), (5, 300), (64, 1000), (3, 5000)]),
    C("cummax", "scan", "return torch.cummax(x, dim=1)",
      [(5, 300), (5, 300), (64, 1000), (3, 5000)], ties=True),
    C("cummin_dim0", "scan", "return torch.cummin(x, dim=0)",
      [(30, 7, 3), (30, 7, 3), (1000, 64), (5000, 3)], ties=True),
    C("cumsum_int", "scan", "return torch.cumsum(x, dim=1)", [(5, 300), (5, 300), (64, 1000), (5, 5000)],
      inputs="[torch.randint(0, 100, {s})]", dtypes=INT_DT),
    C("cumsum_bool", "scan", "return torch.cumsum(x > 0, dim=1)", [(5, 300), (5, 300), (64, 1000), (5, 5000)]),
]

ALL_CASES = {"reduction": REDUCTION_CASES, "softmax": SOFTMAX_CASES, "norm": NORM_CASES, "scan": SCAN_CASES}

# Cases the CPU tests also run on their last (long) shape: chunk loops, split reductions with a merge kernel,
# two-pass softmax, segmented norm statistics, segmented scans.
LONG_CASES = {
    "reduction": ["sum_last", "mean_middle", "max_dim_tuple", "argmax_flat", "logsumexp", "var_last", "all_any",
                  "sum_keepdim_col_side"],
    "softmax": ["softmax_last", "softmax_dim1_4d", "softmax_masked_fill"],
    "norm": ["layer_norm", "residual_add_layer_norm", "rms_norm", "group_norm_prologue_silu", "batch_norm_2d"],
    "scan": ["cumsum_last", "cumsum_dim0", "logcumsumexp", "cummax", "exclusive_cumsum", "cumsum_int"],
}
LONG_ARCHES = ("sm_90",)  # the long variants compile slowly; the regular ones cover sm_100 too


def long_cases(family: str) -> list[Case]:
    names = LONG_CASES[family]
    return [c for c in ALL_CASES[family] if c.name in names]


def family_specs(decomposition, families=ROWWISE_FAMILIES):
    return [k for k in decomposition.kernels if k.family in families]


def case_specs(case: Case, shape=None, dtype=None, families=None):
    from .helpers import decompose_source

    shape = shape or case.cpu_shape
    dtype = dtype or case.dtypes[0]
    body, inputs = case.source(shape, dtype)
    d = decompose_source(body, inputs)
    specs = family_specs(d, families or (case.family,))
    assert specs, f"{case.name}: no {case.family} spec in {[k.family for k in d.kernels]}"
    return specs


@dataclass
class Outcome:
    ok: bool
    message: str = ""
    extra: dict = field(default_factory=dict)


def case_shape(case: Case, shape_index: int) -> tuple:
    return case.shapes[min(shape_index, len(case.shapes) - 1)]


def combined_source(cases, shape_index: int = 0, dtype: str | None = None) -> tuple[str, str]:
    """One model running every case as a submodule `c<i>` (one capture instead of one per case), each on its
    `shape_index`-th shape, in `dtype` where the case supports it (else its first dtype)."""
    classes, calls, inputs = [], [], []
    k = 0
    for i, case in enumerate(cases):
        shape = case_shape(case, shape_index)
        dt = dtype if dtype in case.dtypes else case.dtypes[0]
        f = case.fields(shape, dt)
        args = ", ".join(f"x{j}" for j in range(case.n_inputs))
        classes.append(f"class Case{i}(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                       f"        {case.init.format(**f)}\n\n    def forward(self, {args}):\n        x = x0\n"
                       + "".join(f"        {line}\n" for line in case.forward.format(**f).split("\n")))
        names = [f"a{k + j}" for j in range(case.n_inputs)]
        k += case.n_inputs
        calls.append((i, names))
        inputs.append(case.inputs.format(**f).strip()[1:-1])
    params = ", ".join(n for _, names in calls for n in names)
    lines = ["class Model(nn.Module):", "    def __init__(self):", "        super().__init__()"]
    lines += [f"        self.c{i} = Case{i}()" for i, _ in calls]
    lines += ["", f"    def forward(self, {params}):", "        res = ()"]
    for i, names in calls:
        lines.append(f"        r = self.c{i}({', '.join(names)})")
        lines.append("        res = res + (tuple(r) if isinstance(r, tuple) else (r,))")
    lines.append("        return res")
    return "\n\n".join(classes) + "\n\n" + "\n".join(lines) + "\n", "[" + ", ".join(inputs) + "]"


def combined_specs(cases, families=ROWWISE_FAMILIES, shape_index: int = 0,
                   dtype: str | None = None) -> dict[str, list]:
    """case name → its specs of the given families, from one capture of `combined_source(cases, ...)`."""
    from .helpers import decompose_source

    body, inputs = combined_source(cases, shape_index, dtype)
    d = decompose_source(body, inputs)
    out: dict[str, list] = {c.name: [] for c in cases}
    for spec in family_specs(d, families):
        for i, case in enumerate(cases):
            if spec.id.startswith(f"c{i}_"):
                out[case.name].append(spec)
                break
        else:
            raise AssertionError(f"spec {spec.id} belongs to no case")
    return out


def tie_input(t, gen):
    """Integer-valued floats in [-3, 3]: most rows hold many equal maxima/minima."""
    import torch

    if t.dtype in ("float32", "float16", "bfloat16"):
        return torch.randint(-3, 4, t.shape, generator=gen).to(getattr(torch, t.dtype))
    from tilestudio.core.kernels.checking import random_input

    return random_input(t, "cpu", gen)


def input_maker(case: Case):
    return tie_input if case.ties else None
