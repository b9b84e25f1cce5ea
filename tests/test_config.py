"""Settings: defaults, file, environment, then arguments."""

from __future__ import annotations

import pytest

from hyperfolio.config import PROCESS_VARIABLES, Settings, setting_variables, unknown_variables


def test_layering(tmp_path, monkeypatch):
    path = tmp_path / "settings.toml"
    path.write_text('top_k = 7\nembedder = "model2vec"\n[parse]\nchunk_tokens = 300\n')
    monkeypatch.setenv("HYPERFOLIO_TOP_K", "12")
    monkeypatch.setenv("HYPERFOLIO_PARSE_OCR", "false")
    settings = Settings.load(path, default_mode="bm25")
    assert settings.top_k == 12  # environment beats the file
    assert settings.embedder == "model2vec"
    assert settings.parse.chunk_tokens == 300
    assert settings.parse.ocr is False
    assert settings.default_mode == "bm25"
    assert Settings.load(path, top_k=3).top_k == 3  # arguments beat everything


def test_unknown_setting_is_rejected(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_text("nonsense = 1\n")
    with pytest.raises(ValueError, match="nonsense"):
        Settings.load(path)


def test_a_misspelt_section_gets_a_did_you_mean(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_text('[modles]\nmodel = "qwen"\n')
    with pytest.raises(ValueError, match=r"unknown setting 'modles' \(did you mean \[models\]\?\)"):
        Settings.load(path, user=False)


def test_the_known_keys_listed_include_the_sections(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_text("zzzzzz = 1\n")
    with pytest.raises(ValueError) as raised:
        Settings.load(path, user=False)
    message = str(raised.value)
    assert "'top_k'" in message and "[models]" in message and "[parse]" in message


def test_misspelt_variables_are_named_with_the_closest_known_one():
    lines = unknown_variables(
        {
            "HYPERFOLIO_TOPK": "20",
            "HYPERFOLIO_MODLES_MODEL": "qwen",
            "HYPERFOLIO_TOP_K": "5",  # a setting
            "HYPERFOLIO_COLLECTION": "reports",  # read by the CLI, not a setting
            "HYPERFOLIO_ZZZZZZZZZZ": "1",
            "PATH": "/bin",
        }
    )
    assert lines == [
        "HYPERFOLIO_MODLES_MODEL is not a hyperfolio setting or variable and is ignored "
        "(did you mean HYPERFOLIO_MODELS_MODEL?)",
        "HYPERFOLIO_TOPK is not a hyperfolio setting or variable and is ignored (did you mean HYPERFOLIO_TOP_K?)",
        "HYPERFOLIO_ZZZZZZZZZZ is not a hyperfolio setting or variable and is ignored; "
        "hyperfolio config show lists the settings",
    ]


def test_every_variable_the_code_reads_is_known():
    """A HYPERFOLIO_* name written anywhere in the package must be a setting's variable or a declared
    process variable; otherwise users setting it would be told it is ignored."""
    import re
    from pathlib import Path

    import hyperfolio

    known = {*setting_variables(), *PROCESS_VARIABLES}
    package = Path(hyperfolio.__file__).parent
    written = {
        name
        for path in package.rglob("*.py")
        for name in re.findall(r"HYPERFOLIO_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8"))
    }
    assert written and written <= known, sorted(written - known)


def test_the_cli_warns_of_a_misspelt_variable_in_one_line(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from hyperfolio.cli import app

    monkeypatch.setenv("HYPERFOLIO_TOPK", "20")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    result = CliRunner().invoke(app, ["config", "show", "-c", str(tmp_path / "col")])
    assert result.exit_code == 0, result.output
    warning = [line for line in result.output.splitlines() if "HYPERFOLIO_TOPK" in line]
    assert len(warning) == 1 and "did you mean HYPERFOLIO_TOP_K?" in warning[0]
