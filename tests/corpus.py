"""The test corpus: locations of model files (tests/models) and bad-input files (tests/bad_models)."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "models"
BAD_MODELS = ROOT / "tests" / "bad_models"


def corpus_files(prefix: str = "") -> list[pathlib.Path]:
    return sorted(p for p in MODELS.glob(f"{prefix}*.py"))
