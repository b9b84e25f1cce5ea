"""Where the answer is inside the cited block, end to end: a question asked of an indexed PDF, its
citation's quote or cells found on the page (Collection.page_regions) and marked in the page picture."""

from __future__ import annotations

import io
from pathlib import Path

import pymupdf
import pytest
from PIL import Image, ImageStat

from hyperfolio.collection import Collection
from hyperfolio.sample import SAMPLE_QUESTION, write_sample_report

SENTENCES = [
    "The Harwick grid programme connects four coastal towns to the regional transmission network.",
    "Planning began after the storms of 2014 exposed how fragile the old overhead lines had become.",
    "Engineers surveyed more than forty possible cable routes before settling on the inland corridor.",
    "Local councils raised concerns about construction traffic, which the contractor addressed with night deliveries.",
    "Funding came from a mix of national grants and a bond issued by the regional utility.",
    "The Harwick substation was commissioned in March 2019 after a six-week testing period.",
]


def inside(box: list[float], block: tuple[float, ...] | list[float], margin: float = 0.5) -> bool:
    return (
        block[0] - margin <= box[0]
        and block[1] - margin <= box[1]
        and box[2] <= block[2] + margin
        and box[3] <= block[3] + margin
    )


@pytest.fixture(scope="module")
def col(tmp_path_factory) -> Collection:
    folder = tmp_path_factory.mktemp("highlights")
    sample = write_sample_report(folder / "sample-report.pdf")
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 80), "Grid Programme", fontname="hebo", fontsize=15)
    page.insert_textbox(pymupdf.Rect(72, 100, 520, 400), " ".join(SENTENCES), fontsize=11, fontname="helv")
    doc.save(folder / "grid-report.pdf")
    with Collection(folder / "col") as opened:
        opened.add([sample, folder / "grid-report.pdf"])
        yield opened


def test_the_sample_answer_marks_the_north_sea_row_cells_inside_table_1(col: Collection):
    answer = col.ask(SAMPLE_QUESTION, mode="bm25")
    cited = answer.citations[0]
    assert cited.page == 2 and cited.modality == "table" and cited.bbox
    assert cited.cells[:2] == ["North Sea", "1,850"]
    found = col.page_regions(cited.doc_id, cited.page, [cited.bbox], cited.quotes())
    key, value = found["quotes"][:2]
    assert key["found"] == value["found"] == "exact"
    for box in key["boxes"] + value["boxes"]:
        assert inside(box, cited.bbox)
    (k0, k1), (v0, v1) = (key["boxes"][0][1::2], value["boxes"][0][1::2])
    assert abs((k0 + k1) - (v0 + v1)) < 2  # one row: the key and its value side by side
    assert key["boxes"][0][2] < value["boxes"][0][0]  # the region's name first, then the capacity
    with pymupdf.open(Path(col.resolve(cited.doc_id).source)) as pdf:
        said = pdf[1].get_text("text", clip=pymupdf.Rect(key["boxes"][0][0], k0, value["boxes"][0][2], k1))
    assert "North Sea" in said and "1,850" in said and "Baltic" not in said


def test_a_sentence_at_the_end_of_a_long_paragraph_is_marked_on_its_lines_only(col: Collection):
    answer = col.ask("When was the Harwick substation commissioned?", mode="bm25")
    assert answer.short == "March 2019"
    cited = answer.citations[0]
    assert cited.quote == SENTENCES[-1]
    [found] = col.page_regions(cited.doc_id, cited.page, [cited.bbox], cited.quotes())["quotes"]
    assert found["found"] == "exact" and 1 <= len(found["boxes"]) <= 2
    assert all(inside(box, cited.bbox) for box in found["boxes"])
    with pymupdf.open(Path(col.resolve(cited.doc_id).source)) as pdf:
        page = pdf[0]
        start = page.search_for("The Harwick substation")[0]
        paragraph = page.search_for("The Harwick grid programme")[0]
        marked = " ".join(page.get_text("text", clip=pymupdf.Rect(box)) for box in found["boxes"])
    top = min(box[1] for box in found["boxes"])
    assert top >= start.y0 - 1 and top > paragraph.y1  # not the paragraph's earlier lines
    assert (cited.bbox[3] - cited.bbox[1]) > 3 * (max(box[3] for box in found["boxes"]) - top)
    assert " ".join(marked.split()) == SENTENCES[-1]  # the sentence, nothing before it


def test_the_page_picture_marks_the_quote_inside_the_lighter_block(col: Collection):
    answer = col.ask("When was the Harwick substation commissioned?", mode="bm25")
    cited = answer.citations[0]
    [found] = col.page_regions(cited.doc_id, cited.page, [cited.bbox], cited.quotes())["quotes"]
    plain = Image.open(io.BytesIO(col.page_image(cited.doc_id, cited.page, [cited.bbox], dpi=72))).convert("RGB")
    png = col.page_image(cited.doc_id, cited.page, [cited.bbox], dpi=72, quotes=cited.quotes())
    marked = Image.open(io.BytesIO(png)).convert("RGB")
    line = tuple(round(v) for v in found["boxes"][-1])  # at 72 dpi a point is a pixel
    x0, y0, x1, _ = (round(v) for v in cited.bbox)
    heading_gap = (x1 - 60, y0 + 3, x1 - 5, y0 + 12)  # in the block beside its heading: no quote there

    def light(picture: Image.Image, box: tuple[int, ...]) -> float:
        return sum(ImageStat.Stat(picture.crop(box)).mean) / 3

    assert light(marked, line) < light(plain, line)
    assert light(marked, heading_gap) > light(plain, heading_gap)
