"""Conv family on the GPU: each variant on three shapes (unaligned/odd spatial sizes included, one large) in
float32/float16/bfloat16, against the float64 reference with poisoned outputs (checking.check_kernel).

`CHECK` is swapped for the CPU emulator by test_conv_compile.py, which runs the smallest shape of every variant
through this file's own code so that the file is known to be right before it reaches a GPU.
"""

from __future__ import annotations

import pytest

from .helpers import case_ids, run_check
from .helpers_gemm import DT, DTYPES, module_model, snippet_spec

pytestmark = pytest.mark.gpu
CHECK = None


def _conv(cls: str, args: str, forward: str, extra_init: str = "", extra_args: str = "", extra_inputs: str = ""):
    """Builder of a model `self.c = nn.<cls>(<args>)` (+ extra modules) applied to x of the case's shape."""

    def build(shape, dt):
        n, c, *sp, co = shape
        init = f"self.c = nn.{cls}({c}, {co}, {args}){dt}"
        if extra_init:
            init += "; " + extra_init.format(co=co, dt=dt)
        sps = ", ".join(map(str, sp))
        x = f"torch.randn({n}, {c}, {sps}){dt}"
        extra = ", " + extra_inputs.format(n=n, co=co, c=c, sp=sps, dt=dt) if extra_inputs else ""
        inputs = f"[{x}{extra}]"
        return module_model(init, forward, "x" + extra_args), inputs

    return build


# name → (builder(shape, dt) -> (model, inputs), shapes as (N, C_in, *spatial, C_out))
VARIANTS = {
    "conv2d_k3_bias_relu": (_conv("Conv2d", "3, padding=1", "torch.relu(self.c(x))"),
                            [(2, 3, 30, 30, 16), (8, 64, 56, 56, 64), (1, 5, 17, 19, 7)]),
    "conv2d_k4s2_bn_silu": (_conv("Conv2d", "4, stride=2, padding=1, bias=False", "F.silu(self.bn(self.c(x)))",
                                  "self.bn = nn.BatchNorm2d({co}){dt}"),
                            [(2, 5, 17, 19, 24), (4, 32, 64, 64, 64), (1, 16, 9, 9, 8)]),
    "conv2d_1x1_residual": (_conv("Conv2d", "1", "self.c(x) + r", extra_args=", r",
                                  extra_inputs="torch.randn({n}, {co}, {sp}){dt}"),
                            [(2, 16, 9, 11, 16), (8, 256, 28, 28, 256), (1, 24, 7, 9, 12)]),
    "conv2d_dilated_same": (_conv("Conv2d", "3, padding='same', dilation=2", "self.c(x) * 0.5"),
                            [(2, 8, 20, 27, 12), (4, 64, 32, 48, 64), (1, 3, 5, 6, 4)]),
    "depthwise_s1": (_conv("Conv2d", "3, padding=1, groups={c}", "torch.clamp(self.c(x), -1.0, 1.0)"),
                     [(3, 12, 25, 25, 12), (8, 128, 56, 56, 128), (1, 7, 9, 10, 7)]),
    "depthwise_k5s2": (_conv("Conv2d", "5, stride=2, padding=2, groups={c}", "self.c(x)"),
                       [(2, 12, 15, 17, 12), (8, 96, 64, 64, 96), (1, 3, 5, 6, 3)]),
    "stem_7x7s2_bn_relu": (_conv("Conv2d", "7, stride=2, padding=3, bias=False", "torch.relu(self.bn(self.c(x)))",
                                 "self.bn = nn.BatchNorm2d({co}){dt}"),
                           [(8, 3, 224, 224, 64), (2, 3, 33, 35, 16), (1, 1, 19, 17, 8)]),
    "grouped": (_conv("Conv2d", "3, groups=2", "self.c(x)"),
                [(2, 8, 19, 23, 12), (4, 64, 32, 32, 128), (1, 6, 7, 9, 4)]),
    "conv1d_s2_gelu": (_conv("Conv1d", "5, stride=2, padding=2", "F.gelu(self.c(x))"),
                       [(4, 3, 101, 16), (8, 64, 1000, 128), (1, 5, 33, 7)]),
    "conv3d_s122": (_conv("Conv3d", "3, stride=(1, 2, 2), padding=1", "self.c(x)"),
                    [(2, 3, 7, 10, 11, 8), (2, 16, 16, 32, 32, 32), (1, 4, 5, 6, 7, 5)]),
    "conv_transpose2d_s2_op1": (_conv("ConvTranspose2d", "3, stride=2, padding=1, output_padding=1", "self.c(x)"),
                                [(2, 8, 15, 17, 5), (4, 64, 32, 32, 32), (1, 3, 7, 9, 6)]),
    "conv_transpose2d_k4s2_relu": (_conv("ConvTranspose2d", "4, stride=2, padding=1", "torch.relu(self.c(x))"),
                                   [(2, 16, 12, 15, 8), (4, 128, 16, 16, 64), (1, 5, 3, 4, 3)]),
    "conv_transpose3d_bn_relu": (_conv("ConvTranspose3d", "3, stride=2, padding=1", "torch.relu(self.bn(self.c(x)))",
                                       "self.bn = nn.BatchNorm3d({co}){dt}"),
                                 [(2, 4, 5, 7, 9, 6), (2, 32, 8, 16, 16, 16), (1, 3, 3, 4, 5, 4)]),
    "conv_transpose1d_s4": (_conv("ConvTranspose1d", "7, stride=4, padding=3, output_padding=2", "self.c(x)"),
                            [(2, 3, 13, 5), (8, 64, 256, 32), (1, 6, 50, 10)]),
    "conv_transpose2d_groups_dilation": (_conv("ConvTranspose2d", "3, stride=3, padding=2, dilation=2, groups=2",
                                               "self.c(x)"),
                                         [(2, 6, 7, 9, 4), (2, 32, 16, 16, 32), (1, 2, 3, 4, 2)]),
}
# shapes large enough for the 8-worker-warp, 256-channel tiles of fp16/bf16 convs (TILES["conv_worker_warps"]):
# a 3x3 conv, a transposed conv and a 3-D conv, in the 16-bit dtypes only
WIDE = {"conv2d_k3_bias_relu": (8, 128, 56, 56, 256), "conv_transpose2d_k4s2_relu": (8, 256, 32, 32, 256),
        "conv3d_s122": (2, 64, 16, 64, 64, 256)}
CASES = ([(name, shape, dtype) for name, (_, shapes) in VARIANTS.items() for shape in shapes for dtype in DTYPES]
         + [(name, shape, dtype) for name, shape in WIDE.items() for dtype in ("float16", "bfloat16")])


def build(name, shape, dtype):
    builder, _ = VARIANTS[name]
    model, inputs = builder(shape, DT[dtype])
    c = shape[1]
    return snippet_spec(model.replace("{c}", str(c)), inputs, "conv")


@pytest.mark.parametrize("name,shape,dtype", CASES, ids=case_ids(CASES))
def test_conv_kernel_matches_reference(name, shape, dtype):
    spec = build(name, shape, dtype)
    result = run_check(spec, None, CHECK)
    assert result.ok, result.message


# the few-channel cases above fold their width taps into the input channels by default (conv_fold.py); here
# the same cases unfolded (TILES["conv_fold_w"] off), so both paths stay checked
FOLDED = [(name, shape) for name, (_, shapes) in VARIANTS.items() for shape in shapes
          if not name.startswith(("conv_transpose", "depthwise")) and name != "conv2d_1x1_residual"
          and shape[1] // (2 if name == "grouped" else 1) < 16]


@pytest.mark.parametrize("name,shape", FOLDED, ids=[f"{n}-{'x'.join(map(str, s))}" for n, s in FOLDED])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_conv_width_taps_unfolded(name, shape, dtype, monkeypatch):
    from tilestudio.core.kernels import gemm_common

    monkeypatch.setitem(gemm_common.TILES, "conv_fold_w", False)
    spec = build(name, shape, dtype)
    result = run_check(spec, None, CHECK)
    assert result.ok, result.message
