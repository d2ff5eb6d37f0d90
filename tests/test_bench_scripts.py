"""The GPU benchmark scripts' CPU modes, which prepare a device call: `variants_gemm.py --aot` compiles the chosen
variants for sm_90 and reports registers / shared memory / stack frame; `sass_widths.py` without nvdisasm reports
the same bracket per launch. Guards the scripts against drifting from the generators they drive."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*args: str) -> str:
    env = dict(os.environ, NVDISASM="", PATH=os.environ.get("PATH", ""))
    r = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_variants_gemm_aot_reports_resources_of_each_variant():
    out = _run("bench/variants_gemm.py", "--aot", "--only", "bmm", "--match", "4 N tiles per block, occ=1")
    rows = [line for line in out.splitlines() if line.startswith("bmm ")]
    assert [r.split("  ")[0].strip() for r in rows] == ["bmm 64x1024x128x1024 bf16"] * 2
    assert "default" in rows[0] and "4 N tiles per block, occ=1" in rows[1]
    resources = [tuple(map(int, re.search(r"R(\d+) S(\d+) F(\d+)", row).groups())) for row in rows]
    assert all(0 < regs <= 255 and smem > 0 for regs, smem, _ in resources), rows
    # the default walks its 4 N tiles spill-free at 2 blocks per SM; at occupancy 1 the compiler spills (a
    # non-zero frame: the variant measured slower on the H200 in session 7, 0.077 vs 0.055 ms)
    assert resources[0][2] == 0 and resources[1][2] > 0, rows


def test_sass_widths_without_nvdisasm_prints_the_resource_bracket():
    out = _run("bench/sass_widths.py", "--only", "x+y bf16")
    (row,) = [line for line in out.splitlines() if line.startswith("x+y bf16")]
    assert re.search(r"\| \[R\d+ S\d+ F0\]$", row), row


def test_launch_split_needs_a_gpu_or_a_matching_case():
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    r = subprocess.run([sys.executable, "bench/launch_split.py", "--only", "cumsum 64x1048576"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 2 and "needs a CUDA GPU" in r.stderr, r.stderr[-2000:]


def test_variants_memory_scan_cases_take_the_forms_they_name():
    """bench/variants_memory.py's look-back scope cases (session 14): the default variant takes the one-pass
    look-back and the "before session 14" variant the chunk loop or segments, the split-scan variants (session 15)
    the split scan and the others a plain ct.cumsum, as their names say (in a child
    process: bench/kernels.py's module name would clash with the tests.kernels package here)."""
    code = """
import sys
sys.path.insert(0, "bench")
import variants_memory
from kernels import spec_for
from tilestudio.core.kernels import generate_kernel
from tilestudio.core.kernels.indexing import MEMORY_TUNING
assert len(variants_memory.SCOPE_CASES) == 3
for case in variants_memory.SCOPE_CASES:
    spec = spec_for(case[2], case[3])
    for name, knobs in variants_memory.VARIANTS[case[1]]:
        saved = dict(MEMORY_TUNING)
        MEMORY_TUNING.update(knobs)
        note = generate_kernel(spec).notes[0]
        MEMORY_TUNING.clear(); MEMORY_TUNING.update(saved)
        assert ("decoupled look-back" in note) == ("look-back" in name), (case[1], name, note)
        assert ("blocks of 4" in note) == ("split scan" in name), (case[1], name, note)
        assert ("blocks of 4" in note) != ("plain ct.cumsum" in name), (case[1], name, note)
print("ok")
"""
    assert _run("-c", code).strip().endswith("ok")


def test_row_stats_cases_fuse_with_r7_and_split_without():
    """bench/row_stats.py compares each hand-written row statistic fused by R7 with the same model decomposed
    without it (fusion.ROW_STAT_MAX = 0): fewer kernels with R7, every one generated, and the switch restored
    (in a child process, as above)."""
    code = """
import sys
sys.path.insert(0, "bench")
import row_stats
from tilestudio.core import fusion
from tilestudio.core.kernels import generate_kernel
for label, body, inputs in row_stats.CASES:
    fused, plain = row_stats.decompose(body, inputs, True), row_stats.decompose(body, inputs, False)
    assert len(fused.kernels) < len(plain.kernels), label
    assert any("R7" in k.fusion_rules for k in fused.kernels), label
    assert not any("R7" in k.fusion_rules for k in plain.kernels), label
    assert not any(generate_kernel(k).skeleton for k in fused.kernels + plain.kernels), label
assert fusion.ROW_STAT_MAX == 8192
print("ok")
"""
    assert _run("-c", code).strip().endswith("ok")
