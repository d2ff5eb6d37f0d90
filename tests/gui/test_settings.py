"""Settings: typed values persisted in QSettings, the dialog's checks, and Edit ▸ Settings in the main window."""

import sys

import pytest
from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from tilestudio.gui.settings_dialog import AppSettings, SettingsDialog, edit_settings


def ini(tmp_path, name="settings.ini") -> QSettings:
    return QSettings(str(tmp_path / name), QSettings.Format.IniFormat)


def test_defaults_when_nothing_is_stored(tmp_path):
    s = AppSettings.load(ini(tmp_path))
    assert s == AppSettings()
    assert (s.arch, s.atol, s.rtol, s.theme) == ("sm_90", 1e-2, 1e-2, "dark")
    assert s.interpreter() == sys.executable


def test_values_survive_a_restart(tmp_path):
    values = AppSettings(arch="sm_100", atol=1e-4, rtol=5e-3, analysis_timeout_s=30, validation_timeout_s=900,
                         python=sys.executable, theme="light")
    values.save(ini(tmp_path))
    again = AppSettings.load(ini(tmp_path))  # a fresh QSettings reads the file back
    assert again == values
    assert isinstance(again.atol, float) and isinstance(again.validation_timeout_s, int)


def test_bad_stored_values_fall_back_to_defaults(tmp_path):
    s = ini(tmp_path)
    s.setValue("validation/atol", "lots")
    s.setValue("build/arch", "gfx90a")
    s.setValue("validation/python", "/no/such/python")
    s.setValue("view/theme", "purple")
    s.setValue("validation/rtol", "0.5")
    loaded = AppSettings.load(s)
    assert (loaded.atol, loaded.arch, loaded.python, loaded.theme) == (1e-2, "sm_90", "", "dark")
    assert loaded.rtol == 0.5


def test_dialog_round_trip_and_checks(qtbot):
    values = AppSettings(arch="sm_100", atol=1e-3, rtol=1e-4, analysis_timeout_s=45, validation_timeout_s=120,
                         theme="light")
    dialog = SettingsDialog(values)
    qtbot.addWidget(dialog)
    assert dialog.values() == values
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert ok.isEnabled() and dialog.error.isHidden()

    dialog.atol.setText("not a number")
    assert not ok.isEnabled() and "atol" in dialog.error.text()
    dialog.atol.setText("2e-3")
    dialog.arch.setCurrentText("hopper")
    assert not ok.isEnabled() and "sm_90" in dialog.error.text()
    dialog.arch.setCurrentText("sm_120")
    dialog.python.setText("/no/such/python")
    assert not ok.isEnabled() and "not an executable" in dialog.error.text()
    dialog.python.setText(sys.executable)
    assert ok.isEnabled()
    assert dialog.values() == AppSettings(arch="sm_120", atol=2e-3, rtol=1e-4, analysis_timeout_s=45,
                                          validation_timeout_s=120, python=sys.executable, theme="light")
    dialog.buttons.button(QDialogButtonBox.StandardButton.RestoreDefaults).click()
    assert dialog.values() == AppSettings()


def _answer_dialog(change=None, accept=True):
    """Act on the settings dialog once it is shown (it runs its own event loop)."""
    def act():
        dialog = next((w for w in QApplication.topLevelWidgets() if isinstance(w, SettingsDialog) and w.isVisible()),
                      None)
        if dialog is None:
            QTimer.singleShot(20, act)
            return
        if change:
            change(dialog)
        dialog.accept() if accept else dialog.reject()

    QTimer.singleShot(0, act)


def test_edit_settings_saves_only_on_ok(qtbot, tmp_path):
    s = ini(tmp_path)
    _answer_dialog(lambda d: d.rtol.setText("0.25"), accept=False)
    assert edit_settings(None, s) is None
    assert s.value("validation/rtol") is None
    _answer_dialog(lambda d: d.rtol.setText("0.25"))
    values = edit_settings(None, s)
    assert values is not None and values.rtol == 0.25
    assert AppSettings.load(ini(tmp_path)).rtol == 0.25


def test_edit_settings_menu_applies_theme_and_analysis_timeout(qtbot, window, settings):
    edit_menu = next(a.menu() for a in window.menuBar().actions() if a.text().replace("&", "") == "Edit")
    assert window.settings_action in edit_menu.actions()
    assert window.settings_action.shortcut().toString() == "Ctrl+,"

    def change(dialog):
        dialog.theme.setCurrentIndex(dialog.theme.findData("light"))
        dialog.analysis_timeout.setValue(33)
        dialog.validation_timeout.setValue(77)

    _answer_dialog(change)
    window.settings_action.trigger()
    assert window.theme.name == "light"
    assert window.session.timeout_s == 33
    stored = AppSettings.load(settings)
    assert (stored.theme, stored.analysis_timeout_s, stored.validation_timeout_s) == ("light", 33, 77)
    # the validation pane reads its settings when a run starts
    assert window.validation.settings_provider().validation_timeout_s == 77
    qtbot.waitUntil(lambda: window.graph_view.theme.name == "light", timeout=2000)
    window.set_theme("dark")


@pytest.mark.parametrize("key", sorted(AppSettings.KEYS))
def test_every_field_has_a_distinct_key(key):
    assert list(AppSettings.KEYS.values()).count(AppSettings.KEYS[key]) == 1
