"""Packaged embedders work with the hub switched off and give meaningful similarities."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from hyperfolio.models.embed_local import Model2VecEmbedder, make_embedder

TEXTS = [
    "The wind farm produced more electricity this year.",
    "Turbine output rose over the last twelve months.",
    "A recipe for chocolate cake with cream.",
]


def check_similarity(vectors: np.ndarray) -> None:
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    sims = vectors @ vectors.T
    assert sims[0, 1] > sims[0, 2] + 0.1  # paraphrases closer than unrelated text


def test_minilm(embedder):
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    check_similarity(vectors)
    assert embedder.embed([]).shape == (0, 384)


@pytest.mark.slow
def test_model2vec_distilled_locally(tmp_path):
    model = Model2VecEmbedder(path=tmp_path / "m2v")
    vectors = model.embed(TEXTS)
    assert vectors.shape == (3, model.dim)
    check_similarity(vectors)
    assert (tmp_path / "m2v" / "model.safetensors").exists()  # cached for the next run


def test_minilm_loads_with_hub_offline_in_a_fresh_process():
    code = "from hyperfolio.models.embed_local import MiniLMEmbedder; print(MiniLMEmbedder().embed(['x']).shape)"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "(1, 384)" in out.stdout


def test_unknown_embedder_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown embedder"):
        make_embedder("word2vec")
