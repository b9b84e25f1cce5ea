"""Static (model2vec) embeddings distilled from a BERT encoder through onnxruntime, without torch.

Why: `model2vec.distill` needs torch and transformers only to run the encoder. The method itself is small, so
it is redone here on the ONNX encoder: every vocabulary token is encoded alone as `[CLS] token [SEP]` with mean
pooling, unused and special tokens (other than padding and unknown) are dropped, PCA reduces the vectors, and each
is weighted by SIF from the token's Zipf rank. The result is a plain `model2vec.StaticModel`, so encoding stays
model2vec's own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    from hyperfolio.embed.onnx_encoder import OnnxSentenceEncoder


@dataclass(frozen=True)
class DistillSettings:
    """model2vec's defaults: 256 PCA dimensions, SIF coefficient 1e-4, `[unusedN]` tokens dropped, float16 vectors."""

    pca_dims: int = 256
    sif_coefficient: float = 1e-4
    remove_pattern: str = r"\[unused\d+\]"
    batch_size: int = 1024


def kept_vocabulary(spec: dict[str, Any], remove_pattern: str) -> list[tuple[str, int]]:
    """(token, original id) in id order for every token that is neither special (padding and unknown excepted, as
    model2vec keeps them) nor matched by `remove_pattern`."""
    keep_special = {spec["model"].get("unk_token"), (spec.get("padding") or {}).get("pad_token", "[PAD]")}
    special = {t["content"] for t in spec.get("added_tokens", []) if t.get("special")} - keep_special
    pattern = re.compile(remove_pattern)
    vocab = sorted(spec["model"]["vocab"].items(), key=lambda item: item[1])
    return [(token, i) for token, i in vocab if token not in special and not pattern.match(token)]


def static_tokenizer(spec: dict[str, Any], kept: list[tuple[str, int]]) -> Tokenizer:
    """The model's tokenizer renumbered to the kept tokens, without [CLS]/[SEP], truncation or padding."""
    from tokenizers import Tokenizer

    new_ids = {token: i for i, (token, _) in enumerate(kept)}
    spec = json.loads(json.dumps(spec))  # a deep copy
    spec["model"]["vocab"] = new_ids
    spec["added_tokens"] = [{**t, "id": new_ids[t["content"]]} for t in spec["added_tokens"] if t["content"] in new_ids]
    spec["post_processor"] = None
    spec["truncation"] = None
    spec["padding"] = None
    return Tokenizer.from_str(json.dumps(spec))


def pca(vectors: np.ndarray, dims: int) -> np.ndarray:
    """Centred projection on the first `dims` principal axes, each signed so its largest loading is positive (the
    same weights always give the same model). The SVD is of the small covariance matrix, not of the 30k-row data:
    same axes, seconds instead of half a minute."""
    centred = vectors.astype(np.float64) - vectors.mean(axis=0, dtype=np.float64)
    axes, _, _ = np.linalg.svd(centred.T @ centred)  # symmetric: left singular vectors are the principal axes
    axes = axes[:, :dims].T
    signs = np.sign(axes[np.arange(len(axes)), np.abs(axes).argmax(axis=1)])
    return centred @ (axes * signs[:, None]).T


def sif_weights(n: int, coefficient: float) -> np.ndarray:
    """a / (a + p(rank)), with p from Zipf's law over the vocabulary order (rank 1 = first kept token)."""
    inverse_rank = 1.0 / np.arange(2, n + 2)
    probability = inverse_rank / inverse_rank.sum()
    return coefficient / (coefficient + probability)


def distill(
    encoder: OnnxSentenceEncoder, model_dir: Path, settings: DistillSettings | None = None, base_model: str = ""
) -> StaticModel:
    """A normalising StaticModel whose token vectors come from `encoder` (built on `model_dir`'s weights)."""
    from model2vec import StaticModel

    settings = settings or DistillSettings()
    spec = json.loads((model_dir / "tokenizer.json").read_text())
    kept = kept_vocabulary(spec, settings.remove_pattern)
    template = encoder.tokenizer.encode(spec["model"]["unk_token"]).ids  # e.g. [CLS] [UNK] [SEP]
    unknown = encoder.tokenizer.token_to_id(spec["model"]["unk_token"])
    if unknown is None:
        raise ValueError(f"{model_dir}: the tokenizer has no id for its own unknown token")
    at = template.index(unknown)
    ids = [[*template[:at], i, *template[at + 1 :]] for _, i in kept]

    vectors = np.nan_to_num(encoder.encode_ids(ids, batch_size=settings.batch_size))
    vectors = pca(vectors, settings.pca_dims) * sif_weights(len(kept), settings.sif_coefficient)[:, None]
    config = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": base_model,
        "apply_pca": settings.pca_dims,
        "sif_coefficient": settings.sif_coefficient,
        "hidden_dim": settings.pca_dims,
        "seq_length": 1_000_000,
        "normalize": True,
        "pooling": "mean",
    }
    return StaticModel(
        vectors=vectors.astype(np.float16),
        tokenizer=static_tokenizer(spec, kept),
        config=config,
        normalize=True,
        base_model_name=base_model,
    )
