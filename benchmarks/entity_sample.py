"""A sample of a collection's offline entities to judge by hand, and the precision of a judged sample.

Draws `--per-document` entities from each of `--documents` documents (the first ones by file name, the
entities by a fixed seed) and prints each with the start of the first chunk that evidences it. Judged
entities are kept in a JSON file, `{"document file name": {"entity name": true | false}}`: true for an
entity worth linking (a person, organisation, place, product, dataset, method, named event or concept
that a question could be about), false for what is not (a fragment such as "CLAIM We", "already know",
a bare number, year, unit or month, a figure label, a running header, a contact line). With `--labels`,
the sample is scored against the file: the precision of the entities the graph keeps (issue 31, item 1:
before and after the entity filters).

    python benchmarks/entity_sample.py --collection bench-out/new9-mm                      # print the sample
    python benchmarks/entity_sample.py --collection bench-out/new9-mm --labels labels.json # its precision
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from hyperfolio import Collection

SEED = 31


def sample(col: Collection, documents: int, per_document: int) -> dict[str, list[tuple[str, str]]]:
    """File name -> [(entity name, the start of a chunk that evidences it)]."""
    docs = sorted(col.store.list_documents(), key=lambda d: Path(d.source).name)[:documents]
    rng = random.Random(SEED)
    out: dict[str, list[tuple[str, str]]] = {}
    for doc in docs:
        chunk_of: dict[str, str] = {}
        name_of: dict[str, str] = {}
        for chunk, entities in col.store.chunk_entities(doc.doc_id).items():
            for entity, name in entities:
                chunk_of.setdefault(entity, chunk)
                name_of[entity] = name
        chosen = rng.sample(sorted(name_of), min(per_document, len(name_of)))
        texts = {c.chunk_id: c.text for c in col.store.get_chunks([chunk_of[e] for e in chosen])}
        out[Path(doc.source).name] = [(name_of[e], " ".join(texts.get(chunk_of[e], "").split())[:160]) for e in chosen]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, required=True)
    parser.add_argument("--documents", type=int, default=5)
    parser.add_argument("--per-document", type=int, default=20)
    parser.add_argument("--labels", type=Path, help="judged entities (JSON): print the sample's precision")
    args = parser.parse_args()
    with Collection(args.collection) as col:
        drawn = sample(col, args.documents, args.per_document)
    if args.labels is None:
        for doc, entities in drawn.items():
            print(f"== {doc}")
            for name, context in entities:
                print(f"  {name!r}: {context}")
        return
    labels = json.loads(args.labels.read_text(encoding="utf-8"))
    judged = [
        (doc, name, labels[doc][name]) for doc, ents in drawn.items() for name, _ in ents if name in labels.get(doc, {})
    ]
    unjudged = sum(len(ents) for ents in drawn.values()) - len(judged)
    good = sum(ok for _, _, ok in judged)
    print(f"{len(judged)} judged entities from {len(drawn)} documents ({unjudged} not in the labels file):")
    print(f"  precision {100 * good / max(1, len(judged)):.1f} % ({good} worth linking)")
    for doc in drawn:
        mine = [ok for d, _, ok in judged if d == doc]
        print(f"  {doc}: {sum(mine)} of {len(mine)}")


if __name__ == "__main__":
    main()
