"""On a GPU: every corpus model's composed file runs its own `__main__` block and prints PASS.

The files are composed and run 8 at a time once per session (a module fixture); each model is then its own test,
so a failure names the model and carries the block's last line.
"""

from concurrent.futures import ThreadPoolExecutor

import pytest

from corpus import corpus_files

pytestmark = [pytest.mark.gpu, pytest.mark.xdist_group("composed_mains")]

MODELS = corpus_files()


@pytest.fixture(scope="module")
def main_results(tmp_path_factory):
    from tilestudio.core.bench import compose_stage, run_main

    out = str(tmp_path_factory.mktemp("composed"))

    def one(path):
        row = compose_stage(str(path), out, dry=False)
        if row.get("composed"):
            run_main(row, timeout=600)
        return row

    with ThreadPoolExecutor(8) as pool:
        return {row["model"]: row for row in pool.map(one, MODELS)}


@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.stem)
def test_composed_main_prints_pass(model, main_results):
    row = main_results[model.name]
    assert row.get("composed"), row["error"]
    assert row.get("main") == "PASS", f"{row.get('main')}: {row.get('main_error', '')}"
