"""Chunk packing, overlap and the section tracker."""

from __future__ import annotations

from hyperfolio.config import ParseOptions
from hyperfolio.parse.chunking import Block, blocks_to_chunks, count_tokens, pack_text
from hyperfolio.parse.tree import SectionTracker, rank_levels


def test_pack_respects_budget_and_overlap() -> None:
    sentences = [f"Sentence number {i} talks about topic {i}." for i in range(60)]
    pieces = [(" ".join(sentences[:30]), (0.0, 0.0, 10.0, 10.0)), (" ".join(sentences[30:]), (0.0, 20.0, 50.0, 30.0))]
    chunks = pack_text(pieces, max_tokens=50, overlap=12)
    assert len(chunks) > 3
    for text, _ in chunks:
        assert count_tokens(text) <= 50
        assert text.endswith(".")  # cut at sentence boundaries
    # consecutive chunks share their boundary sentence(s)
    first, second = chunks[0][0], chunks[1][0]
    assert first.split(". ")[-1].rstrip(".") in second
    # every sentence survives
    joined = " ".join(t for t, _ in chunks)
    assert all(s in joined for s in sentences)
    # bbox is the union of the blocks a chunk came from
    spanning = next(b for t, b in chunks if "number 29 " in t and "number 30 " in t)
    assert spanning == (0.0, 0.0, 50.0, 30.0)


def test_overlong_sentence_is_cut() -> None:
    chunks = pack_text([("word " * 500, None)], max_tokens=100, overlap=0)
    assert len(chunks) == 5 and all(count_tokens(t) <= 100 for t, _ in chunks)


def test_chunks_do_not_cross_sections() -> None:
    blocks = [
        Block(modality="text", text="Alpha one. Alpha two.", section_path=["A"]),
        Block(modality="text", text="Beta one.", section_path=["B"]),
        Block(modality="table", text="x | y", table=[["x", "y"]], section_path=["B"]),
        Block(modality="text", text="Beta two.", section_path=["B"]),
    ]
    chunks = blocks_to_chunks(3, blocks, ParseOptions())
    assert [(c.modality, c.section_path, c.text) for c in chunks] == [
        ("text", ["A"], "Alpha one. Alpha two."),
        ("text", ["B"], "Beta one."),
        ("table", ["B"], "x | y"),
        ("text", ["B"], "Beta two."),
    ]
    assert [c.order for c in chunks] == [0, 1, 2, 3] and {c.page for c in chunks} == {3}


def test_long_table_is_split_with_header() -> None:
    rows = [["Name", "Value"]] + [[f"item {i} with a longer label", str(i)] for i in range(120)]
    text = "\n".join(" | ".join(r) for r in rows)
    block = Block(modality="table", text=text, table=rows, table_header_rows=1, caption="Table 9: Items")
    chunks = blocks_to_chunks(1, [block], ParseOptions(chunk_tokens=100))
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.table is not None and chunk.table[0] == ["Name", "Value"]
        assert chunk.text.startswith("Table 9: Items\nName | Value")
    assert sum(len(c.table) - 1 for c in chunks if c.table) == 120


def test_section_tracker_and_levels() -> None:
    tracker = SectionTracker()
    tracker.enter(1, "Report")
    tracker.enter(2, "Methods")
    tracker.enter(3, "  Sampling ")
    assert tracker.path == ["Report", "Methods", "Sampling"]
    tracker.enter(2, "Results")
    assert tracker.path == ["Report", "Results"]
    tracker.enter(1, "Appendix")
    assert tracker.path == ["Appendix"]
    levels = rank_levels([24, 16, 16.3, 13, 11], max_levels=3)
    assert levels[24] == 1 and levels[16] == levels[16.3] == 2 and levels[13] == 3 and levels[11] == 3
