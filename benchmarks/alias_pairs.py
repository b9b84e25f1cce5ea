"""Alias merges to judge by hand, the embedding threshold chosen on held-out documents, and merge precision.

For the first `--documents` documents of a collection (by file name, as benchmarks/entity_sample.py),
the offline extractor's names are paired the three ways `hypergraph/aliases.py` pairs them: by string
form, by initials, and every embedding candidate (same last word, or the shorter name inside the longer)
with its cosine under the collection's graph embedder. Judged pairs are kept in a JSON file,
`{"document file name": {"alias => target": true | false}}`: true when both names mean one thing in that
document. With `--labels`:

- the embedding threshold is chosen leave-one-document-out (the threshold with the best accuracy on the
  other documents' judged candidates) and scored on the held-out one; pooled held-out precision and recall;
- the precision of every pair of a judged sample of `--sample` merges the build makes at a threshold
  (`--threshold`, default the configured one), by method.

    python benchmarks/alias_pairs.py --collection bench-out/new9-mm              # the pairs to judge
    python benchmarks/alias_pairs.py --collection bench-out/new9-mm --labels benchmarks/labels/aliases_mmlongbench.json
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from hyperfolio import Collection
from hyperfolio.config import BuildOptions
from hyperfolio.hypergraph.aliases import (
    AliasPair,
    embedding_pairs,
    form_pairs,
    initials_pairs,
    one_hop,
)
from hyperfolio.hypergraph.extract import page_units
from hyperfolio.hypergraph.extract_offline import OfflineExtractor
from hyperfolio.hypergraph.merge import acronym_aliases, document_names

SEED = 31


def document_pairs(col: Collection, documents: int) -> dict[str, list[AliasPair]]:
    """File name -> every candidate pair (embedding pairs with their cosine, whatever it is)."""
    docs = sorted(col.store.list_documents(), key=lambda d: Path(d.source).name)[:documents]
    embedder = col.graph_embedder
    out: dict[str, list[AliasPair]] = {}
    for doc in docs:
        graphs = OfflineExtractor().extract_document(
            page_units(doc.doc_id, doc.title, col.store.iter_chunks(doc.doc_id))
        )
        names = document_names(graphs)
        pairs = [AliasPair(a, t, "defined", 1.0) for a, t in acronym_aliases(graphs).items()]
        pairs += form_pairs(names) + initials_pairs(names)
        pairs += embedding_pairs(names, embedder.embed, threshold=-1.0)  # every candidate, with its cosine
        out[Path(doc.source).name] = pairs
    return out


def key(pair: AliasPair) -> str:
    return f"{pair.alias} => {pair.target}"


def best_threshold(scored: list[tuple[float, bool]]) -> float:
    """The cosine threshold with the best accuracy on judged candidates (ties: the higher)."""
    options = sorted({s for s, _ in scored} | {1.01})
    return max(options, key=lambda t: (sum((s >= t) == ok for s, ok in scored), t))


def held_out(pairs: dict[str, list[AliasPair]], labels: dict[str, dict[str, bool]]) -> None:
    judged = {
        doc: [(p.score, labels[doc][key(p)]) for p in ps if p.method == "embedding" and key(p) in labels.get(doc, {})]
        for doc, ps in pairs.items()
    }
    tp = fp = fn = 0
    for doc in judged:
        train = [x for d, xs in judged.items() if d != doc for x in xs]
        threshold = best_threshold(train)
        for score, ok in judged[doc]:
            tp += score >= threshold and ok
            fp += score >= threshold and not ok
            fn += score < threshold and ok
        if judged[doc]:
            print(f"  held out {doc}: threshold {threshold:.2f} ({len(judged[doc])} judged candidates)")
    every = [x for xs in judged.values() for x in xs]
    print(
        f"embedding merges, held out: precision {100 * tp / max(1, tp + fp):.1f} % ({tp} of {tp + fp}), "
        f"recall {100 * tp / max(1, tp + fn):.1f} %; on all {len(every)} judged: threshold {best_threshold(every):.2f}"
    )


def made(pairs: dict[str, list[AliasPair]], threshold: float | None) -> list[tuple[str, AliasPair]]:
    """The merges a build makes at this threshold (one hop, as `find_aliases`)."""
    out = []
    for doc, ps in pairs.items():
        defined = {p.alias: p.target for p in ps if p.method == "defined"}
        chosen = [
            p
            for p in ps
            if p.method in ("form", "initials")
            or (p.method == "embedding" and threshold is not None and p.score >= threshold)
        ]
        kept = one_hop(chosen, defined)
        out += [(doc, p) for p in ps if kept.get(p.alias) == p.target and p.method != "defined"]
        out += [(doc, AliasPair(a, t, "defined", 1.0)) for a, t in defined.items()]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, required=True)
    parser.add_argument("--documents", type=int, default=5)
    parser.add_argument("--labels", type=Path, help="judged pairs (JSON): threshold and precision")
    parser.add_argument(
        "--threshold", type=float, default=BuildOptions().alias_threshold, help="embedding merges (default: none)"
    )
    parser.add_argument("--sample", type=int, default=100)
    args = parser.parse_args()
    with Collection(args.collection) as col:
        pairs = document_pairs(col, args.documents)
    merges = made(pairs, args.threshold)
    sample = random.Random(SEED).sample(merges, min(args.sample, len(merges)))
    if args.labels is None:
        for doc, ps in pairs.items():
            print(f"== {doc}")
            for p in sorted(ps, key=lambda p: (p.method, -p.score)):
                print(f"  {p.method} {p.score:.2f} {key(p)!r}")
        print(f"== the sample of {len(sample)} of the {len(merges)} merges made at {args.threshold}")
        for doc, p in sample:
            print(f"  {doc} {p.method} {key(p)!r}")
        return
    labels = json.loads(args.labels.read_text(encoding="utf-8"))
    held_out(pairs, labels)
    judged = [(p.method, labels[doc][key(p)]) for doc, p in sample if key(p) in labels.get(doc, {})]
    good = sum(ok for _, ok in judged)
    print(f"merges made at {args.threshold}: {len(merges)}; sample of {len(sample)}, {len(judged)} judged:")
    print(f"  precision {100 * good / max(1, len(judged)):.1f} % ({good} right)")
    for method in ("defined", "form", "initials", "embedding"):
        mine = [ok for m, ok in judged if m == method]
        if mine:
            print(f"  {method}: {sum(mine)} of {len(mine)}")


if __name__ == "__main__":
    main()
