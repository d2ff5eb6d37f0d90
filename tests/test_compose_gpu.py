"""On a GPU: every corpus model's composed file runs its own `__main__` block and prints PASS.

The files are composed, then run, as many at a time as there are cores, once per session (a module fixture); each model is then its own test,
so a failure names the model and carries the block's last line.
"""

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from corpus import corpus_files

# the module fixture composes and runs every corpus model before the first test, and pytest-timeout counts it into
# that test: the 300 s default cut it off on the H200 in sessions 8 and 9
pytestmark = [pytest.mark.gpu, pytest.mark.xdist_group("composed_mains"), pytest.mark.timeout(900)]

MODELS = corpus_files()


@pytest.fixture(scope="module")
def main_results(tmp_path_factory):
    from tilestudio.core.bench import compose_stage, run_main

    out = str(tmp_path_factory.mktemp("composed"))
    cpus = os.cpu_count() or 2
    # composing is CPU work (a traced child per model): every core; then the mains, which mostly wait on
    # tileiras and the GPU, one per core but one (session 8 on the H200's 16 cores: 115 mains in 110 s at 15)
    with ThreadPoolExecutor(cpus) as pool:
        rows = list(pool.map(lambda path: compose_stage(str(path), out, dry=False), MODELS))
    with ThreadPoolExecutor(max(1, cpus - 1)) as pool:
        list(pool.map(lambda row: run_main(row, timeout=600), [r for r in rows if r.get("composed")]))
    return {row["model"]: row for row in rows}


@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.stem)
def test_composed_main_prints_pass(model, main_results):
    row = main_results[model.name]
    assert row.get("composed"), row["error"]
    assert row.get("main") == "PASS", f"{row.get('main')}: {row.get('main_error', '')}"
