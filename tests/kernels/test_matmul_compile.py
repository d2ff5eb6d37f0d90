"""Matmul family (CPU; corpus specs: test_corpus_compile.py): one snippet per variant (every anchor op, batch broadcasting, 1-D operands, einsum forms,
transposed operands, fused epilogues, batch norm folding, float32/float16/bfloat16, unaligned shapes) compiles and
runs on the CPU emulator against its float64 reference; the GPU test file's cases are validated the same way."""

from __future__ import annotations

import math

import pytest

from . import test_matmul_gpu
from .cutile_emulator import check_emulated
from .helpers_gemm import (compile_spec_dedup, module_model, snippet_spec, snippet_specs,
                           transposed_inputs)

FAMILY = "matmul"


def _m(forward: str, args: str, init: str = "") -> str:
    return module_model(init, forward, args)


# name → (model, inputs, column-major input names)
CASES = {
    "matmul_2d_unaligned": (_m("torch.matmul(a, b)", "a, b"), "[torch.randn(33, 50), torch.randn(50, 70)]", None),
    "matmul_1d_2d": (_m("torch.matmul(a, b)", "a, b"), "[torch.randn(50), torch.randn(50, 70)]", None),
    "matmul_2d_1d": (_m("torch.matmul(a, b)", "a, b"), "[torch.randn(33, 50), torch.randn(50)]", None),
    "matmul_3d_1d": (_m("torch.matmul(a, b)", "a, b"), "[torch.randn(3, 33, 50), torch.randn(50)]", None),
    "matmul_1d_3d": (_m("torch.matmul(a, b)", "a, b"), "[torch.randn(50), torch.randn(3, 50, 17)]", None),
    "matmul_broadcast_batch": (_m("torch.matmul(a, b)", "a, b"),
                               "[torch.randn(2, 1, 33, 50), torch.randn(3, 50, 17)]", None),
    "matmul_2d_3d": (_m("torch.matmul(a, b)", "a, b"), "[torch.randn(33, 50), torch.randn(3, 50, 17)]", None),
    "matmul_fold_rowbias": (_m("torch.matmul(a, b) + c", "a, b, c"),
                            "[torch.randn(3, 33, 50), torch.randn(50, 70), torch.randn(3, 1, 70)]", None),
    "matmul_triu": (_m("torch.triu(torch.matmul(a, b), 1)", "a, b"),
                    "[torch.randn(3, 33, 50), torch.randn(3, 50, 33)]", None),
    "matmul_residual_named_like_locals": (_m("torch.matmul(a, b) + a * side0", "a, b, side0"),
                                          "[torch.randn(33, 33), torch.randn(33, 33), torch.randn(33)]", None),
    "dot_scale": (_m("torch.dot(a, b) * 2.0", "a, b"), "[torch.randn(50), torch.randn(50)]", None),
    "mv": (_m("torch.mv(a, b)", "a, b"), "[torch.randn(33, 50), torch.randn(50)]", None),
    "addmv": (_m("torch.addmv(c, a, b, beta=0.5, alpha=2.0)", "c, a, b"),
              "[torch.randn(33), torch.randn(33, 50), torch.randn(50)]", None),
    "outer": (_m("torch.outer(a, b)", "a, b"), "[torch.randn(33), torch.randn(70)]", None),
    "addmm_alpha_beta_fp16": (_m("torch.addmm(c, a, b, beta=0.5, alpha=2.0)", "c, a, b"),
                              "[torch.randn(70).half(), torch.randn(33, 50).half(), torch.randn(50, 70).half()]",
                              None),
    "addmm_beta0": (_m("torch.addmm(c, a, b, beta=0.0, alpha=1.5)", "c, a, b"),
                    "[torch.randn(33, 70), torch.randn(33, 50), torch.randn(50, 70)]", None),
    "addbmm": (_m("torch.addbmm(c, a, b, beta=0.7, alpha=1.3)", "c, a, b"),
               "[torch.randn(33, 70), torch.randn(3, 33, 50), torch.randn(3, 50, 70)]", None),
    "baddbmm_bf16": (_m("torch.baddbmm(c, a, b, beta=0.5, alpha=2.0)", "c, a, b"),
                     "[torch.randn(3, 25, 19).to(torch.bfloat16), torch.randn(3, 25, 40).to(torch.bfloat16), "
                     "torch.randn(3, 40, 19).to(torch.bfloat16)]", None),
    "bmm_colmajor_b": (_m("torch.bmm(a, b) * 0.5", "a, b"), "[torch.randn(4, 33, 20), torch.randn(4, 20, 17)]",
                       {"b"}),
    "mm_colmajor_both_fp16": (_m("torch.mm(a, b)", "a, b"), "[torch.randn(33, 50).half(), torch.randn(50, 70).half()]",
                              {"a", "b"}),
    "einsum_bid_jd": (_m("torch.einsum('bid,jd->bij', a, b)", "a, b"),
                      "[torch.randn(3, 33, 50), torch.randn(17, 50)]", None),
    "einsum_ij_jk": (_m("torch.einsum('ij,jk->ik', a, b)", "a, b"), "[torch.randn(33, 50), torch.randn(50, 17)]",
                     None),
    "einsum_attn_values": (_m("torch.einsum('bhqk,bhkd->bhqd', a, b)", "a, b"),
                           "[torch.randn(2, 3, 11, 13), torch.randn(2, 3, 13, 24)]", None),
    "einsum_permuted_out": (_m("torch.einsum('bik,bkj->bji', a, b)", "a, b"),
                            "[torch.randn(2, 11, 13), torch.randn(2, 13, 24)]", None),
    "einsum_ellipsis": (_m("torch.einsum('...ik,...kj->...ij', a, b)", "a, b"),
                        "[torch.randn(2, 3, 11, 13), torch.randn(2, 3, 13, 24)]", None),
    "einsum_two_contracted": (_m("torch.einsum('bhqd,bkhd->bqk', a, b)", "a, b"),
                              "[torch.randn(2, 3, 11, 8), torch.randn(2, 13, 3, 8)]", None),
    "linear_1d_input": (_m("self.fc(x)", "x", "self.fc = nn.Linear(50, 70)"), "[torch.randn(50)]", None),
    "linear_3d_gelu_residual_fp16": (_m("x + F.gelu(self.fc(x))", "x", "self.fc = nn.Linear(50, 50).half()"),
                                     "[torch.randn(3, 11, 50).half()]", None),
    "linear_bn_relu": (_m("torch.relu(self.bn(self.fc(x)))", "x",
                          "self.fc = nn.Linear(50, 70); self.bn = nn.BatchNorm1d(70)"), "[torch.randn(33, 50)]", None),
    "linear_bn_nobias_bf16": (_m("self.bn(self.fc(x))", "x",
                                 "self.fc = nn.Linear(50, 70, bias=False).to(torch.bfloat16); "
                                 "self.bn = nn.BatchNorm1d(70).to(torch.bfloat16)"),
                              "[torch.randn(33, 50).to(torch.bfloat16)]", None),
    "linear_epilogue_chain": (_m("torch.clamp(F.gelu(self.fc(x)) * y + 1.0, max=3.0)", "x, y",
                                 "self.fc = nn.Linear(40, 25)"), "[torch.randn(9, 40), torch.randn(9, 25)]", None),
    "linear_transposed_input": (_m("self.fc(x.transpose(0, 1))", "x", "self.fc = nn.Linear(50, 70)"),
                                "[torch.randn(50, 33)]", None),
    "bmm_scale_mask_bf16": (_m("(torch.bmm(a, b) * 0.5).masked_fill(m > 0, -1e4)", "a, b, m"),
                            "[torch.randn(4, 33, 50).to(torch.bfloat16), torch.randn(4, 50, 70).to(torch.bfloat16), "
                            "torch.randn(1, 33, 70)]", None),
}
BOTH_ARCHES = {"matmul_broadcast_batch", "addmm_alpha_beta_fp16", "bmm_colmajor_b", "linear_bn_relu",
               "einsum_two_contracted"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matmul_variant_compiles_and_emulates(name):
    model, inputs, colmajor = CASES[name]
    spec = snippet_spec(model, inputs, FAMILY)
    source = compile_spec_dedup(spec, ("sm_90", "sm_100") if name in BOTH_ARCHES else ("sm_90",))
    result = check_emulated(spec, source, make_input=transposed_inputs(colmajor) if colmajor else None)
    assert result.ok, result.message


def test_column_major_operands_are_read_in_place():
    from tilestudio.core.kernels import generate_kernel

    spec = snippet_spec(*CASES["bmm_colmajor_b"][:2], FAMILY)
    code = generate_kernel(spec).code
    assert "order=(0, 2, 1)" in code and ".transpose(-1, -2), True" in code


def test_linear_weight_loads_transposed_and_bn_folds_in_prepare():
    from tilestudio.core.kernels import generate_kernel

    spec = snippet_spec(*CASES["linear_bn_relu"][:2], FAMILY)
    source = generate_kernel(spec)
    assert source.prepare_name and "bn_scale" in source.code
    assert "fc_weight.permute(1, 0)" not in source.code.split("def launch_")[1]  # launch gets the folded weight


@pytest.mark.parametrize("equation,inputs", [
    ("ii->i", "[torch.randn(5, 5)]"),
    # three operands are chained into two-operand einsums (core/lowering.py) except with an ellipsis
    ("...ij,...jk,...kl->...il", "[torch.randn(2, 3, 4), torch.randn(2, 4, 5), torch.randn(2, 5, 6)]"),
    ("ij,jk->", "[torch.randn(3, 4), torch.randn(4, 5)]"),
])
def test_einsum_that_is_not_a_matmul_is_explicitly_unsupported(equation, inputs):
    from tilestudio.core.kernels import generate_kernel

    args = ", ".join(f"t{i}" for i in range(inputs.count("torch.randn")))
    specs = snippet_specs(_m(f"torch.einsum('{equation}', {args})", args), inputs, FAMILY)
    for spec in specs:
        source = generate_kernel(spec)
        assert source.skeleton and source.notes and "einsum" in source.notes[0]


def test_tile_table():
    from tilestudio.core.kernels.matmul import choose_tiles

    # 2^25 outputs or more and several K steps: the large tile (128x256x64 on 8 worker warps, occupancy 1)
    assert choose_tiles(8192, 8192, 8192, 1, True) == (128, 256, 64)
    assert choose_tiles(8192, 4096, 256, 1, True) == (128, 256, 64)
    assert choose_tiles(4096, 4096, 4096, 1, True) == (128, 128, 64)  # 2^24 outputs: 128x128 measured faster
    assert choose_tiles(8192, 8192, 128, 1, True) == (128, 128, 128)  # one K step: the output-bound form
    assert choose_tiles(8192, 8192, 8192, 1, False) == (128, 64, 32)  # float32 (split TF32)
    assert choose_tiles(33, 70, 50, 1, False) == (64, 64, 32)  # shrunk to the problem
    assert choose_tiles(1024, 1024, 1024, 1, True) == (64, 128, 64)  # 64 blocks of 128x128 would idle half the SMs
    bm, bn, bk = choose_tiles(5, 9, 1, 1, True)
    assert (bm, bn, bk) == (16, 16, 16)
    # small K: one K step (batched attention-like GEMMs are bound by the output write)
    assert choose_tiles(1024, 1024, 128, 64, True) == (128, 128, 128)
    assert choose_tiles(1024, 1024, 64, 64, True) == (128, 128, 64)
    assert choose_tiles(1024, 1024, 200, 64, True) == (128, 128, 64)


def test_tile_table_is_the_single_switch(monkeypatch):
    """The generators read their tiles from gemm_common.TILES (bench/variants_gemm.py switches entries there)."""
    from tilestudio.core.kernels import gemm_common
    from tilestudio.core.kernels.matmul import choose_tiles, occupancy_for

    monkeypatch.setitem(gemm_common.TILES, "mm_large", (256, 128, 64))
    assert choose_tiles(8192, 8192, 8192, 1, True) == (256, 128, 64)
    monkeypatch.setitem(gemm_common.TILES, "mm_low", (64, 256, 64))
    assert choose_tiles(4096, 4096, 4096, 1, True) == (64, 256, 64)
    assert occupancy_for(128, 128, True) == gemm_common.TILES["mm_occupancy_one_step"]
    assert occupancy_for(8192, 64, True, 8) == gemm_common.TILES["mm_occupancy_worker_warps"]
    monkeypatch.setitem(gemm_common.TILES, "mm_occupancy", 2)
    assert occupancy_for(8192, 64, True) == 2


def _smallest(shapes):
    return min(shapes, key=math.prod)


GPU_SMOKE = [(name, _smallest(shapes), dtype) for name, (_, shapes) in test_matmul_gpu.VARIANTS.items()
             for dtype in ("float32", "bfloat16")]


@pytest.mark.parametrize("name,shape,dtype", GPU_SMOKE, ids=[f"{n}-{d}" for n, _, d in GPU_SMOKE])
def test_gpu_cases_pass_on_the_emulator(name, shape, dtype, monkeypatch):
    monkeypatch.setattr(test_matmul_gpu, "CHECK", check_emulated)
    test_matmul_gpu.test_matmul_kernel_matches_reference(name, shape, dtype)


# Large bf16 GEMMs with the occupancy hint 2 and TILES["mm_bias_in_acc"]: the blocks fit twice in an sm_90 SM's
# shared memory (228 KB, 1 KB reserved per block); a bias added after the K loop would cost 8.4 KB more (116072
# bytes, one block per SM by shared memory). Compiled specialized like cuTile's JIT (TMA paths), the shared memory
# read from the cubin.
OCCUPANCY_CASES = {
    "mm": (_m("a @ b", "a, b"), "[torch.randn(2048, 2048).bfloat16(), torch.randn(2048, 2048).bfloat16()]"),
    "linear_bias_gelu": (_m("F.gelu(self.fc(x))", "x", "self.fc = nn.Linear(2048, 2048).bfloat16()"),
                         "[torch.randn(2048, 2048).bfloat16()]"),
    "linear_bn_relu": (_m("torch.relu(self.bn(self.fc(x)))", "x",
                          "self.fc = nn.Linear(2048, 2048).bfloat16(); self.bn = nn.BatchNorm1d(2048).bfloat16()"),
                       "[torch.randn(2048, 2048).bfloat16()]"),
    "addmm_row_bias_relu": (_m("torch.relu(torch.addmm(c, a, b))", "c, a, b"),
                            "[torch.randn(2048).bfloat16(), torch.randn(2048, 2048).bfloat16(), "
                            "torch.randn(2048, 2048).bfloat16()]"),
}


@pytest.mark.parametrize("name", sorted(OCCUPANCY_CASES))
def test_large_gemm_blocks_fit_their_occupancy(name, monkeypatch):
    import re

    from tilestudio.core.kernels import gemm_common

    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import (blocks_fitting_shared_memory, compile_cubin, shared_memory_bytes,
                                             trace_launches)

    monkeypatch.setitem(gemm_common.TILES, "mm_bias_in_acc", True)
    model, inputs = OCCUPANCY_CASES[name]
    spec = snippet_spec(model, inputs, FAMILY)
    source = generate_kernel(spec)
    occupancy = int(re.search(r"@ct.kernel\(occupancy=(\d+)\)", source.code).group(1))
    assert occupancy == 2
    assert ("acc = ct.zeros" if name == "mm" else "acc = side0") in source.code
    (record,) = trace_launches(source, spec)
    smem = shared_memory_bytes(compile_cubin(record, "sm_90", specialize=True))
    assert smem > 64 * 1024  # a pipelined 128x128x64 bf16 GEMM stages its operand tiles in shared memory
    assert blocks_fitting_shared_memory(smem) >= occupancy, f"{smem} bytes of shared memory per block"


def test_bias_starts_the_accumulator_by_default():
    spec = snippet_spec(*OCCUPANCY_CASES["linear_bias_gelu"], FAMILY)
    from tilestudio.core.kernels import generate_kernel

    code = generate_kernel(spec).code
    assert "acc = side0" in code and "acc = acc + side0" not in code


def test_bias_after_the_loop_when_switched_off(monkeypatch):
    from tilestudio.core.kernels import gemm_common

    monkeypatch.setitem(gemm_common.TILES, "mm_bias_in_acc", False)
    spec = snippet_spec(*OCCUPANCY_CASES["linear_bias_gelu"], FAMILY)
    from tilestudio.core.kernels import generate_kernel

    code = generate_kernel(spec).code
    assert "acc = ct.zeros((BM, BN), dtype=ct.float32)" in code and "acc = acc + side0" in code


def test_a_full_matrix_addend_stays_an_epilogue_add(monkeypatch):
    from tilestudio.core.kernels import gemm_common

    monkeypatch.setitem(gemm_common.TILES, "mm_bias_in_acc", True)
    spec = snippet_spec(_m("torch.addmm(c, a, b)", "c, a, b"),
                        "[torch.randn(33, 70), torch.randn(33, 50), torch.randn(50, 70)]", FAMILY)
    from tilestudio.core.kernels import generate_kernel

    code = generate_kernel(spec).code
    assert "acc = ct.zeros((BM, BN), dtype=ct.float32)" in code and "acc = acc + side0" in code


def test_persistent_gemm_walks_every_tile(monkeypatch):
    """TILES["mm_persistent"] = 1: a grid of one block per SM (132) loops over the 256 output tiles of a 2048^2
    linear+bias+gelu; compiles, and the emulator (which runs the 132 blocks) gets the reference's values."""
    from tilestudio.core.kernels import gemm_common

    monkeypatch.setitem(gemm_common.TILES, "mm_persistent", 1)
    spec = snippet_spec(*OCCUPANCY_CASES["linear_bias_gelu"], FAMILY)
    source = compile_spec_dedup(spec, ("sm_90",))
    assert "    for pid in range(ct.bid(0), 256, ct.num_blocks(0)):" in source.code
    assert "(132, 1, 1)" in source.code
    result = check_emulated(spec, source)
    assert result.ok, result.message


NLOOP_CASES = {  # one K step (K <= 128), several N tiles per block; epilogues that read the tile coordinates
    "bmm": (_m("torch.bmm(a, b)", "a, b"), "[torch.randn(3, 200, 128).half(), torch.randn(3, 128, 512).half()]"),
    "bmm_bias_relu": (_m("torch.relu(torch.bmm(a, b) + c)", "a, b, c"),
                      "[torch.randn(2, 130, 64).bfloat16(), torch.randn(2, 64, 256).bfloat16(), "
                      "torch.randn(256).bfloat16()]"),
    "linear_gelu": (_m("F.gelu(self.fc(x))", "x", "self.fc = nn.Linear(96, 512).half()"),
                    "[torch.randn(100, 96).half()]"),
    "triu": (_m("torch.triu(a @ b)", "a, b"), "[torch.randn(4, 256, 32).half(), torch.randn(4, 32, 512).half()]"),
}


@pytest.mark.parametrize("name", sorted(NLOOP_CASES))
def test_one_step_gemm_walks_n_tiles(name, monkeypatch):
    """TILES["mm_one_step_n_tiles"]: a block of a one-K-step GEMM loads its A tile once and walks several N tiles
    (bias, activation, triangular masks per tile); compiles, and matches the reference on the emulator. The grid
    guard (two blocks per SM) is lifted so these small problems take the loop."""
    from tilestudio.core.kernels import gemm_common, matmul

    monkeypatch.setitem(gemm_common.TILES, "mm_one_step_n_tiles", 4)
    monkeypatch.setattr(matmul, "NUM_SMS", 1)
    spec = snippet_spec(*NLOOP_CASES[name], FAMILY)
    source = compile_spec_dedup(spec, ("sm_90",))
    assert "    for jn in range(" in source.code and "N tiles per block" in source.notes[0]
    result = check_emulated(spec, source)
    assert result.ok, result.message


def test_n_tile_loop_keeps_two_blocks_per_sm(monkeypatch):
    """A grid that would drop under two blocks per SM keeps one N tile per block."""
    from tilestudio.core.kernels import gemm_common, generate_kernel

    monkeypatch.setitem(gemm_common.TILES, "mm_one_step_n_tiles", 4)
    code = generate_kernel(snippet_spec(*NLOOP_CASES["bmm"], FAMILY)).code
    assert "for jn in range(" not in code and "for kt in range(" in code


def test_worker_warps_let_a_128x256_tile_compile_without_spills(monkeypatch):
    """TILES["mm_worker_warps"]: @ct.kernel(num_worker_warps=8) puts two warp groups on the accumulator, so the
    128x256x64 bf16 tile of a linear+bias+gelu, which spills to local memory at the compiler's warp count (a
    non-zero stack frame), compiles for sm_90 with a zero frame. The values are the emulator's as before."""
    from tilestudio.core.kernels import gemm_common, generate_kernel
    from tilestudio.core.kernels.aot import compile_cubin, kernel_resources, trace_launches

    monkeypatch.setitem(gemm_common.TILES, "mm_low", (128, 256, 64))
    monkeypatch.setitem(gemm_common.TILES, "mm_occupancy", 1)
    spec = snippet_spec(*OCCUPANCY_CASES["linear_bias_gelu"], FAMILY)
    frames = {}
    for warps in (None, 8):
        monkeypatch.setitem(gemm_common.TILES, "mm_worker_warps", warps)
        source = generate_kernel(spec)
        assert ("num_worker_warps=8" in source.code) == (warps == 8)
        (record,) = trace_launches(source, spec)
        frames[warps] = kernel_resources(compile_cubin(record, "sm_90", specialize=True))["frame"]
    assert frames[None] > 0 and frames[8] == 0, frames
    assert "8 worker warps" in source.notes[0]
    result = check_emulated(spec, source)
    assert result.ok, result.message


def test_large_bf16_gemms_default_to_128x256_tiles_on_8_worker_warps():
    """The measured default (session 9): an 8192^2-output bf16 linear+gelu runs 128x256x64 tiles on 8 worker warps
    at one block per SM; a 4096^2 one keeps 128x128x64 at occupancy 2 and the compiler's warp count."""
    from tilestudio.core.kernels import generate_kernel

    big = generate_kernel(snippet_spec(_m("F.gelu(self.fc(x))", "x", "self.fc = nn.Linear(1024, 8192).bfloat16()"),
                                       "[torch.randn(4096, 1024).bfloat16()]", FAMILY))
    assert "@ct.kernel(occupancy=1, num_worker_warps=8)" in big.code, big.code[:300]
    assert "BM=128 BN=256 BK=64" in big.notes[0] and "8 worker warps" in big.notes[0], big.notes
    mid = generate_kernel(snippet_spec(_m("a @ b", "a, b"),
                                       "[torch.randn(4096, 4096).half(), torch.randn(4096, 4096).half()]", FAMILY))
    assert "@ct.kernel(occupancy=2)" in mid.code and "BM=128 BN=128 BK=64" in mid.notes[0], mid.notes


def test_worker_warps_stay_off_for_small_tiles(monkeypatch):
    """TILES["mm_worker_warps"] applies to tiles of at least mm_worker_warps_min_elems accumulator elements: a
    128x256 table entry shrunk to fit a small problem, and float32 tiles, keep the compiler's warp count."""
    from tilestudio.core.kernels import gemm_common, generate_kernel

    monkeypatch.setitem(gemm_common.TILES, "mm_low", (128, 256, 64))
    monkeypatch.setitem(gemm_common.TILES, "mm_worker_warps", 8)
    small = generate_kernel(snippet_spec(_m("a @ b", "a, b"),
                                         "[torch.randn(256, 512).half(), torch.randn(512, 256).half()]", FAMILY))
    assert "num_worker_warps" not in small.code and "worker warps" not in small.notes[0], small.notes
    f32 = generate_kernel(snippet_spec(*CASES["matmul_2d_unaligned"][:2], FAMILY))
    assert "num_worker_warps" not in f32.code


@pytest.mark.parametrize("split", [True, False])
def test_float32_operands_multiply_in_split_tf32(split, monkeypatch):
    """Float32 GEMMs run on tensor cores as split TF32 (three tfloat32 mmas on each operand's hi/lo parts;
    TILES["f32_split_tf32"]) with float32-level error against float64, as the plain float32 mma (FFMA) they
    replace (the dropped lo @ lo term is below 2^-22 relative; one TF32 mma errs by ~1e-3 here); bf16 operands keep
    one mma."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.gemm_common import TILES

    monkeypatch.setitem(TILES, "f32_split_tf32", split)
    model = _m("self.l(x) + r", "x, r", "self.l = nn.Linear(384, 96)")
    spec = snippet_spec(model, "[torch.randn(38, 384), torch.randn(38, 96)]", FAMILY)
    source = generate_kernel(spec)
    assert source.code.count("ct.mma(") == (3 if split else 1)
    assert ("astype(ct.tfloat32)" in source.code) == split
    result = check_emulated(spec, source)
    assert result.ok and result.max_abs_err < 1e-4, (result.max_abs_err, result.message)  # TF32 alone: ~1e-3
    low = snippet_spec(_m("self.l(x)", "x", "self.l = nn.Linear(384, 96).to(torch.bfloat16)"),
                       "[torch.randn(38, 384, dtype=torch.bfloat16)]", FAMILY)
    code = generate_kernel(low).code
    assert code.count("ct.mma(") == 1 and "tfloat32" not in code


def test_split_tf32_promoted_k_steps_variant(monkeypatch):
    """TILES["f32_split_promote"] (a variant, off by default): each K step's three TF32 mmas go to a fresh
    accumulator added to the running one; compiles for sm_90 and keeps float32-level values on the emulator."""
    from tilestudio.core.kernels.gemm_common import TILES

    monkeypatch.setitem(TILES, "f32_split_promote", True)
    spec = snippet_spec(_m("self.l(x) + r", "x, r", "self.l = nn.Linear(384, 96)"),
                        "[torch.randn(38, 384), torch.randn(38, 96)]", FAMILY)
    source = compile_spec_dedup(spec, ("sm_90",))
    assert "part = ct.mma(a_hi, b_lo, ct.zeros((BM, BN), dtype=ct.float32))" in source.code
    assert "acc = acc + part" in source.code
    result = check_emulated(spec, source)
    assert result.ok and result.max_abs_err < 1e-4, (result.max_abs_err, result.message)
