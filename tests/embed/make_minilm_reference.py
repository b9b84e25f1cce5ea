"""Writes the reference vectors the ONNX MiniLM is checked against (run once, with torch installed).

hyperfolio no longer runs sentence-transformers, so the vectors it produced are kept as a fixture:
`python tests/embed/make_minilm_reference.py` needs sentence-transformers and torch (sentence-transformers 6.2,
torch 2.13 CPU made the committed files) and overwrites `fixtures/minilm_reference.json` (texts) and
`fixtures/minilm_reference.npy` (float32 vectors, normalised).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from hyperfolio.embed.local import minilm_path

OUT = Path(__file__).parent / "fixtures" / "minilm_reference"

_LONG = " ".join(
    f"Section {i}: the turbine at site {i * 7} delivered {i * 1.5:.1f} GWh, up {i}% on the year before, "
    "while maintenance costs fell and the grid operator paid a capacity premium."
    for i in range(1, 16)
)

TEXTS = (
    "The wind farm produced more electricity this year.",
    "Q3 revenue?",
    "Tableau 2 : chiffre d'affaires par région (en millions d'euros), Île-de-France en tête.",
    "def embed(texts): return model.encode(texts)  # see https://example.org/docs?v=2",
    "量子コンピュータ quantum computing 量子計算 explained for beginners.",
    _LONG,  # well over 256 tokens: checks the truncation length
)


def main() -> None:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(minilm_path()), device="cpu")
    assert model.max_seq_length == 256
    assert len(model.tokenizer(_LONG)["input_ids"]) > 300
    vectors = model.encode(list(TEXTS), normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.with_suffix(".json").write_text(json.dumps({"texts": TEXTS}, ensure_ascii=False, indent=1) + "\n")
    np.save(OUT.with_suffix(".npy"), vectors)
    print(f"wrote {OUT}.json and .npy: {vectors.shape}")


if __name__ == "__main__":
    main()
