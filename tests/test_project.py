"""Project files (core/project.py): round trip, moved projects, newer formats, bad files, recovery files."""

import json
import os

import pytest

from tilestudio.core.errors import UserError
from tilestudio.core.project import (PROJECT_FORMAT_VERSION, ProjectFile, ProjectSettings, discard_recovery,
                                     load_project, model_changed, read_recovery, recovery_path, resolve_model_path,
                                     save_project, sha256_of, write_recovery)


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "models" / "tiny_model.py"
    path.parent.mkdir()
    path.write_text("import torch\n\nclass Model(torch.nn.Module):\n    pass\n")
    return path


def test_round_trip_keeps_edits_settings_and_results(tmp_path, model):
    edits = {"fc_linear": "def launch_fc_linear(x):\n    return x  # ünïcode kept\n", "softmax": ""}
    project = ProjectFile(model_path=str(model), model_sha256=sha256_of(str(model)), edits=edits,
                          settings=ProjectSettings(arch="sm_100", model_name="Model", atol=1e-3),
                          last_results={"purity": {"errors": 1}, "export": {"path": "/x.py", "text": "a\n"}})
    path = tmp_path / "work" / "demo.tstudio"
    written = save_project(str(path), project)
    assert written.format_version == PROJECT_FORMAT_VERSION and written.saved_at and written.app_version
    assert written.model_relpath == os.path.join("..", "models", "tiny_model.py")
    loaded = load_project(str(path))
    assert loaded.edits == edits
    assert loaded.settings.arch == "sm_100" and loaded.settings.atol == 1e-3 and loaded.settings.model_name == "Model"
    assert loaded.last_results == project.last_results
    assert loaded.model_sha256 == sha256_of(str(model)) and not model_changed(loaded, str(model))
    assert not any(name.startswith(".tstudio-") for name in os.listdir(path.parent))  # no temporary left


def test_a_project_moved_with_its_model_still_finds_it(tmp_path, model):
    save_project(str(tmp_path / "demo.tstudio"), ProjectFile(model_path=str(model)))
    target = tmp_path / "moved"  # the project and its model copied together somewhere else
    (target / "models").mkdir(parents=True)
    (target / "models" / "tiny_model.py").write_text(model.read_text())
    (target / "demo.tstudio").write_text((tmp_path / "demo.tstudio").read_text())
    project = load_project(str(target / "demo.tstudio"))
    assert resolve_model_path(project, str(target / "demo.tstudio")) == str(target / "models" / "tiny_model.py")
    os.unlink(target / "models" / "tiny_model.py")  # not next to it any more: the saved absolute path
    assert resolve_model_path(project, str(target / "demo.tstudio")) == str(model)


def test_a_changed_model_is_detected_and_the_edits_stay(tmp_path, model):
    path = tmp_path / "demo.tstudio"
    save_project(str(path), ProjectFile(model_path=str(model), model_sha256=sha256_of(str(model)),
                                        edits={"k": "code"}))
    model.write_text(model.read_text() + "# changed\n")
    project = load_project(str(path))
    assert model_changed(project, str(model)) and project.edits == {"k": "code"}


def test_a_newer_format_is_read_as_far_as_it_is_understood(tmp_path, model):
    path = tmp_path / "future.tstudio"
    path.write_text(json.dumps({"format_version": PROJECT_FORMAT_VERSION + 5, "model_path": str(model),
                                "edits": {"k": "x = 1\n"}, "settings": {"arch": "sm_120", "new_knob": 3},
                                "brand_new_section": [1, 2]}))
    project = load_project(str(path))
    assert project.edits == {"k": "x = 1\n"} and project.settings.arch == "sm_120"
    assert project.settings.model_extra == {"new_knob": 3}


@pytest.mark.parametrize("text, words", [("{not json", "bad JSON"), ("[1, 2]", "no model_path"),
                                         ('{"model_path": "m.py", "edits": {"k": 5}}', "edits.k")])
def test_bad_project_files_are_one_line_errors(tmp_path, text, words):
    path = tmp_path / "bad.tstudio"
    path.write_text(text)
    with pytest.raises(UserError) as info:
        load_project(str(path))
    assert words in info.value.info.message and info.value.info.file == str(path)
    with pytest.raises(UserError, match="cannot read"):
        load_project(str(tmp_path / "missing.tstudio"))


def test_recovery_files_are_per_model_and_can_be_discarded(tmp_path, model):
    folder = str(tmp_path / "recovery")
    other = model.parent / "other_model.py"
    other.write_text("x = 1\n")
    assert read_recovery(folder, str(model)) is None
    path = write_recovery(folder, ProjectFile(model_path=str(model), edits={"k": "mine"}, project_path="/p.tstudio"))
    assert path == recovery_path(folder, str(model)) and recovery_path(folder, str(other)) != path
    recovered = read_recovery(folder, str(model))
    assert recovered.edits == {"k": "mine"} and recovered.project_path == "/p.tstudio" and recovered.saved_at
    assert read_recovery(folder, str(other)) is None
    discard_recovery(folder, str(model))
    assert read_recovery(folder, str(model)) is None
    discard_recovery(folder, str(model))  # twice is fine
