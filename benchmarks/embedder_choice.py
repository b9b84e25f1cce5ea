"""Which chunk embedder should `add` use? Held-out `auto` recall on every dev set against embedding cost.

    python benchmarks/embedder_choice.py --mm bench-out/dev-mm --qasper bench-out/dev-qasper --fb bench-out/dev-fb \
        --variants minilm,minilm-int8,minilm-128,minilm-int8-128,model2vec --out bench-out/embedders

The dev collections (built with one embedder, read from their record) are copied once per other variant and
only their chunk vectors are made again with that variant, so every variant ranks the same chunks, graph and
cards: what differs is the chunk embedder alone. Each variant's `auto` is judged as `train_ranker.py` judges
the ranker that ships (one linear ranker per layout with the document features, each question weighing the
same, C 0.05), by 5-fold cross-validation with whole documents held out across the three sets, in both
scopes. Cost is one core's milliseconds per chunk on the same first `--sample` chunks of each set (longest
first, as `add` batches them); what that does to ingest, `benchmarks/ingest.py --embedder` measures.
Skips with a message when the data or a collection is absent.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from train_ranker import SETS, Config, Weighting, figures, held_out, load_parts, parse_weights

from hyperfolio.collection import Collection
from hyperfolio.embed.local import EMBEDDERS, make_embedder
from hyperfolio.eval.datasets import DatasetMissing
from hyperfolio.ingest.embedding import EMBED_BATCH_CHUNKS, embed_chunks, embedding_text
from hyperfolio.store.base import CHUNK_SPACE

SHIPPED = Config(per_layout=True, model="lr", document=True, weighting="questions")
DONE = "embedded.json"  # written into a variant's copy once all its chunk vectors are made


def variant_copy(base: Path, target: Path, variant: str) -> dict[str, float]:
    """`base` copied to `target` with every chunk vector made again by `variant` (kept when already done)."""
    done = target / DONE
    if done.exists():
        return dict(json.loads(done.read_text()))
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(base, target)
    embedder = make_embedder(variant, EMBED_BATCH_CHUNKS)
    with Collection(target) as col:
        chunks = list(col.store.iter_chunks())
        col.store.clear_vectors(CHUNK_SPACE)
        col.store.set_meta("embedder", variant)
        began = time.perf_counter()
        embed_chunks(col.store, embedder, chunks)
        record = {"chunks": len(chunks), "seconds": time.perf_counter() - began}
    done.write_text(json.dumps(record))
    print(f"  {target}: {len(chunks)} chunks embedded with {variant} in {record['seconds']:.0f} s", flush=True)
    return record


def built_with(bases: dict[str, Path]) -> str:
    """The one embedder all the dev collections were built with (a variant equal to it needs no copy)."""
    names = set()
    for path in bases.values():
        with Collection(path) as col:
            names.add(col.embedder_name)
    if len(names) != 1:
        raise SystemExit(f"the dev collections were built with different embedders: {', '.join(sorted(names))}")
    return names.pop()


def one_core_ms(directory: Path, variants: list[str], sample: int) -> dict[str, float]:
    """Each variant's one-core milliseconds per chunk on the set's longest `sample` chunk texts."""
    with Collection(directory) as col:
        texts = sorted((embedding_text(c.section_path, c.text) for c in col.store.iter_chunks()), key=len)
    texts = texts[::-1][:sample] if sample else texts
    out = {}
    for variant in variants:
        embedder = make_embedder(variant, EMBED_BATCH_CHUNKS, threads=1)
        embedder.embed(texts[:EMBED_BATCH_CHUNKS])  # load (and build, first time) outside the timing
        began = time.perf_counter()
        for start in range(0, len(texts), EMBED_BATCH_CHUNKS):
            embedder.embed(texts[start : start + EMBED_BATCH_CHUNKS])
        out[variant] = 1000 * (time.perf_counter() - began) / max(1, len(texts))
    return out


def held_out_recall(dirs: dict[str, Path], rows: Path, cache: Path, folds: int) -> dict[str, dict[str, float | None]]:
    """The shipped configuration's held-out recall per set x scope on these collections."""
    parts = load_parts(dirs, cache, rows, regather=False)
    weighting = Weighting(parse_weights(SHIPPED.weighting, parts))
    return figures(parts, held_out(parts, SHIPPED, weighting, [0.05], folds).orders)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mm", type=Path, default=Path("eval-out/dev/mm"), help="MMLongBench-Doc dev collection")
    parser.add_argument("--qasper", type=Path, default=Path("eval-out/dev/qasper"), help="Qasper dev collection")
    parser.add_argument("--fb", type=Path, default=Path("eval-out/dev/fb"), help="FinanceBench dev collection")
    parser.add_argument("--variants", default=",".join(EMBEDDERS), help="chunk embedders to compare")
    parser.add_argument("--out", type=Path, default=Path("bench-out/embedders"), help="copies and row caches")
    parser.add_argument("--cache", type=Path, default=Path("eval-out/cache"), help="dataset cache (Qasper papers)")
    parser.add_argument("--sample", type=int, default=400, help="chunks per set timed on one core (0: all)")
    parser.add_argument("--folds", type=int, default=5)
    return parser.parse_args()


def main() -> int:
    args = arguments()
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if unknown := [v for v in variants if v not in EMBEDDERS]:
        print(f"unknown embedder {', '.join(unknown)}; choose from {', '.join(EMBEDDERS)}")
        return 2
    bases = {"mmlongbench": args.mm, "qasper": args.qasper, "financebench": args.fb}
    if missing := [str(p) for p in bases.values() if not (p / "hyperfolio.db").exists()]:
        print(f"skipped: no dev collection at {', '.join(missing)} (build them with benchmarks/ingest.py / eval)")
        return 0
    base = built_with(bases)
    cost = {dataset: one_core_ms(path, variants, args.sample) for dataset, path in bases.items()}
    results = {}
    for variant in variants:
        print(f"{variant}:", flush=True)
        dirs = bases if variant == base else {d: args.out / variant / d for d in bases}
        for dataset in bases if variant != base else ():
            variant_copy(bases[dataset], dirs[dataset], variant)
        try:
            results[variant] = held_out_recall(dirs, args.out / variant / "rows", args.cache, args.folds)
        except DatasetMissing as exc:
            print(f"skipped: {exc}")
            return 0
    keys = [f"{d}/{s}" for d in SETS for s in ("document", "collection")]
    print("\nheld-out auto R@5 (R@1 / R@10), one core's ms per chunk (longest chunks of each set)\n")
    print("| embedder | " + " | ".join(keys) + " | ms/chunk mm / qasper / fb |")
    print("|" + " --- |" * (len(keys) + 2))
    for variant, figs in results.items():
        cells = [_cell(figs.get(key, {})) for key in keys]
        ms = " / ".join(f"{cost[d][variant]:.1f}" for d in bases)
        print(f"| {variant} | " + " | ".join(cells) + f" | {ms} |")
    return 0


def _cell(values: dict[str, float | None]) -> str:
    def pct(key: str) -> str:
        value = values.get(key)
        return "-" if value is None else f"{100 * value:.1f}"

    return f"**{pct('R@5')}** ({pct('R@1')} / {pct('R@10')})"


if __name__ == "__main__":
    sys.exit(main())
