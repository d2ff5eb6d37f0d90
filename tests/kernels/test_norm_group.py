"""Group norm's channel-row path (CPU): the input viewed as (N*G, C/G, HW) with one weight/bias value per channel
row, in its one-tile form, its chunked two-pass form and the flat (N*G, C/G*HW) fallback, on unaligned spatial
sizes, groups of one channel, padded channel counts (C/G = 3), affine and not, with a fused residual prologue
and activation, in float32/float16/bfloat16: AOT-compiled for sm_90 and checked in the emulator."""

from __future__ import annotations

import functools

import pytest

from .cutile_emulator import check_emulated
from .helpers_rowwise import C, case_specs

# N*G >= 132 row tiles so the chunked form is taken (fewer groups take the flat rows' segmented statistics)
CASES = [
    C("gn_c3_hw117", "norm", "return self.n(x)", [(34, 12, 13, 9)],
      init="self.n = nn.GroupNorm(4, {s1}).to(torch.{dt})"),
    C("gn_1ch_hw63", "norm", "return self.n(x)", [(23, 6, 7, 9)],
      init="self.n = nn.GroupNorm({s1}, {s1}).to(torch.{dt})"),
    C("gn_noaffine_residual_silu", "norm", "return F.silu(self.n(x + x1))", [(70, 8, 5, 11)],
      inputs="[torch.randn{s}.to(torch.{dt}), torch.randn{s}.to(torch.{dt})]",
      init="self.n = nn.GroupNorm(2, {s1}, affine=False)"),
    C("gn_bias_side_relu_3d", "norm", "return torch.relu(self.n(x) + x1)", [(40, 8, 4, 3, 11)],
      inputs="[torch.randn{s}.to(torch.{dt}), torch.randn({s1}, 1, 1, 1).to(torch.{dt})]",
      init="self.n = nn.GroupNorm(4, {s1}).to(torch.{dt})"),
]
FORMS = {
    "single": ({}, "one pass"),
    "chunked": ({"group_max_single": 16}, "statistics then normalize"),
    # lane-wise Welford statistics (unpadded C/G only; gn_c3_hw117's padded channels keep the per-chunk merge)
    "lanes": ({"group_max_single": 16, "lane_group": True}, "statistics then normalize"),
    # an occupancy hint and load latency hints on the chunk loops (TUNING chunked_occupancy / long_latency)
    "hinted": ({"group_max_single": 16, "chunked_occupancy": 4, "long_latency": 10}, "statistics then normalize"),
    "flat": ({"group_channel_rows": False}, None),
    # the one-tile form on 8 worker warps per block (TUNING worker_warps), one block per group
    "single_8warps": ({"worker_warps": 8, "persistent": False}, "one pass"),
}
DTYPES = ("float32", "float16", "bfloat16")
# chunk elements of the chunked form: 32 positions x C/G padded (2 to 5 chunks, the last one ragged)
CHUNK = {"gn_c3_hw117": 128, "gn_1ch_hw63": 32, "gn_noaffine_residual_silu": 128, "gn_bias_side_relu_3d": 64}


@functools.lru_cache(maxsize=None)
def specs_for(name: str, dtype: str):
    case = next(c for c in CASES if c.name == name)
    return case_specs(case, dtype=dtype)


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_group_norm_forms(name, dtype, form):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import compile_launch, trace_launches
    from tilestudio.core.kernels.rowwise import tuned

    overrides, note = FORMS[form]
    if form in ("chunked", "lanes", "hinted"):
        overrides = dict(overrides, group_chunk=CHUNK[name])
    for spec in specs_for(name, dtype):
        with tuned(**overrides):
            source = generate_kernel(spec)
        assert not source.skeleton, source.notes
        doc = source.notes[0]
        if form == "flat":
            assert "chans" not in source.code, doc
        else:
            assert "chans" in source.code and note in doc, doc
            assert "//" not in source.code.split("def launch_")[0], "per-element channel division in the kernel"
        if form == "hinted":
            assert "@ct.kernel(occupancy=4)" in source.code and "latency=10" in source.code, doc
        if form == "single_8warps":
            assert "num_worker_warps=8" in source.code, doc
        if form == "lanes":
            assert ("m2l = " in source.code) == (name != "gn_c3_hw117"), doc
        for rec in trace_launches(source, spec):
            assert compile_launch(rec, "sm_90")[0] > 0
        result = check_emulated(spec, source)
        assert result.ok, f"{name} {dtype} {form}: {result.message}"


GPU_FORMS = [("chunked", {"group_max_single": 16384, "group_chunk": 2048}),
             ("lanes", {"group_max_single": 16384, "group_chunk": 4096, "lane_group": True}),
             # the whole group as one tile on 8 worker warps (prepared in session 8, spill-free on sm_90)
             ("single_8warps", {"group_max_single": 32768, "worker_warps": 8, "persistent": False})]
GPU_SHAPES = [((32, 256, 56, 56), "float16"), ((8, 96, 70, 70), "float32"), ((16, 128, 65, 67), "bfloat16")]


@pytest.mark.gpu
@pytest.mark.parametrize("shape,dtype", GPU_SHAPES, ids=[f"{'x'.join(map(str, s))}-{d}" for s, d in GPU_SHAPES])
@pytest.mark.parametrize("form,overrides", GPU_FORMS, ids=[f for f, _ in GPU_FORMS])
def test_group_norm_silu_forms_on_gpu(form, overrides, shape, dtype):
    """The channel-row forms (chunked with a per-chunk merge or lane-wise Welford, one tile on 8 worker warps) of
    group_norm(32) + silu at ResNet-like sizes, fresh random inputs, against the float64 reference."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.checking import check_kernel
    from tilestudio.core.kernels.rowwise import tuned

    from .helpers_gemm import module_model, snippet_spec

    s = ", ".join(map(str, shape))
    spec = snippet_spec(module_model(f"self.n = nn.GroupNorm(32, {shape[1]}).to(torch.{dtype})", "F.silu(self.n(x))"),
                        f"[torch.randn({s}).to(torch.{dtype})]", "norm")
    with tuned(**overrides):
        source = generate_kernel(spec)
    expected = "one pass" if form == "single_8warps" else "statistics then normalize"
    assert expected in source.notes[0], source.notes[0]
    result = check_kernel(spec, source)
    assert result.ok, result.message


def test_one_tile_group_on_8_worker_warps_does_not_spill():
    """group_norm(32)+silu 32x256x56x56 fp16 (bench/kernels.py), each 8 x 3136 group as one tile: at the compiler's
    warp count the float32 tile spills (a non-zero stack frame in the sm_90 cubin); on 8 worker warps and one
    block per group it compiles with a zero frame (TUNING worker_warps, prepared for the GPU's single-pass timing)."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import compile_cubin, kernel_resources, trace_launches
    from tilestudio.core.kernels.rowwise import tuned

    case = C("gn_bench", "norm", "return F.silu(self.n(x))", [(32, 256, 56, 56)],
             init="self.n = nn.GroupNorm(32, {s1}).to(torch.{dt})")
    (spec,) = case_specs(case, dtype="float16")
    frames = {}
    for warps in (None, 8):
        with tuned(group_max_single=32768, worker_warps=warps, persistent=False):
            source = generate_kernel(spec)
        assert "one pass" in source.notes[0], source.notes
        (record,) = trace_launches(source, spec)
        frames[warps] = kernel_resources(compile_cubin(record, "sm_90", specialize=True))["frame"]
    assert frames[None] > 0 and frames[8] == 0, frames
