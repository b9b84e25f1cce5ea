"""Entity precision on dev PDFs the entity rules were not written against, before and after (issue 31).

The rules of `hypergraph/entity_filters.py` were written looking at the first dev PDFs by file name (the ones
`entity_sample.py` draws from). This draws 10 linked entities from each of five others (the 14th, 17th,
20th, 23rd and 26th by file name; seed 31), extracting them afresh with whatever source tree is imported,
so the same command run against an older checkout gives the "before":

    git worktree add /tmp/before 6bff285
    PYTHONPATH=/tmp/before/src python benchmarks/entity_heldout.py --collection bench-out/new9-mm > before.json
    python benchmarks/entity_heldout.py --collection bench-out/new9-mm > after.json
    python benchmarks/entity_heldout.py --score benchmarks/labels/entities_heldout_mmlongbench.json

The labels file keeps each side's sample with its hand judgements (as `entity_sample.py`'s criteria).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from hyperfolio import Collection
from hyperfolio.hypergraph.extract import PageUnit
from hyperfolio.hypergraph.extract_offline import OfflineExtractor
from hyperfolio.hypergraph.merge import merge

PICKED = (13, 16, 19, 22, 25)
SEED = 31

try:  # before issue 31 every entity linked chunks
    from hyperfolio.model import VALUE_TYPES
except ImportError:  # pragma: no cover - an older checkout
    VALUE_TYPES = frozenset()


def drawn(collection: Path, per_document: int) -> dict[str, list[str]]:
    with Collection(collection) as col:
        docs = sorted(col.store.list_documents(), key=lambda d: Path(d.source).name)
        out = {}
        for doc in [docs[i] for i in PICKED if i < len(docs)]:
            by_page: dict[int, list] = {}  # written out: an older checkout has no `extract.page_units`
            for chunk in col.store.iter_chunks(doc.doc_id):
                by_page.setdefault(chunk.page, []).append(chunk)
            units = [PageUnit(doc.doc_id, doc.title, page, chunks) for page, chunks in sorted(by_page.items())]
            merged = merge(OfflineExtractor().extract_document(units))
            names = sorted({e.name for e in merged.entities.values() if e.type not in VALUE_TYPES and e.chunks})
            out[Path(doc.source).name] = random.Random(SEED).sample(names, min(per_document, len(names)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path)
    parser.add_argument("--per-document", type=int, default=10)
    parser.add_argument("--score", type=Path, help="the labels file: each side's precision")
    args = parser.parse_args()
    if args.score is not None:
        for side, docs in json.loads(args.score.read_text(encoding="utf-8")).items():
            judged = [ok for names in docs.values() for ok in names.values()]
            print(f"{side}: {sum(judged)} of {len(judged)} worth linking ({100 * sum(judged) / len(judged):.0f} %)")
        return
    if args.collection is None:
        parser.error("--collection or --score")
    print(json.dumps(drawn(args.collection, args.per_document), indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
