"""Conv family (CPU; corpus specs: test_corpus_compile.py): one snippet per variant (1-D/2-D/3-D, transposed, stride/padding/'same'/dilation/groups/
output_padding, depthwise, 1x1, batch norm folding, fused epilogues with side inputs, float32/float16/bfloat16,
odd spatial sizes) compiles and runs on the CPU emulator against its float64 reference; the GPU test file's cases
are validated the same way."""

from __future__ import annotations

import math

import pytest

from . import test_conv_gpu
from .cutile_emulator import check_emulated
from .helpers_gemm import compile_spec_dedup, module_model, snippet_spec
from .helpers_indexed import make_inputs

FAMILY = "conv"


def _m(init: str, forward: str, args: str = "x") -> str:
    return module_model(init, forward, args)


CASES = {
    "ct2d_dilation_s3_output_padding": (_m("self.c = nn.ConvTranspose2d(6, 5, 3, stride=3, padding=2, "
                                           "output_padding=1, dilation=2)", "self.c(x)"), "[torch.randn(2, 6, 7, 9)]"),
    "ct2d_groups": (_m("self.c = nn.ConvTranspose2d(6, 4, 4, stride=2, padding=1, groups=2)", "self.c(x)"),
                    "[torch.randn(2, 6, 7, 9)]"),
    "ct2d_dilation2_s2": (_m("self.c = nn.ConvTranspose2d(4, 4, 3, stride=2, dilation=2)", "self.c(x)"),
                          "[torch.randn(1, 4, 5, 6)]"),
    "ct2d_s1_relu": (_m("self.c = nn.ConvTranspose2d(4, 8, 3, stride=1, padding=1)", "torch.relu(self.c(x))"),
                     "[torch.randn(2, 4, 9, 10)]"),
    "ct1d_s4_nobias": (_m("self.c = nn.ConvTranspose1d(3, 5, 7, stride=4, padding=3, output_padding=2, bias=False)",
                          "self.c(x)"), "[torch.randn(2, 3, 13)]"),
    "ct3d_bn_relu": (_m("self.c = nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1); self.bn = nn.BatchNorm3d(6)",
                        "torch.relu(self.bn(self.c(x)))"), "[torch.randn(2, 4, 3, 5, 6)]"),
    "ct2d_fp16": (_m("self.c = nn.ConvTranspose2d(8, 6, 4, stride=2, padding=1).half()", "self.c(x)"),
                  "[torch.randn(2, 8, 5, 7).half()]"),
    "c2d_same_dilation": (_m("self.c = nn.Conv2d(5, 7, (3, 5), padding='same', dilation=(2, 1))", "self.c(x)"),
                          "[torch.randn(2, 5, 11, 13)]"),
    "c2d_k4s2_bn_silu_nobias": (_m("self.c = nn.Conv2d(5, 24, 4, stride=2, padding=1, bias=False); "
                                   "self.bn = nn.BatchNorm2d(24)", "F.silu(self.bn(self.c(x)))"),
                                "[torch.randn(2, 5, 17, 19)]"),
    "c1d_s3_dilation2": (_m("self.c = nn.Conv1d(6, 9, 5, stride=3, padding=4, dilation=2)", "self.c(x)"),
                         "[torch.randn(3, 6, 41)]"),
    "c3d_stride_groups": (_m("self.c = nn.Conv3d(6, 8, 3, stride=(1, 2, 2), padding=1, groups=2)", "self.c(x)"),
                          "[torch.randn(2, 6, 5, 9, 10)]"),
    "depthwise_k5s2": (_m("self.c = nn.Conv2d(12, 12, 5, stride=2, padding=2, groups=12)", "self.c(x)"),
                       "[torch.randn(2, 12, 15, 17)]"),
    "depthwise_1d": (_m("self.c = nn.Conv1d(8, 8, 3, padding=1, groups=8)", "self.c(x)"), "[torch.randn(2, 8, 33)]"),
    "depthwise_bn_relu6_bf16": (_m("self.c = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False).to(torch.bfloat16); "
                                   "self.bn = nn.BatchNorm2d(8).to(torch.bfloat16)", "F.relu6(self.bn(self.c(x)))"),
                                "[torch.randn(2, 8, 9, 11).to(torch.bfloat16)]"),
    "channel_multiplier": (_m("self.c = nn.Conv2d(4, 8, 3, padding=1, groups=4)", "self.c(x)"),
                           "[torch.randn(2, 4, 9, 11)]"),
    "c2d_sigmoid_scale_residual": (_m("self.c = nn.Conv2d(8, 8, 3, padding=1); "
                                      "self.s = nn.Parameter(torch.randn(1, 8, 1, 1))",
                                      "torch.sigmoid(self.c(x)) * self.s + r", "x, r"),
                                   "[torch.randn(2, 8, 10, 12), torch.randn(2, 8, 10, 12)]"),
    "c2d_partial_broadcast_side": (_m("self.c = nn.Conv2d(8, 8, 3, padding=1)", "self.c(x) + r", "x, r"),
                                   "[torch.randn(2, 8, 10, 12), torch.randn(2, 1, 10, 1)]"),
    "c2d_1x1_fp16": (_m("self.c = nn.Conv2d(16, 32, 1).half()", "F.relu(self.c(x))"),
                     "[torch.randn(2, 16, 9, 11).half()]"),
    "c2d_1x1_stride2": (_m("self.c = nn.Conv2d(16, 8, 1, stride=2)", "self.c(x)"), "[torch.randn(2, 16, 9, 11)]"),
    "c2d_s2_bf16": (_m("self.c = nn.Conv2d(6, 20, 3, stride=2).to(torch.bfloat16)", "self.c(x)"),
                    "[torch.randn(2, 6, 13, 15).to(torch.bfloat16)]"),
    "c2d_groups_bn": (_m("self.c = nn.Conv2d(8, 12, 3, groups=4, padding=1); self.bn = nn.BatchNorm2d(12)",
                         "self.bn(self.c(x))"), "[torch.randn(2, 8, 7, 9)]"),
    "c2d_many_channels": (_m("self.c = nn.Conv2d(80, 40, 3, padding=1)", "self.c(x)"), "[torch.randn(1, 80, 6, 7)]"),
    "functional_conv_weight_input": (_m("", "F.conv2d(x, w, None, 1, 1)", "x, w"),
                                     "[torch.randn(2, 4, 9, 10), torch.randn(6, 4, 3, 3)]"),
}
BOTH_ARCHES = {"ct3d_bn_relu", "c2d_k4s2_bn_silu_nobias", "depthwise_k5s2", "c2d_1x1_fp16", "c1d_s3_dilation2"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_conv_variant_compiles_and_emulates(name):
    model, inputs = CASES[name]
    spec = snippet_spec(model, inputs, FAMILY)
    source = compile_spec_dedup(spec, ("sm_90", "sm_100") if name in BOTH_ARCHES else ("sm_90",))
    result = check_emulated(spec, source)
    assert result.ok, result.message


def _code(name):
    from tilestudio.core.kernels import generate_kernel

    return generate_kernel(snippet_spec(*CASES[name], FAMILY))


def test_kernel_shapes_by_case():
    assert "depthwise" in _code("depthwise_k5s2").notes[0]
    one_by_one = _code("c2d_1x1_fp16")
    assert "read in place" in one_by_one.notes[0] and "_pad_kernel" not in one_by_one.code
    transposed = _code("ct2d_groups")
    assert "ct.scatter(" in transposed.code and "ct.mma(" in transposed.code
    folded = _code("c2d_k4s2_bn_silu_nobias")
    assert folded.prepare_name and "bn_scale" in folded.code


def test_tma_friendly_input_loads():
    """GEMM-mode convolutions read a channels-last buffer whose box offsets are in the spatial dims only (the
    compiler lowers those to TMA; a channels-first box at an unaligned offset of the contiguous dim falls back to
    per-element loads); a pointwise conv reads its input in place with tile-aligned loads."""
    for name in ("c2d_same_dilation", "c2d_s2_bf16", "ct2d_groups", "c3d_stride_groups", "c1d_s3_dilation2"):
        code = _code(name).code
        assert "traversal_steps=(1, 1, 1, 1, BK)" in code, name
        assert "ct.permute(v, (1, 2, 0))" in code, name  # the copy kernel writes channels-last
    one_by_one = _code("c2d_1x1_fp16").code
    assert "ct.load(XP, index=(ng, cb, od, ohb, owb)" in one_by_one and "tiled_view" not in one_by_one


def test_box_tiles_prefer_size():
    from tilestudio.core.kernels.conv import _box

    assert _box(1, 784, 128, prefer_size=True) == (1, 128)  # a flat 28x28 1x1 conv: full 128-position tiles
    assert _box(56, 56, 128, prefer_size=True) == (2, 64)
    assert _box(7, 7, 128, prefer_size=True) == (8, 8)


def test_no_host_compute_in_launch():
    """launch_ only allocates, rearranges and launches (the batch norm fold lives in prepare_)."""
    for name in CASES:
        launch = _code(name).code.split("def launch_")[1]
        for banned in ("rsqrt", ".float()", "F.", "torch.nn", "unfold", "im2col"):
            assert banned not in launch, f"{name}: {banned!r} in launch_"


def test_box_tiles():
    from tilestudio.core.kernels.conv import _box

    assert _box(56, 56, 64) == (8, 8)
    assert _box(224, 224, 128) == (4, 32)
    assert _box(1, 4096, 128) == (1, 128)
    assert _box(5, 5, 128) == (8, 8)


def _smallest(shapes):
    return min(shapes, key=math.prod)


GPU_SMOKE = [(name, _smallest(shapes), dtype) for name, (_, shapes) in test_conv_gpu.VARIANTS.items()
             for dtype in ("float32", "float16")]


@pytest.mark.parametrize("name,shape,dtype", GPU_SMOKE, ids=[f"{n}-{d}" for n, _, d in GPU_SMOKE])
def test_gpu_cases_pass_on_the_emulator(name, shape, dtype, monkeypatch):
    monkeypatch.setattr(test_conv_gpu, "CHECK", check_emulated)
    test_conv_gpu.test_conv_kernel_matches_reference(name, shape, dtype)


# TILES["conv_fold_w"] (the default): the width taps folded into the input channels (conv_fold.py)
FOLD_CASES = {
    "stem_7x7s2_bn_relu_fp16": (_m("self.c = nn.Conv2d(3, 8, 7, stride=2, padding=3, bias=False).half(); "
                                   "self.bn = nn.BatchNorm2d(8).half()", "torch.relu(self.bn(self.c(x)))"),
                                "[torch.randn(2, 3, 21, 22).half()]"),
    "c1d_one_channel_dilated": (_m("self.c = nn.Conv1d(1, 6, 5, stride=2, padding=2, dilation=2)", "self.c(x)"),
                                "[torch.randn(2, 1, 37)]"),
    "c2d_groups": (_m("self.c = nn.Conv2d(6, 4, 3, groups=2, padding=1)", "self.c(x)"), "[torch.randn(2, 6, 7, 9)]"),
    "c3d_stride": (_m("self.c = nn.Conv3d(2, 5, 3, stride=(1, 2, 2), padding=1)", "self.c(x)"),
                   "[torch.randn(1, 2, 4, 7, 9)]"),
    "functional_weight_input": (_m("", "torch.relu(F.conv2d(x, w, None, 1, 1))", "x, w"),
                                "[torch.randn(2, 3, 12, 13), torch.randn(8, 3, 3, 3)]"),
    "c2d_same_dilation_bf16": (_m("self.c = nn.Conv2d(5, 7, (3, 5), padding='same', dilation=(2, 1))"
                                  ".to(torch.bfloat16)", "self.c(x)"), "[torch.randn(2, 5, 9, 11).to(torch.bfloat16)]"),
}


@pytest.mark.parametrize("name", sorted(FOLD_CASES))
def test_width_taps_folded_into_channels(name, monkeypatch):
    from tilestudio.core.kernels import gemm_common

    monkeypatch.setitem(gemm_common.TILES, "conv_fold_w", True)
    spec = snippet_spec(*FOLD_CASES[name], FAMILY)
    source = compile_spec_dedup(spec, ("sm_90",))
    assert any("folded into the input channels" in n for n in source.notes), source.notes
    result = check_emulated(spec, source)
    assert result.ok, result.message
    if "bn" not in name:  # non-contiguous input and weight (the batch norm's variance needs positive inputs)
        result = check_emulated(spec, source, make_input=make_inputs(strided=True))
        assert result.ok, ("strided", result.message)


def test_folding_only_where_it_saves_k_steps(monkeypatch):
    from tilestudio.core.kernels import gemm_common

    monkeypatch.setitem(gemm_common.TILES, "conv_fold_w", True)
    for init, shape in (("nn.Conv2d(12, 8, 3, padding=1)", "2, 12, 6, 7"),  # 36 channels: 3 K steps either way
                        ("nn.Conv2d(3, 8, 1)", "2, 3, 6, 7"),  # 1x1
                        ("nn.ConvTranspose2d(3, 8, 3, stride=2)", "2, 3, 6, 7"),  # transposed
                        ("nn.Conv2d(4, 4, 3, groups=4)", "2, 4, 6, 7")):  # depthwise
        source = _code_of(_m(f"self.c = {init}", "self.c(x)"), f"[torch.randn({shape})]")
        assert not any("folded into the input channels" in n for n in source.notes), init


def _code_of(model, inputs):
    from tilestudio.core.kernels import generate_kernel

    return generate_kernel(snippet_spec(model, inputs, FAMILY))


@pytest.mark.parametrize("name", ["stem_7x7s2_bn_relu_fp16", "c2d_groups"])
def test_unfolded_few_channel_convs(name, monkeypatch):
    """The same convs with folding switched off (TILES["conv_fold_w"] = False): 16-channel K slices per tap."""
    from tilestudio.core.kernels import gemm_common

    monkeypatch.setitem(gemm_common.TILES, "conv_fold_w", False)
    spec = snippet_spec(*FOLD_CASES[name], FAMILY)
    source = compile_spec_dedup(spec, ("sm_90",))
    assert not any("taps folded" in n for n in source.notes)
    result = check_emulated(spec, source)
    assert result.ok, result.message


def test_folded_weights_are_padded_only_in_prepare():
    """Prepared (parameter) weights get 16-byte rows once in prepare_; a weight passed at run time is only
    rearranged in launch_ (a pad there would be PyTorch compute on the forward path: PUR020 in the dry run)."""
    prepared = _code_of(*FOLD_CASES["stem_7x7s2_bn_relu_fp16"])
    assert "torch.nn.functional.pad" in prepared.code.split("def launch_")[0]
    runtime = _code_of(*FOLD_CASES["functional_weight_input"])
    assert "torch.nn.functional.pad" not in runtime.code


def test_large_low_precision_convs_take_8_worker_warps():
    """TILES["conv_worker_warps"] (session 9's measured default): a 3x3 bf16 conv over 256 channels runs 256
    output channels per block on 8 worker warps, compiled for sm_90 without spills (a zero stack frame); a 1x1
    fp16 conv too; float32, folded and small-tile convs keep the compiler's warps."""
    from tilestudio.core.kernels.aot import compile_cubin, kernel_resources, trace_launches

    spec = snippet_spec(_m("self.c = nn.Conv2d(256, 256, 3, padding=1).to(torch.bfloat16)", "self.c(x)"),
                        "[torch.randn(32, 256, 56, 56).to(torch.bfloat16)]", FAMILY)
    from tilestudio.core.kernels import generate_kernel

    source = generate_kernel(spec)
    assert "@ct.kernel(num_worker_warps=8)" in source.code and "BCO=256" in source.notes[0], source.notes
    assert "8 worker warps" in source.notes[0]
    (record,) = [r for r in trace_launches(source, spec) if r.kernel_name.endswith("_kernel")
                 and not r.kernel_name.endswith("_pad_kernel")]
    assert kernel_resources(compile_cubin(record, "sm_90", specialize=True))["frame"] == 0
    for init, shape in (("nn.ConvTranspose2d(256, 256, 4, stride=2, padding=1).half()", "16, 256, 32, 32"),
                        ("nn.Conv3d(128, 256, 3, padding=1).half()", "4, 128, 16, 32, 32")):
        other = snippet_spec(_m(f"self.c = {init}", "self.c(x)"), f"[torch.randn({shape}).half()]", FAMILY)
        src = generate_kernel(other)
        assert "num_worker_warps=8" in src.code and "BCO=256" in src.notes[0], (init, src.notes)
        (rec,) = [r for r in trace_launches(src, other) if not r.kernel_name.endswith("_pad_kernel")]
        assert kernel_resources(compile_cubin(rec, "sm_90", specialize=True))["frame"] == 0, init
    one = _code_of(_m("self.c = nn.Conv2d(512, 512, 1).half()", "self.c(x)"), "[torch.randn(64, 512, 28, 28).half()]")
    assert "@ct.kernel(num_worker_warps=8)" in one.code and "BCO=256" in one.notes[0], one.notes
    for init, shape in (("nn.Conv2d(256, 256, 3, padding=1)", "32, 256, 56, 56"),  # float32
                        ("nn.Conv2d(3, 64, 7, stride=2, padding=3).half()", "64, 3, 224, 224"),  # folded stem
                        ("nn.Conv2d(16, 32, 3).half()", "2, 16, 9, 11")):  # small: shrunk tiles
        dt = ".half()" if "half" in init else ""
        code = _code_of(_m(f"self.c = {init}", "self.c(x)"), f"[torch.randn({shape}){dt}]").code
        assert "num_worker_warps" not in code, init


def test_float32_conv_multiplies_in_split_tf32():
    """A float32 convolution's implicit GEMM takes the split-TF32 mmas (gemm_common.mma_lines) and compiles for
    sm_90 without a stack frame; its values are float32-level against float64 on the emulator (TF32 alone: ~1e-3)."""
    from tilestudio.core.kernels.aot import compile_cubin, kernel_resources, trace_launches

    spec = snippet_spec(_m("self.c = nn.Conv2d(16, 24, 3, padding=1)", "self.c(x)"), "[torch.randn(2, 16, 9, 11)]",
                        FAMILY)
    source = compile_spec_dedup(spec, ("sm_90",))
    assert source.code.count("ct.mma(") == 3 and "astype(ct.tfloat32)" in source.code
    main = [r for r in trace_launches(source, spec) if not r.kernel_name.endswith("_pad_kernel")]
    assert all(kernel_resources(compile_cubin(r, "sm_90"))["frame"] == 0 for r in main)
    result = check_emulated(spec, source)
    assert result.ok and result.max_abs_err < 1e-4, (result.max_abs_err, result.message)  # TF32 alone: ~1e-3
