"""Settings: defaults, file, environment, then arguments."""

from __future__ import annotations

import pytest

from hyperfolio.config import Settings


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
