"""Packaged embedders work with the hub switched off, without torch, and give sentence-transformers' vectors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hyperfolio.embed import static_distill
from hyperfolio.embed.local import MiniLMEmbedder, Model2VecEmbedder, make_embedder

FIXTURES = Path(__file__).parent / "fixtures"
# sentence-transformers' own vectors (tests/embed/make_minilm_reference.py); the ONNX graph differs by ~2e-7.
REFERENCE_ATOL = 1e-5
REFERENCE_MIN_COSINE = 0.99999

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


def reference() -> tuple[list[str], np.ndarray]:
    texts = json.loads((FIXTURES / "minilm_reference.json").read_text())["texts"]
    return texts, np.load(FIXTURES / "minilm_reference.npy")


def test_minilm_equals_sentence_transformers(minilm_fp32):
    texts, expected = reference()
    assert any(len(t.split()) > 256 for t in texts)  # one text is truncated at sentence-transformers' 256 tokens
    vectors = minilm_fp32.embed(texts)
    assert vectors.dtype == np.float32
    assert np.abs(vectors - expected).max() < REFERENCE_ATOL
    assert (vectors * expected).sum(axis=1).min() > REFERENCE_MIN_COSINE


def test_minilm_keeps_input_order_across_sorted_batches(minilm_fp32):
    texts, _ = reference()
    one_by_one = np.stack([minilm_fp32.embed([t])[0] for t in texts])  # no padding at all
    assert np.abs(MiniLMEmbedder(batch_size=2).embed(texts) - one_by_one).max() < 1e-5


def tiny_bert(folder: Path, seed: int = 0) -> Path:
    """A random 1-layer BERT in the packaged layout (config.json + model.safetensors)."""
    from safetensors.numpy import save_file

    hidden, inner, vocab = 8, 16, 30
    config = {"model_type": "bert", "hidden_act": "gelu", "vocab_size": vocab, "hidden_size": hidden}
    config |= {"num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": inner}
    config |= {"max_position_embeddings": 16, "type_vocab_size": 2, "layer_norm_eps": 1e-12}
    rng = np.random.default_rng(seed)
    shapes = {
        "embeddings.word_embeddings.weight": (vocab, hidden),
        "embeddings.position_embeddings.weight": (16, hidden),
        "embeddings.token_type_embeddings.weight": (2, hidden),
        "encoder.layer.0.intermediate.dense.weight": (inner, hidden),
        "encoder.layer.0.intermediate.dense.bias": (inner,),
        "encoder.layer.0.output.dense.weight": (hidden, inner),
    }
    for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
        shapes |= {f"encoder.layer.0.{name}.weight": (hidden, hidden), f"encoder.layer.0.{name}.bias": (hidden,)}
    norms = ("embeddings", "encoder.layer.0.attention.output", "encoder.layer.0.output")
    for name in norms:
        shapes |= {f"{name}.LayerNorm.weight": (hidden,), f"{name}.LayerNorm.bias": (hidden,)}
    shapes["encoder.layer.0.output.dense.bias"] = (hidden,)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    weights = {name: rng.normal(size=shape).astype(np.float32) for name, shape in shapes.items()}
    save_file(weights, str(folder / "model.safetensors"))
    return folder


def test_graph_is_valid_onnx_and_ignores_padding(tmp_path):
    import onnx
    import onnxruntime as ort

    from hyperfolio.embed.onnx_encoder import graph_file

    path = graph_file(tiny_bert(tmp_path / "bert"), tmp_path / "cache")
    onnx.checker.check_model(str(path))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    alone = session.run(None, {"input_ids": np.array([[2, 5, 7, 3]]), "attention_mask": np.ones((1, 4), np.int64)})
    padded = session.run(
        None, {"input_ids": np.array([[2, 5, 7, 3, 0, 0]]), "attention_mask": np.array([[1, 1, 1, 1, 0, 0]])}
    )
    assert np.abs(alone[0] - padded[0]).max() < 1e-5


def test_graph_cache_is_reused_and_rebuilt_when_weights_change(tmp_path):
    from hyperfolio.embed.onnx_encoder import graph_file

    bert, cache = tiny_bert(tmp_path / "bert"), tmp_path / "cache"
    first = graph_file(bert, cache)
    built = first.stat().st_mtime_ns
    assert graph_file(bert, cache) == first and first.stat().st_mtime_ns == built  # reused, not rebuilt
    tiny_bert(bert, seed=1)  # new weights in place, as a reinstalled wheel would bring
    stat = (bert / "model.safetensors").stat()
    os.utime(bert / "model.safetensors", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # coarse-mtime filesystems
    second = graph_file(bert, cache)
    assert second != first and second.exists()
    assert not first.exists()  # the stale graph is removed
    assert not list(cache.glob("*.tmp"))  # written through a temporary file, renamed


@pytest.mark.slow
def test_minilm_int8_stays_close():
    texts, expected = reference()
    vectors = MiniLMEmbedder(quantize=True).embed(texts)
    assert vectors.shape == expected.shape
    assert (vectors * expected).sum(axis=1).min() > 0.95  # measured 0.98-0.99: close, not equal


def test_a_short_window_reads_only_the_first_tokens(minilm_fp32):
    """`minilm-128` is `minilm` on texts within 128 tokens, and on a longer text the vector of its first 128."""
    short = "The wind farm produced more electricity this year."
    head = " ".join(f"turbine{i} blade" for i in range(60))  # far past 128 word pieces
    long = head + " " + " ".join("chocolate cake recipe" for _ in range(60))
    windowed = make_embedder("minilm-128")
    assert windowed.name == "minilm-128" and make_embedder("minilm-int8-128").name == "minilm-int8-128"
    ours, full = windowed.embed([short, long]), minilm_fp32.embed([short, long])
    assert float(ours[0] @ full[0]) > 0.9999  # nothing cut: the same vector
    assert float(ours[1] @ full[1]) < 0.98  # the cake half is never read ...
    truncated = minilm_fp32.embed([minilm_fp32._model.tokenizer.decode(windowed._model.token_ids([long])[0][1:-1])])
    assert float(ours[1] @ truncated[0]) > 0.999  # ... what is read is the first 128 tokens


_NO_TORCH = """
import json, sys
from pathlib import Path
from hyperfolio.embed.local import MiniLMEmbedder, Model2VecEmbedder
texts = ["The wind farm produced more electricity this year.", "A recipe for chocolate cake."]
shapes = [list(MiniLMEmbedder().embed(texts).shape), list(Model2VecEmbedder(path=Path(sys.argv[1])).embed(texts).shape)]
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {"torch", "transformers", "sentence_transformers"})
print(json.dumps({"shapes": shapes, "heavy": heavy}))
"""


@pytest.fixture(scope="module")
def distilled(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """Both embedders used in a fresh process, the static model distilled there: (its folder, the process)."""
    path = tmp_path_factory.mktemp("m2v") / "model"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _NO_TORCH, str(path)], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    return path, out


@pytest.mark.slow
def test_embedders_run_without_torch(distilled):
    _, out = distilled
    result = json.loads(out.stdout)
    assert result["shapes"] == [[2, 384], [2, 256]]
    assert result["heavy"] == []
    assert len(out.stderr.strip().splitlines()) == 1  # the one "preparing ... once" line
    assert "preparing the static embedding model" in out.stderr


@pytest.mark.slow
def test_model2vec_distilled_locally(distilled):
    path, _ = distilled
    model = Model2VecEmbedder(path=path)
    vectors = model.embed(TEXTS)
    assert vectors.shape == (3, model.dim) and vectors.dtype == np.float32
    check_similarity(vectors)
    assert (path / "model.safetensors").exists()  # cached for the next run


@pytest.mark.slow
def test_model2vec_cache_is_reused(distilled, monkeypatch):
    path, _ = distilled

    def no_second_distillation(*args, **kwargs):
        raise AssertionError("the cached static model should have been loaded")

    monkeypatch.setattr(static_distill, "distill", no_second_distillation)
    first = Model2VecEmbedder(path=path).embed(TEXTS)
    assert np.array_equal(Model2VecEmbedder(path=path).embed(TEXTS), first)


def test_model2vec_default_cache_is_versioned():
    assert Model2VecEmbedder().path.name == "model2vec-minilm-256-v2"  # v1 caches came from model2vec's own distill


def test_static_vocabulary_drops_unused_and_special_tokens():
    vocab = {"[PAD]": 0, "[unused0]": 1, "[UNK]": 2, "[CLS]": 3, "a": 4, "##b": 5}
    spec = {
        "model": {"unk_token": "[UNK]", "vocab": vocab},
        "padding": {"pad_token": "[PAD]"},
        "added_tokens": [{"content": t, "special": True} for t in ("[PAD]", "[UNK]", "[CLS]")],
    }
    kept = static_distill.kept_vocabulary(spec, r"\[unused\d+\]")
    assert kept == [("[PAD]", 0), ("[UNK]", 2), ("a", 4), ("##b", 5)]


def test_sif_weights_follow_zipf_rank():
    weights = static_distill.sif_weights(1000, 1e-4)
    assert np.all(np.diff(weights) > 0)  # frequent (early) tokens weigh least
    assert 0 < weights[0] < weights[-1] < 1


def test_pca_is_deterministic_and_ordered():
    rng = np.random.default_rng(0)
    data = rng.normal(size=(500, 8)) * np.arange(8, 0, -1)
    projected = static_distill.pca(data, 3)
    assert projected.shape == (500, 3)
    variances = projected.var(axis=0)
    assert np.all(np.diff(variances) < 0)
    assert np.array_equal(projected, static_distill.pca(data, 3))


def test_minilm_loads_with_hub_offline_in_a_fresh_process():
    code = "from hyperfolio.embed.local import MiniLMEmbedder; print(MiniLMEmbedder().embed(['x']).shape)"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "(1, 384)" in out.stdout


def test_unknown_embedder_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown embedder"):
        make_embedder("word2vec")


@pytest.mark.parametrize("name", ["minilm", "model2vec"])
def test_embedders_can_be_shared_between_threads(name):
    """A service embeds questions from many threads at once; the tokenizers alone would refuse that."""
    import threading

    shared = make_embedder(name)
    expected = shared.embed(["capacity by region in 2024"])
    errors: list[str] = []

    def ask() -> None:
        try:
            for _ in range(15):
                got = shared.embed(["capacity by region in 2024", "revenue of the Baltic region"])
                if not np.allclose(got[0], expected[0], atol=1e-5):
                    errors.append("a vector changed under concurrent use")
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            errors.append(repr(exc))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


@pytest.mark.parametrize(("configured", "warned"), [(None, False), ("model2vec", True)])
def test_a_collection_keeps_its_embedder_and_says_so_only_when_another_was_chosen(tmp_path, caplog, configured, warned):
    """An old collection opened under a new default embeds questions as its chunks were, without a warning;
    a user who configured another embedder is told which one is used."""
    from hyperfolio import Collection
    from hyperfolio.config import Settings

    with Collection(tmp_path / "old") as col:
        col.store.set_meta("embedder", "minilm")
    settings = Settings.load(user=False, **({"embedder": configured} if configured else {}))
    with caplog.at_level("WARNING"), Collection(tmp_path / "old", settings=settings) as col:
        assert col.embedder.name == "minilm"
    said = [r.getMessage() for r in caplog.records if "was embedded with" in r.getMessage()]
    assert bool(said) == warned, said
