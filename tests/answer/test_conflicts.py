"""Conflicting values across documents: a question asked across two filings whose statements give one
quantity two values is answered with both values, both documents and both pages cited; different
quantities, the same value, different years or different organisations give no conflict line; a model
is shown the conflicts and told to give both, and its answer's meta carries them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fake_openai_server import Reply
from tests.conftest import write_filing

from hyperfolio import Collection
from hyperfolio.answer.conflicts import (
    DocInfo,
    can_disagree,
    cross_document_decisions,
    find_conflicts,
    named_quantity,
    rounded_alike,
)
from hyperfolio.answer.extractive import ExtractiveAnswerer
from hyperfolio.answer.model import ACROSS_RULE, CONFLICT_RULE, CONFLICTS_HEADING, LLMAnswerer
from hyperfolio.model import Chunk, Citation, Decision, EvidenceItem, EvidencePackage

NORTHWIND, CONTOSO = "NORTHWIND TRADERS CORPORATION", "CONTOSO PHARMACEUTICALS INC."
ACROSS_YEARS = "Compare Northwind's total net revenue in fiscal 2021 and fiscal 2022."


def _filing(path: Path, registrant: str, year: int, results: str) -> Path:
    return write_filing(path, registrant, year, f"Item 7. Results of Operations. {results}")


def _collection(root: Path, embedder, filings: dict[str, tuple[str, int, str]]) -> Collection:
    paths = [_filing(root / name, *facts) for name, facts in filings.items()]
    col = Collection(root / "col", embedder=embedder)
    report = col.add(paths)
    assert not report.failed, [r.reason for r in report.failed]
    return col


@pytest.fixture(scope="module")
def restated(tmp_path_factory, embedder):
    """The 2022 filing gives fiscal 2021's revenue as $4,050 million; the 2021 filing said $4,120 million."""
    col = _collection(
        tmp_path_factory.mktemp("restated"),
        embedder,
        {
            "northwind-2021.pdf": (NORTHWIND, 2021, "Total net revenue was $4,120 million in fiscal 2021."),
            "northwind-2022.pdf": (
                NORTHWIND,
                2022,
                "Total net revenue was $4,870 million in fiscal 2022. "
                "As restated, total net revenue was $4,050 million in fiscal 2021.",
            ),
            "contoso-2022.pdf": (CONTOSO, 2022, "Net sales were $9,310 million in fiscal 2022."),
        },
    )
    yield col
    col.close()


@pytest.fixture(scope="module")
def agreeing(tmp_path_factory, embedder):
    """Filings that never disagree: one value per year, the same value where two give one year, another
    quantity beside, a value for "the year" in filings of two years, and another company's revenue for
    the same year."""
    col = _collection(
        tmp_path_factory.mktemp("agreeing"),
        embedder,
        {
            "northwind-2021.pdf": (
                NORTHWIND,
                2021,
                "Total net revenue was $4,120 million in fiscal 2021. "
                "Operating income was $610 million in fiscal 2021. "
                "The company's capital expenditures for the year were $300 million.",
            ),
            "northwind-2022.pdf": (
                NORTHWIND,
                2022,
                "Total net revenue was $4,870 million in fiscal 2022. Total net revenue was $4,120 million in "
                "fiscal 2021. Operating income was $700 million in fiscal 2022. "
                "The company's capital expenditures for the year were $350 million.",
            ),
            "contoso-2022.pdf": (CONTOSO, 2022, "Total net revenue was $9,310 million in fiscal 2022."),
        },
    )
    yield col
    col.close()


def _doc(col: Collection, name: str) -> str:
    return col.resolve(name).doc_id


def test_an_answer_across_filings_that_disagree_names_both_values_documents_and_pages(restated):
    answer = restated.ask(ACROSS_YEARS)
    old, new = (restated.resolve(n) for n in ("northwind-2021.pdf", "northwind-2022.pdf"))
    lines = answer.text.split("Documents differ on ")[1:]
    assert len(lines) == 1, answer.text  # fiscal 2022's figure is a change, not a conflict
    line = lines[0]
    assert line.startswith("net revenue in 2021:"), line
    assert "$4,050 million" in line and "$4,120 million" in line
    assert f"{old.title} (p. 2) reports $4,120 million" in line and f"{new.title} (p. 2) reports $4,050 million" in line
    markers = [int(m) for m in re.findall(r"\[(\d+)\]", line)]
    assert {answer.citations[m - 1].doc_id for m in markers} == {old.doc_id, new.doc_id}
    assert {(c.doc_id, c.page) for c in answer.citations} >= {(old.doc_id, 2), (new.doc_id, 2)}
    (conflict,) = answer.meta["conflicts"]
    assert conflict["found"] == "question"
    assert {(s["doc_id"], s["page"], s["value"]) for s in conflict["sides"]} == {
        (old.doc_id, 2, "$4,120 million"),
        (new.doc_id, 2, "$4,050 million"),
    }


@pytest.mark.parametrize(
    "question",
    [
        ACROSS_YEARS,  # 2021 given the same value by both; 2022 only by one
        "Compare Northwind's operating income in fiscal 2021 and fiscal 2022.",  # one value per year
        "Compare Northwind's capital expenditures in fiscal 2021 and fiscal 2022.",  # "the year": each filing's
        "Compare the total net revenue of Northwind and Contoso in fiscal 2022.",  # two companies' own
    ],
)
def test_agreeing_filings_give_no_conflict_line(agreeing, question):
    answer = agreeing.ask(question)
    assert answer.evidence.meta.get("across_documents"), answer.evidence.meta.get("routed_to")
    assert len({c.doc_id for c in answer.citations}) >= 2  # asked across documents indeed
    assert "Documents differ" not in answer.text and "conflicts" not in answer.meta, answer.text


def test_a_question_about_one_filing_looks_for_no_conflict(restated):
    answer = restated.ask("What was Northwind's total net revenue in fiscal 2022?")
    assert not answer.evidence.meta.get("across_documents")
    assert "Documents differ" not in answer.text and "conflicts" not in answer.meta


def test_documents_of_two_organisations_or_two_periods_cannot_disagree_without_a_stated_year():
    nw21, nw22 = DocInfo("a", NORTHWIND, "FY2021"), DocInfo("b", NORTHWIND, "FY2022")
    assert not can_disagree(nw21, nw22, stated_years=False)  # a change between filings
    assert can_disagree(nw21, nw22, stated_years=True)  # both say which year: one quantity
    assert not can_disagree(nw22, DocInfo("c", CONTOSO, "FY2022"), stated_years=True)
    assert can_disagree(DocInfo("d"), DocInfo("e"), stated_years=False)  # no card: nothing says otherwise
    assert named_quantity("net revenue") and named_quantity("Aurora")
    assert not any(named_quantity(h) for h in ("2021", "$4,120 million", "Total", "Q3", "12.5%"))


def test_two_roundings_of_one_number_are_one_value():
    assert rounded_alike("$5.85 billion", "$5.9 billion") and rounded_alike("1,200", "1,200.4")
    assert not rounded_alike("$4,120 million", "$4,050 million") and not rounded_alike("12%", "13%")


def _item(doc_id: str, title: str, page: int, text: str, rank: int) -> EvidenceItem:
    chunk = Chunk(page, 0, "text", text, chunk_id=f"{doc_id}:{page}:0", doc_id=doc_id)
    return EvidenceItem(chunk, 1.0 / rank, rank, Citation(doc_id, title, page, None, [], chunk.chunk_id, "text"))


class _Decisions:
    """What `cross_document_decisions` reads of a store: the decision log, by the document that logged it."""

    def __init__(self, log: dict[str, list[Decision]]) -> None:
        self.log = log

    def decisions(self, doc_id: str | None = None) -> list[Decision]:
        return self.log.get(doc_id or "", [])


def _logged(kind: str, a: tuple[str, str], b: tuple[str, str], decisions: tuple[str, str]) -> list[Decision]:
    """One conflict as reconciliation logs it: a decision per fact, the other fact as its `other`."""
    return [
        Decision("fleet-b", kind, decisions[0], a[0], b[0], "two values", [a[1]]),
        Decision("fleet-b", kind, decisions[1], b[0], a[0], "two values", [b[1]]),
    ]


def test_stored_decisions_between_two_documents_are_surfaced_and_changes_are_not():
    mutual = _logged(
        "mutual", ("Aurora | capacity_teu | 8,500", "fleet-a:4:0"), ("Aurora | capacity_teu | 9,000", "fleet-b:7:0"),
        ("kept", "kept"),
    )  # fmt: skip
    temporal = _logged(
        "temporal", ("Aurora | crew | 20", "fleet-a:5:0"), ("Aurora | crew | 24", "fleet-b:7:0"), ("revised", "revised")
    )
    within = _logged(
        "mutual", ("Osprey | fleet_size | 12", "fleet-b:2:0"), ("Osprey | fleet_size | 14", "fleet-b:3:0"),
        ("kept", "dropped"),
    )  # fmt: skip
    duplicate = [Decision("fleet-b", "duplicate", "merged", "Aurora | flag | Malta", "Aurora | flag | Malta", "same")]
    store = _Decisions({"fleet-b": mutual + temporal + within + duplicate})
    rows = cross_document_decisions(store, ["fleet-a", "fleet-b"])  # type: ignore[arg-type]
    assert [(r["kind"], [s["chunks"][0] for s in r["sides"]]) for r in rows] == [
        ("mutual", ["fleet-a:4:0", "fleet-b:7:0"]),
        ("temporal", ["fleet-a:5:0", "fleet-b:7:0"]),
    ]  # each conflict once; one within a document and a merge are not between documents
    assert cross_document_decisions(store, ["fleet-b", "fleet-c"]) == []  # type: ignore[arg-type]
    cited = cross_document_decisions(store, ["fleet-a", "fleet-b"], {"fleet-a:4:0", "fleet-b:7:0"})  # type: ignore[arg-type]
    assert [r["kind"] for r in cited] == ["mutual"]  # only what the evidence holds both sides of

    question = "What is the Aurora's capacity and crew across both fleet registers?"
    evidence = EvidencePackage(question, "auto", meta={"across_documents": True, "cross_decisions": rows})
    evidence.items = [
        _item("fleet-a", "Fleet Register 2023", 4, "Register: the Aurora capacity across the fleet, 8,500 TEU.", 1),
        _item("fleet-a", "Fleet Register 2023", 5, "Register: the Aurora crew, 20 sailors.", 2),
        _item("fleet-b", "Harbour Survey", 7, "Survey of the Aurora: capacity 9,000 TEU and a crew of 24.", 3),
    ]
    (conflict,) = find_conflicts(question, evidence)
    assert conflict.found == "indexing" and conflict.what == "Aurora, capacity teu"
    assert [(s.title, s.page, s.value) for s in conflict.sides] == [
        ("Fleet Register 2023", 4, "8,500"),
        ("Harbour Survey", 7, "9,000"),
    ]
    answer = ExtractiveAnswerer().answer(question, evidence)
    assert "Documents differ on Aurora, capacity teu: Fleet Register 2023 (p. 4) reports 8,500;" in answer.text
    assert {c.chunk_id for c in answer.citations} >= {"fleet-a:4:0", "fleet-b:7:0"}
    evidence.items = evidence.items[1:]  # a side whose chunk is not in the evidence cannot be cited
    assert find_conflicts(question, evidence) == []


def test_a_model_is_shown_the_conflicts_and_its_answer_carries_them(restated, fake_llm, fake_client):
    evidence = restated.retrieve(ACROSS_YEARS)
    expected = [c.as_dict() for c in find_conflicts(ACROSS_YEARS, evidence)]
    assert len(expected) == 1
    fake_llm.script(Reply.json({"answer": "$4,120 million or $4,050 million", "citations": [1, 2], "sufficient": True}))
    answer = LLMAnswerer(fake_client, ExtractiveAnswerer()).answer(ACROSS_YEARS, evidence)
    (request,) = fake_llm.chat_requests
    prompt = request["messages"][-1]["content"]
    assert ACROSS_RULE in prompt and CONFLICT_RULE in prompt
    section = prompt.split(CONFLICTS_HEADING, 1)[1]
    assert "$4,120 million" in section.split("Answer the question")[0]
    for side in expected[0]["sides"]:
        assert f"{side['title']}, page {side['page']}, reports {side['value']}" in section
    assert answer.answerer == "llm" and answer.meta["conflicts"] == expected

    single = restated.retrieve("What was Northwind's total net revenue in fiscal 2022?")
    fake_llm.script(Reply.json({"answer": "$4,870 million", "citations": [1], "sufficient": True}))
    answer = LLMAnswerer(fake_client, ExtractiveAnswerer()).answer("What was it?", single)
    assert CONFLICTS_HEADING not in fake_llm.chat_requests[-1]["messages"][-1]["content"]
    assert "conflicts" not in answer.meta
