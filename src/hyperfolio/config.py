"""Typed settings: defaults, then a settings file, then environment, then arguments."""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

ENV_PREFIX = "HYPERFOLIO_"
DEFAULT_COLLECTION = Path("~/.local/share/hyperfolio/default").expanduser()


@dataclass(frozen=True)
class ParseOptions:
    chunk_tokens: int = 200  # token budget of a text chunk (word-piece approximated by words)
    chunk_overlap: int = 30  # tokens repeated between consecutive chunks of a page
    ocr: bool = True  # OCR pages without a text layer and images (needs Tesseract)
    ocr_language: str = "eng"
    ocr_dpi: int = 150
    ocr_images: bool = True  # OCR embedded images to make figures searchable
    min_page_chars: int = 40  # below this a page counts as having no text layer
    min_image_area: float = 0.02  # images smaller than this fraction of the page are ignored
    tables: bool = True  # detect table cell grids (costs time on long PDFs)
    virtual_page_words: int = 600  # page size for formats that have no pages (Markdown, HTML, text)
    max_page_chars: int = 200_000  # a page larger than this is truncated with a warning


@dataclass(frozen=True)
class Settings:
    parse: ParseOptions = field(default_factory=ParseOptions)
    embedder: str = "minilm"  # "minilm" (packaged all-MiniLM-L6-v2) or "model2vec" (distilled from it)
    embed_batch: int = 64
    default_mode: str = "hybrid"
    top_k: int = 10
    rrf_k: int = 60
    answer_sentences: int = 2  # passages the extractive answerer joins into an answer
    min_answer_score: float = 0.25  # below this the evidence is called insufficient

    @classmethod
    def load(cls, path: Path | None = None, **overrides: Any) -> Settings:
        """Defaults, then `path` (TOML or JSON), then HYPERFOLIO_* variables, then `overrides`."""
        values: dict[str, Any] = {}
        if path is not None and Path(path).exists():
            text = Path(path).read_text()
            values.update(tomllib.loads(text) if str(path).endswith(".toml") else json.loads(text))
        for f in fields(cls):
            if f.name == "parse":
                continue
            env = os.environ.get(ENV_PREFIX + f.name.upper())
            if env is not None:
                values[f.name] = env
        values.update({k: v for k, v in overrides.items() if v is not None})
        parse_values = dict(values.pop("parse", {}) or {})
        for f in fields(ParseOptions):
            env = os.environ.get(ENV_PREFIX + "PARSE_" + f.name.upper())
            if env is not None:
                parse_values[f.name] = env
        parse = _coerce(ParseOptions, parse_values)
        base = _coerce(cls, values)
        return replace(base, parse=parse)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _coerce(kind: type, values: dict[str, Any]) -> Any:
    """Build a dataclass from loosely typed values (strings from the environment)."""
    defaults = kind()
    out: dict[str, Any] = {}
    known = {f.name for f in fields(kind)}
    unknown = set(values) - known
    if unknown:
        raise ValueError(f"unknown setting(s) for {kind.__name__}: {', '.join(sorted(unknown))}")
    for name, value in values.items():
        current = getattr(defaults, name)
        if isinstance(current, bool) and isinstance(value, str):
            value = value.strip().lower() in {"1", "true", "yes", "on"}
        elif isinstance(current, int) and not isinstance(current, bool):
            value = int(value)
        elif isinstance(current, float):
            value = float(value)
        out[name] = value
    return replace(defaults, **out)
