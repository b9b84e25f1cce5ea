"""Document cards on the dev data: what the offline card reads from a cover, and how often a question
reaches its own filing by its card alone.

    python benchmarks/cards.py [--data ../shared/data] [--pages 6]

FinanceBench: the 20 filings' cards (organisation, type, fiscal year, quarter) against the truth in
their file names (ADOBE_2016_10K, JPMORGAN_2022Q2_10Q; the names are read here only, never by the
card), and document routing accuracy@1: the share of questions whose own filing has the best
`CardMatch.score` among the 20 (ties broken against the question). MMLongBench-Doc: each PDF's title
as the parser picks it today beside the card's, and the card's type beside the manifest's, for a
person to judge. Skips with a message when the data is absent.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import time
from pathlib import Path

from hyperfolio.cards import DocumentCard, match_cards
from hyperfolio.cards.names import abbreviates, core
from hyperfolio.cards.offline import card_for_file
from hyperfolio.eval.datasets import data_root

_TRUTH = re.compile(r"^(?P<org>.+?)_(?P<year>\d{4})(?:Q(?P<quarter>[1-4]))?_(?P<form>10K|10Q|8K)$")


def _org_agrees(truth: str, found: str) -> bool:
    """The filename's squashed name ("AMERICANEXPRESS", "JOHNSON_JOHNSON") against the card's."""
    squashed = re.sub(r"[^a-z]", "", truth.lower())
    card = re.sub(r"[^a-z]", "", "".join(core(found)))
    return bool(card) and (squashed in card or card in squashed or abbreviates(squashed, core(found)))


def financebench(root: Path, pages: int) -> None:
    folder = root / "financebench_dev"
    pdfs = sorted((folder / "pdfs").glob("*.pdf"))
    if not pdfs:
        print(f"financebench: skipped, no PDFs under {folder / 'pdfs'}")
        return
    cards: dict[str, DocumentCard] = {}
    hits = {"organisation": 0, "type": 0, "fiscal year": 0, "quarter": 0}
    started = time.perf_counter()
    print("| file | organisation | type | period | date | toc entries |\n| --- | --- | --- | --- | --- | --- |")
    for pdf in pdfs:
        card = cards[pdf.stem] = card_for_file(pdf, first=pages)
        truth = _TRUTH.match(pdf.stem)
        assert truth is not None, pdf.stem
        form = {"10K": "10-K", "10Q": "10-Q", "8K": "8-K"}[truth["form"]]
        quarter = int(truth["quarter"]) if truth["quarter"] else None
        hits["organisation"] += _org_agrees(truth["org"], card.organisation)
        hits["type"] += card.doc_type == form
        hits["fiscal year"] += card.fiscal_year == int(truth["year"])
        hits["quarter"] += card.quarter == quarter
        print(f"| {pdf.stem} | {card.organisation} | {card.doc_type} | {card.period} | {card.date} | {len(card.toc)} |")
    seconds = time.perf_counter() - started
    print(f"\n{len(pdfs)} filings, {seconds:.1f} s ({seconds / len(pdfs):.2f} s a filing, first {pages} pages)")
    for field, hit in hits.items():
        print(f"  {field} accuracy: {hit}/{len(pdfs)} = {100 * hit / len(pdfs):.0f}%")
    _routing(folder / "qa.jsonl", cards)


_SCORES = {
    "org + period + type (CardMatch.score)": lambda m: m.score,
    "organisation only": lambda m: m.org_match,
    "period only": lambda m: m.period_match,
}


def _routing(path: Path, cards: dict[str, DocumentCard]) -> None:
    """Accuracy@1 of routing each question to its own filing by card score (a tie counts as a miss),
    with all features and with each alone."""
    if not path.is_file():
        print(f"financebench routing: skipped, no {path}")
        return
    names, listed = list(cards), list(cards.values())
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = [row for row in rows if row["doc_name"] in cards]
    print(f"\nrouting accuracy@1 over {len(cards)} filings, {len(rows)} questions:")
    for label, score in _SCORES.items():
        correct, misses = 0, []
        for row in rows:
            scores = [score(m) for m in match_cards(row["question"], listed)]
            own = names.index(row["doc_name"])
            if scores[own] > max(s for i, s in enumerate(scores) if i != own):
                correct += 1
            else:
                misses.append(f"{row['doc_name']}: {row['question'][:90]}")
        print(f"  {label}: {correct}/{len(rows)} = {100 * correct / max(1, len(rows)):.0f}%")
        if label.startswith("org + period"):
            for miss in misses:
                print(f"    miss: {miss}")


def mmlongbench(root: Path, pages: int, old_titles: Path | None) -> None:
    folder = root / "mmlongbench_dev"
    pdfs = sorted((folder / "documents").glob("*.pdf"))
    if not pdfs:
        print(f"mmlongbench: skipped, no PDFs under {folder / 'documents'}")
        return
    manifest: dict[str, str] = {}
    if (folder / "documents_manifest.tsv").is_file():
        with open(folder / "documents_manifest.tsv", newline="") as handle:
            manifest = {row["doc_id"]: row["doc_type"] for row in csv.DictReader(handle, delimiter="\t")}
    old = json.loads(old_titles.read_text()) if old_titles and old_titles.is_file() else {}
    print("\n| file | old title | card title | card type (manifest) | organisation | period |")
    print("| --- | --- | --- | --- | --- | --- |")
    for pdf in pdfs:
        card = card_for_file(pdf, first=pages)
        before = old.get(pdf.name) or _old_title(pdf)
        print(
            f"| {pdf.name[:40]} | {before[:90]} | {card.title[:90]} | {card.doc_type} ({manifest.get(pdf.name, '?')}) "
            f"| {card.organisation[:40]} | {card.period} |"
        )


def _old_title(pdf: Path) -> str:
    """The title the PDF parser picks today: metadata, else the largest type of the first two pages
    (here over the first pages only; the parser measures body size over the whole document)."""
    from hyperfolio.cards.cover import COVER_OPTIONS
    from hyperfolio.parse import finish_document, read_pages

    data = pdf.read_bytes()
    part = read_pages(pdf, data, COVER_OPTIONS, list(range(3)))
    return finish_document(pdf, data, COVER_OPTIONS, parts=[part]).title


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=None, help="the dev data (default: $HYPERFOLIO_DATA or ../shared/data)"
    )
    parser.add_argument("--pages", type=int, default=6, help="cover pages read per document")
    parser.add_argument("--old-titles", type=Path, default=None, help="JSON {file: title} of full parses, if saved")
    args = parser.parse_args()
    root = data_root(args.data)
    if not root.is_dir():
        print(f"skipped: no dev data at {root}")
        return 0
    financebench(root, args.pages)
    mmlongbench(root, args.pages, args.old_titles)
    return 0


if __name__ == "__main__":
    sys.exit(main())
