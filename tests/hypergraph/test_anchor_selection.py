"""Which boundary-crossing anchors are refined: the fewest entities that bridge every page break."""

from __future__ import annotations

from hyperfolio.hypergraph.refine import page_breaks, select_anchors


def pages_of(doc: str, *numbers: int) -> set[tuple[str, int]]:
    return {(doc, n) for n in numbers}


def test_breaks_are_adjacent_pages_and_document_links():
    pages = pages_of("A", 1, 2, 3, 7) | pages_of("B", 4)
    assert page_breaks(pages) == {("page", "A", 1), ("page", "A", 2), ("docs", "A", "B")}
    assert page_breaks(pages_of("A", 1, 3, 5)) == set()  # scattered mentions cross no boundary


def test_topic_entities_bridge_first_and_redundant_ones_are_skipped():
    pages = {
        "topic": pages_of("A", *range(1, 11)),  # runs through the whole document
        "second": pages_of("A", *range(1, 6)),
        "third": pages_of("A", 2, 3, 4),  # every break it crosses is already bridged twice
        "late": pages_of("A", 10, 11, 12),  # the only one crossing 10|11 and 11|12
        "scattered": pages_of("A", 1, 4, 8),  # on three pages but crosses no break
    }
    names = {e: e for e in pages}
    assert select_anchors(pages, names, cover=2) == ["late", "second", "topic"]
    assert select_anchors(pages, names, cover=1) == ["late", "topic"]
    assert select_anchors(pages, names, cover=3) == ["late", "second", "third", "topic"]
    assert select_anchors(pages, names, cover=0) == sorted(pages)  # every candidate


def test_chapters_need_one_anchor_each_plus_one_per_chapter_boundary():
    # A topic running through each 10-page chapter, and a term repeated on every run of three pages.
    pages = {f"topic{c}": pages_of("A", *range(c * 10 + 1, c * 10 + 11)) for c in range(8)}
    pages.update({f"term{p}": pages_of("A", p, p + 1, p + 2) for p in range(1, 79)})
    chosen = select_anchors(pages, {e: e for e in pages}, cover=1)
    boundary_terms = [e for e in chosen if e.startswith("term")]
    assert {f"topic{c}" for c in range(8)} <= set(chosen)
    assert len(boundary_terms) == 7  # one per break between chapters, none inside a chapter
    assert all({(p % 10) for p in (int(t[4:]), int(t[4:]) + 1)} & {9, 0} for t in boundary_terms)
    assert len(chosen) == 15 < len(pages) // 5
