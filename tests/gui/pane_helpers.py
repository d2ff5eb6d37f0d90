"""Helpers for the graph, validation and settings tests: small hand-made decompositions and a fake validation runner
(a plain module with a unique name, imported directly: conftest.py names clash across folders)."""

from __future__ import annotations

import os
import sys
import textwrap

from tilestudio.core.specs import Decomposition, KernelSpec, TensorSpec


def kernel(kid: str, deps: list[str] = (), ops: list[str] = ("linear",), shape=(2, 8), family: str = "matmul",
           unsupported: bool = False) -> KernelSpec:
    return KernelSpec(id=kid, family=family, description=f"{family} kernel {kid}", operations=list(ops), ops=[],
                      inputs=[], outputs=[TensorSpec(name="out", shape=list(shape), dtype="float32")],
                      dependencies=list(deps), reference=f"def reference_{kid}():\n    pass\n",
                      unsupported=unsupported)


def decomposition(kernels: list[KernelSpec], sha: str = "0" * 64) -> Decomposition:
    order = [k.id for k in kernels]
    return Decomposition(model_file="tiny_model.py", model_class="Model", model_sha256=sha, inputs=[],
                         parameters=[], outputs=[], kernels=kernels, glue=[], execution_order=order,
                         parallel_groups=[[kid] for kid in order], composition_notes=[], end_to_end_reference="",
                         completeness=[], gaps=[])


def tiny_decomposition() -> Decomposition:
    """norm → (q, k) → scores → out, plus a kernel without a generator."""
    return decomposition([kernel("norm", ops=["layer_norm"], family="norm"), kernel("q", ["norm"]),
                          kernel("k", ["norm"]), kernel("scores", ["q", "k"], ops=["matmul", "div"]),
                          kernel("out", ["scores"], ops=["linear", "add"]),
                          kernel("odd_op", ["out"], ops=["mystery"], family="unsupported", unsupported=True)])


def chain_decomposition(n: int, seed: int = 0) -> Decomposition:
    """A network-like DAG of n kernels (each reads 1-3 of the 8 before it)."""
    import random

    r = random.Random(seed)
    kernels = []
    for i in range(n):
        deps = sorted({f"k{r.randrange(max(0, i - 8), i)}" for _ in range(r.choice([1, 1, 2, 3]))}) if i else []
        kernels.append(kernel(f"k{i}", deps, ops=["linear", "gelu"][: 1 + i % 2]))
    return decomposition(kernels)


FAKE_PRELUDE = """\
import json, os, signal, subprocess, sys, time
def emit(**e):
    print(json.dumps(e), flush=True)
"""

SCENARIOS = {
    "pass": """
        emit(event="start", command=["fake"])
        emit(event="environment", cuda_available=True, gpu="Fake H200", compute_capability="sm_90", torch="2.13")
        for i, kid in enumerate(["norm", "q", "k", "scores", "out"]):
            emit(event="compile", kernel=kid, seconds=0.5 + i / 10)
            emit(event="kernel_check", kernel=kid, ok=True, max_abs_err=1e-6, max_rel_err=2e-5, message="")
        emit(event="end_to_end", ok=True, max_diff=3e-6, outputs=[{"index": 0, "ok": True, "max_diff": 3e-6}])
        emit(event="timings", eager_ms=2.0, cutile_ms=1.0, compile_ms=1.5, speedup_vs_eager=2.0,
             speedup_vs_compile=1.5, per_kernel_ms={"norm": 0.1, "q": 0.2, "k": 0.2, "scores": 0.3, "out": 0.2})
        emit(event="finished", passed=True)
        sys.exit(0)
    """,
    "fail": """
        emit(event="environment", cuda_available=True, gpu="Fake H200", compute_capability="sm_90")
        emit(event="compile", kernel="norm", seconds=0.4)
        emit(event="kernel_check", kernel="norm", ok=True, max_abs_err=0.0, max_rel_err=0.0, message="")
        emit(event="compile", kernel="q", seconds=0.4)
        emit(event="kernel_check", kernel="q", ok=False, max_abs_err=3.5, max_rel_err=1.0,
             message="out: max abs err 3.5 at [0, 3]")
        emit(event="end_to_end", ok=False, max_diff=3.5, outputs=[])
        emit(event="finished", passed=False)
        sys.exit(1)
    """,
    "crash": """
        emit(event="compile", kernel="norm", seconds=0.1)
        sys.stderr.write("Fatal Python error: Segmentation fault\\n"); sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    """,
    "hang": """
        # like `tilestudio validate`: a GPU child in its own session, plus a grandchild in ours
        gpu = subprocess.Popen(["sleep", "300"], start_new_session=True)
        helper = subprocess.Popen(["sleep", "300"])
        emit(event="start", command=["fake"], pids=[os.getpid(), gpu.pid, helper.pid])
        emit(event="compile", kernel="norm", seconds=0.1)
        time.sleep(300)
    """,
    "no_gpu": """
        emit(event="start", command=["fake"])
        emit(event="environment", torch="2.13.0+cpu", cuda_available=False, cuda_tile="1.7.0")
        emit(event="error", kind="no_gpu", message="no CUDA GPU: torch.cuda.is_available() is False (torch 2.13.0+cpu)")
        launches = [{"kernel": f"{kid}_kernel", "grid": [1, 1, 1], "args": [], "ok": True, "compile_s": 0.25,
                     "message": ""} for kid in ["norm", "q", "k", "scores", "out"]]
        emit(event="dry_run", ok=True, arch="sm_90", launches=launches, violations=[], error=None,
             output_mismatches=[])
        emit(event="report", status="no_gpu", composed_file=sys.argv[1], environment={}, kernels=[],
             end_to_end=None, timings={}, errors=[{"event": "error", "kind": "no_gpu", "message": "no CUDA GPU"}],
             dry_run={"ok": True, "arch": "sm_90", "launches": launches, "violations": [], "error": None,
                      "output_mismatches": []}, wall_s=1.5)
        sys.exit(2)
    """,
}


def fake_runner(tmp_path, scenario: str):
    """A command factory for ValidationPane: runs a fake script emitting the scenario's canned events."""
    script = tmp_path / f"fake_validate_{scenario}.py"
    script.write_text(FAKE_PRELUDE + textwrap.dedent(SCENARIOS[scenario]))
    return lambda composed: [sys.executable, str(script), composed]


def alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().decode().rsplit(")", 1)[-1].split()[0]
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return sys.platform != "linux"
    return state not in ("Z", "X")
