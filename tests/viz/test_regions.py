"""Finding what answers inside a cited block on the PDF page (viz/regions.py, viz/page.py)."""

from __future__ import annotations

import io
from pathlib import Path

import pymupdf
import pytest
from PIL import Image, ImageStat

from hyperfolio.errors import HyperfolioError
from hyperfolio.viz.page import page_regions, render_page
from hyperfolio.viz.regions import CLOSE, EXACT, fold, locate

BLOCK = (60.0, 60.0, 400.0, 200.0)


def one_page(lines: list[tuple[float, float, str]], rotate: int = 0) -> pymupdf.Document:
    doc = pymupdf.open()
    page = doc.new_page(width=500, height=700)
    for x, y, text in lines:
        page.insert_text((x, y), text, fontsize=11)
    if rotate:
        page.set_rotation(rotate)
    return doc


PARAGRAPH = [
    (70, 80, "Wind farms in the region were extended twice."),
    (70, 95, "The turbine fleet produced record out-"),
    (70, 110, "put in the third quarter of the year. Main-"),
    (70, 125, "tenance was done in spring."),
]


def brightness(picture: Image.Image, box: tuple[int, ...]) -> float:
    return sum(ImageStat.Stat(picture.crop(box)).mean) / 3


def test_fold_keeps_letters_and_digits_only():
    assert fold("Out-\nput, ﬁnal (1,850 MW)!") == "outputfinal1850mw"


def test_a_sentence_across_a_hyphenated_line_break_is_found_line_by_line():
    with one_page(PARAGRAPH) as doc:
        page = doc[0]
        [found] = locate(page, ["The turbine fleet produced record output in the third quarter of the year."], [BLOCK])
        assert found.how == EXACT and len(found.boxes) == 2  # two lines, one box each
        first, second = found.boxes
        assert first[1] < 95 < first[3] and second[1] < 110 < second[3]
        main = next(w for w in page.get_text("words") if w[4] == "Main-")
        assert second[2] < main[0]  # stops where the sentence ends, mid-line
        assert all(BLOCK[0] <= b[0] and b[2] <= BLOCK[2] and BLOCK[1] <= b[1] and b[3] <= BLOCK[3] for b in found.boxes)


def test_a_quote_worded_a_little_differently_is_found_close():
    with one_page(PARAGRAPH) as doc:
        [found] = locate(doc[0], ["the turbine fleet generated record output in the third quarter"], [BLOCK])
        assert found.how == CLOSE and len(found.boxes) == 2
        assert found.boxes[0][1] < 95 < found.boxes[0][3]


def test_a_quote_outside_the_block_or_nowhere_has_no_boxes():
    with one_page([*PARAGRAPH, (70, 400, "Storage sites opened in Iberia.")]) as doc:
        outside, nowhere = locate(doc[0], ["Storage sites opened in Iberia.", "Nothing like this is said"], [BLOCK])
        assert not outside.found and not nowhere.found and outside.how == ""
        [anywhere] = locate(doc[0], ["Storage sites opened in Iberia."])  # no block: the whole page
        assert anywhere.found


def test_a_cell_is_a_whole_number_and_taken_in_the_row_of_the_key_before_it():
    rows = [(70, 80, "North Sea"), (200, 80, "11,850"), (70, 100, "Baltic"), (200, 100, "1,850"), (300, 100, "97.3")]
    rows += [(70, 120, "Iberia"), (200, 120, "1,850")]
    with one_page(rows) as doc:
        key, value = locate(doc[0], ["Iberia", "1,850"], [BLOCK])
        assert key.found and value.found
        assert abs((key.boxes[0][1] + key.boxes[0][3]) - (value.boxes[0][1] + value.boxes[0][3])) < 2  # one row
        [lone] = locate(doc[0], ["1,850"], [(60, 70, 400, 85)])  # the first row holds 11,850 only
        assert not lone.found


def test_a_scanned_page_without_a_text_layer_falls_back_to_the_block(tmp_path: Path):
    picture = Image.new("RGB", (400, 100), "white")
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    doc = pymupdf.open()
    doc.new_page(width=500, height=700).insert_image(pymupdf.Rect(60, 60, 460, 160), stream=buffer.getvalue())
    doc.save(tmp_path / "scan.pdf")
    found = page_regions(tmp_path / "scan.pdf", 1, [BLOCK], ["The turbine fleet produced record output."])
    assert found["quotes"] == [{"quote": "The turbine fleet produced record output.", "found": None, "boxes": []}]
    plain = Image.open(io.BytesIO(render_page(tmp_path / "scan.pdf", 1, [BLOCK], 72))).convert("RGB")
    quoted = Image.open(io.BytesIO(render_page(tmp_path / "scan.pdf", 1, [BLOCK], 72, ["nowhere said"])))
    assert plain.tobytes() == quoted.convert("RGB").tobytes()  # the block drawn as without a quote


def test_boxes_on_a_rotated_page_are_on_the_page_as_shown(tmp_path: Path):
    with one_page(PARAGRAPH, rotate=90) as doc:
        doc.save(tmp_path / "turned.pdf")
    with pymupdf.open(tmp_path / "turned.pdf") as doc:
        page = doc[0]
        shown = page.search_for("record")[0] * page.rotation_matrix  # search_for: the unrotated page
        [found] = locate(page, ["record"])
        assert found.found and pymupdf.Rect(found.boxes[0]).contains(shown.tl + (1, 1))
        assert page.rect.contains(pymupdf.Rect(found.boxes[0]))


def test_the_picture_marks_the_quote_more_strongly_than_the_block(tmp_path: Path):
    with one_page(PARAGRAPH) as doc:
        doc.save(tmp_path / "p.pdf")
    quote = "The turbine fleet produced record output in the third quarter of the year."
    marked = Image.open(io.BytesIO(render_page(tmp_path / "p.pdf", 1, [BLOCK], 72, [quote]))).convert("RGB")
    block_only = Image.open(io.BytesIO(render_page(tmp_path / "p.pdf", 1, [BLOCK], 72))).convert("RGB")
    [found] = page_regions(tmp_path / "p.pdf", 1, [BLOCK], [quote])["quotes"]
    line = tuple(round(v) for v in found["boxes"][0])  # at 72 dpi a point is a pixel
    blank = (330, 150, 390, 190)  # in the block, below the text
    assert brightness(marked, line) < brightness(block_only, line)  # the quote's lines marked more strongly
    assert brightness(marked, blank) > brightness(block_only, blank)  # and the block around them lighter
    assert brightness(block_only, blank) < 255  # (which is still tinted)
    with pytest.raises(HyperfolioError, match="four numbers"):
        page_regions(tmp_path / "p.pdf", 1, [(1.0, 2.0, 3.0)], [quote])
    with pytest.raises(HyperfolioError, match="no page 3"):
        page_regions(tmp_path / "p.pdf", 3, [], [quote])
