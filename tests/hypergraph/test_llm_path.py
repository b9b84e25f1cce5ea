"""The language-model path of the hypergraph build and answer, over real HTTP against the fake server."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest
from fake_openai_server import Reply

from hyperfolio import Collection, Settings
from hyperfolio.answer.extractive import ExtractiveAnswerer
from hyperfolio.answer.model import LLMAnswerer
from hyperfolio.config import BuildOptions, ModelOptions, ParseOptions
from hyperfolio.hypergraph.extract import HIGH, LOW, REFINE, PageUnit
from hyperfolio.hypergraph.extract_model import LLMExtractor
from hyperfolio.hypergraph.extract_offline import OfflineExtractor
from hyperfolio.hypergraph.refine import PageContext, StarEdge
from hyperfolio.hypergraph.refine_model import LLMRefiner
from hyperfolio.llm.openai_compat import OpenAICompatClient
from hyperfolio.llm.usage import UsageMeter, read_usage
from hyperfolio.model import Chunk, Citation, Entity, EvidenceItem, EvidencePackage, Hyperedge
from hyperfolio.parse import parse_file
from hyperfolio.retrieve.keywords import decompose
from hyperfolio.retrieve.keywords_model import llm_decompose

DOC = (
    "# Fleet Report\n\n## Operations\n\n"
    "The Osprey Shipping Company operates container vessels from Rotterdam.\n\n"
    "| Vessel | Capacity (TEU) |\n| --- | --- |\n| Aurora | 8,500 |\n| Borealis | 9,200 |\n"
    "\f\n## Outlook\n\n"
    "Rotterdam remains the home port of the Osprey Shipping Company, which expects 450,000 TEU in 2024.\n"
)

PAGE_1 = {
    "entities": [
        {"name": "Osprey Shipping Company", "type": "Organization", "modality": "text", "chunk_refs": [2]},
        {"name": "Rotterdam", "type": "location", "aliases": ["Port of Rotterdam"], "chunk_refs": ["2"]},
        {"name": "Aurora", "type": "vessel", "modality": "table", "chunk_refs": [3]},
        {"name": "Capacity (TEU)", "type": "table_header", "modality": "table", "chunk_refs": [3]},
        {"name": "8,500", "type": "quantity", "modality": "table", "chunk_refs": [3, 99]},
    ],
    "low_edges": [
        {
            "source": "Osprey Shipping Company",
            "target": "Port of Rotterdam",
            "description": "operates container vessels from",
            "keywords": ["operations"],
            "strength": 8,
        },
        {"source": "Osprey Shipping Company", "target": "Atlantis", "description": "not on the page"},
    ],
    "high_edges": [
        {
            "members": ["Aurora", "Capacity (TEU)", "8,500"],
            "description": "Aurora has a capacity of 8,500 TEU",
            "keywords": ["capacity"],
            "chunk_refs": [3],
        },
        {"members": ["Borealis", "Capacity (TEU)"], "description": "Borealis is listed by capacity"},
    ],
}
PAGE_2 = {
    "entities": [
        {"name": "Rotterdam", "type": "location"},
        {"name": "Osprey Shipping Company", "type": "organization"},
        {"name": "450,000 TEU", "type": "quantity", "chunk_refs": [1]},
    ],
    "low_edges": [],
    "high_edges": [
        {
            "members": ["Rotterdam", "Osprey Shipping Company", "450,000 TEU"],
            "description": "Osprey expects 450,000 TEU from its home port Rotterdam in 2024",
        }
    ],
}
REFINED = {
    "relations": [
        {
            "members": ["osprey shipping company", "Rotterdam", "450,000 TEU", "Atlantis"],
            "description": "Osprey operates from Rotterdam and expects 450,000 TEU there in 2024",
            "keywords": ["home port", "outlook"],
            "strength": 0.9,
            "sources": [1],
        },
        {"members": ["Atlantis"], "description": "nothing the star knows"},
    ]
}


def schema_name(request: dict) -> str:
    return ((request.get("response_format") or {}).get("json_schema") or {}).get("name", "")


def user_text(request: dict) -> str:
    content = request["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


def fast_client(server, usage: UsageMeter | None = None, role: str = "chat") -> OpenAICompatClient:
    return OpenAICompatClient(
        server.url,
        "fake-model",
        role=role,
        timeout=2.0,
        max_retries=0,
        backoff=0.001,
        max_retry_wait=0.1,
        structured="json_schema",
        usage=usage,
    )


@pytest.fixture
def units(tmp_path) -> list[PageUnit]:
    path = tmp_path / "fleet.md"
    path.write_text(DOC)
    doc = parse_file(path, ParseOptions())
    by_page: dict[int, list[Chunk]] = {}
    for chunk in doc.chunks:
        chunk.doc_id = "doc1"
        chunk.chunk_id = f"doc1:{chunk.page}:{chunk.order}"
        by_page.setdefault(chunk.page, []).append(chunk)
    return [PageUnit("doc1", doc.title, page, chunks) for page, chunks in sorted(by_page.items())]


@pytest.fixture
def meter():
    with UsageMeter() as usage:
        yield usage


@pytest.fixture
def client(llm_server, meter):
    made = fast_client(llm_server, meter)
    yield made
    made.close()


def extraction_handler(page_2=None):
    def handle(request: dict):
        if schema_name(request) != "PageExtraction":
            return Reply.error(400, "unexpected request")
        text = user_text(request)
        if "Page: 1" in text:
            return Reply.json(PAGE_1)
        return page_2 if page_2 is not None else Reply.json(PAGE_2, fenced=True)

    return handle


def by_name(graph):
    return {e.name: e for e in graph.entities}


def test_extractor_maps_entities_edges_and_chunk_refs(llm_server, client, units, meter):
    llm_server.handler = extraction_handler()
    extractor = LLMExtractor(client)
    graphs = extractor.extract_document(units)
    assert [g.page for g in graphs] == [1, 2]
    assert extractor.fallback_pages == 0 and extractor.pages == 2

    page1 = by_name(graphs[0])
    assert page1["Osprey Shipping Company"].chunks == ["doc1:1:1"]
    assert page1["Osprey Shipping Company"].type == "organization"
    assert page1["Rotterdam"].aliases == ["Port of Rotterdam"]
    assert page1["Aurora"].modality == "table" and page1["Aurora"].chunks == ["doc1:1:2"]
    assert page1["8,500"].chunks == ["doc1:1:2"]  # the out-of-range ref 99 is dropped
    assert "Atlantis" not in page1  # not on the page: its edge is dropped
    assert "Borealis" in page1  # named on the page but not listed: added to keep its edge

    edges = {tuple(e.members): e for e in graphs[0].edges}
    pair = edges[("Osprey Shipping Company", "Rotterdam")]  # the alias resolved to the entity
    assert pair.level == LOW and pair.strength == pytest.approx(0.8)
    assert pair.chunks == ["doc1:1:1"]  # no refs given: the members' chunks
    row = edges[("Aurora", "Capacity (TEU)", "8,500")]
    assert row.level == HIGH and row.chunks == ["doc1:1:2"]
    assert edges[("Borealis", "Capacity (TEU)")].level == LOW  # two members: coerced to low
    assert not any("Atlantis" in e.members for e in graphs[0].edges)

    page2 = by_name(graphs[1])
    page2_chunks = [c.chunk_id for c in units[1].chunks]
    assert page2["Rotterdam"].chunks == page2_chunks  # no refs: every chunk of the page
    assert page2["450,000 TEU"].chunks == ["doc1:2:0"]
    assert graphs[1].edges[0].level == HIGH

    # Pages go out concurrently, so the first page's request is found by its content, not its position.
    prompt = next(t for t in map(user_text, llm_server.chat_requests) if "Page: 1" in t)
    assert "Document: Fleet Report" in prompt and "Section: Fleet Report > Operations" in prompt
    assert "[3] (table)" in prompt and "Aurora | 8,500" in prompt
    assert meter.snapshot()["extract"].calls == 2


def test_unrepairable_page_falls_back_to_offline(llm_server, client, units):
    llm_server.handler = extraction_handler(page_2=Reply("entities: {{{ not json at all"))
    extractor = LLMExtractor(client)
    graphs = extractor.extract_document(units)
    assert extractor.fallback_pages == 1 and len(extractor.errors) == 1
    assert "doc1 p.2" in extractor.errors[0]
    assert "Aurora" in by_name(graphs[0])  # page 1 still came from the model
    offline = OfflineExtractor().extract_document(units)[1]
    assert [e.name for e in graphs[1].entities] == [e.name for e in offline.entities]
    assert [e.description for e in graphs[1].edges] == [e.description for e in offline.edges]
    # The client asked once and once more with the parse error before giving up on page 2.
    page2 = [r for r in llm_server.chat_requests if "Page: 2" in r["messages"][1]["content"]]
    assert len(page2) == 2 and "cannot be used" in user_text(page2[1])


def test_figures_go_to_the_vision_model(llm_server, client, units):
    figure = Chunk(
        1, 9, "image", "Figure 1: TEU by year", caption="Figure 1: TEU by year", image_path="images/d/p1-9.png"
    )
    figure.chunk_id, figure.doc_id = "doc1:1:9", "doc1"
    units[0].chunks.append(figure)
    seen: list[str] = []

    def handle(request: dict):
        if "response_format" not in request:  # the vision call: plain text with an image part
            parts = request["messages"][-1]["content"]
            assert any(p.get("type") == "image_url" for p in parts)
            return Reply("A bar chart of container volume: 400,000 TEU in 2022 and 412,000 TEU in 2023.")
        seen.append(user_text(request))
        return Reply.json({"entities": [], "low_edges": [], "high_edges": []})

    llm_server.handler = handle

    def resolve(path: str) -> bytes | None:
        seen.append(path)
        return b"\x89PNG\r\n\x1a\n fake"

    kept: dict[str, str] = {}
    extractor = LLMExtractor(client, vision=client, resolve_image=resolve, keep_note=kept.__setitem__)
    extractor.extract_document(units)
    assert seen[0] == "images/d/p1-9.png"
    page1 = next(t for t in seen[1:] if "Page: 1" in t)
    assert "(figure)" in page1 and "412,000 TEU in 2023" in page1
    # The description is kept with the chunk, so answerers read the figure the same way later.
    assert "412,000 TEU in 2023" in kept["doc1:1:9"]
    figure.meta["description"] = kept["doc1:1:9"]
    from hyperfolio.answer.model import chunk_body
    from hyperfolio.model import EvidenceItem

    body = chunk_body(EvidenceItem(chunk=figure, score=1.0, rank=1, citation=None))  # type: ignore[arg-type]
    assert "What it shows (vision model): A bar chart" in body
    # Text only (the ablation): neither the table nor the figure is shown.
    llm_server.reset()
    LLMExtractor(client, multimodal=False).extract_document(units)
    prompts = [user_text(r) for r in llm_server.chat_requests]
    assert prompts and not any("(table)" in p or "(figure)" in p for p in prompts)


def star_edge(edge_id, level, members, description, pages):
    edge = Hyperedge(edge_id, level, description, [], 1.0, [(m, "member") for m, _ in members])
    chunks = [(f"doc1:{p}:0", "doc1", p) for p in pages]
    return StarEdge(edge, dict(members), chunks)


def test_refiner_maps_names_back_to_entity_ids(llm_server, client, meter):
    requests: list[dict] = []

    def handle(request):
        requests.append(request)
        return Reply.json(REFINED)

    llm_server.handler = handle
    anchor = Entity("E-rot", "Rotterdam", "location", "home port")
    star = [
        star_edge("H1", LOW, [("E-rot", "Rotterdam"), ("E-osp", "Osprey Shipping Company")], "operates from", [1]),
        star_edge(
            "H2",
            HIGH,
            [("E-rot", "Rotterdam"), ("E-osp", "Osprey Shipping Company"), ("E-450", "450,000 TEU")],
            "expects 450,000 TEU in 2024",
            [2],
        ),
    ]
    refiner = LLMRefiner(client)
    edges = refiner.refine_anchor(anchor, star)
    assert len(edges) == 1  # the relation naming only an unknown entity is dropped
    edge = edges[0]
    assert edge.level == REFINE and edge.members == ["E-rot", "E-osp", "E-450"]
    assert edge.roles == {"E-rot": "anchor"}
    assert edge.chunks == ["doc1:2:0"]  # from the cited relation [1]: the group edge, listed first
    assert edge.keywords == ["home port", "outlook"]

    context = PageContext("doc1", 2, [star[1]], [star[0]])
    page_edges = refiner.refine_page(context)
    assert page_edges[0].members == ["E-osp", "E-rot", "E-450"] and page_edges[0].roles == {}
    anchor_prompt, page_prompt = (user_text(r) for r in requests)
    assert requests[0]["messages"][0] == requests[1]["messages"][0]  # one system prompt for both
    assert "[1] high | pages: D1 p.2 | members: Rotterdam; Osprey Shipping Company; 450,000 TEU" in anchor_prompt
    assert "[2] low | pages: D1 p.1 | members: Rotterdam; Osprey Shipping Company | operates from" in anchor_prompt
    assert "Relations on the neighbouring pages:" in page_prompt and "D1 p.1" in page_prompt
    assert meter.snapshot()["refine"].calls == 2

    llm_server.handler = lambda request: Reply.error(500, "down")
    fallback = refiner.refine_anchor(anchor, star)
    assert refiner.fallbacks == 1 and fallback and fallback[0].members[0] == "E-rot"


def test_llm_decompose_and_its_fallback(llm_server, client, meter):
    question = "How many TEU did the Osprey Shipping Company carry in 2023?"
    reply = {"low": ["Osprey Shipping Company", "TEU", "2023", "osprey shipping company ", ""], "high": ["volume"]}
    llm_server.script(Reply.json(reply))
    keywords = llm_decompose(client, question, max_keywords=3)
    assert keywords.low == ["Osprey Shipping Company", "TEU", "2023"]
    assert keywords.high == ["volume"]
    assert "Question: How many TEU" in user_text(llm_server.chat_requests[0])
    assert meter.snapshot()["keywords"].calls == 1

    llm_server.script(Reply.error(503, "overloaded"))
    assert llm_decompose(client, question, 3) == decompose(question, 3)


def evidence_package() -> EvidencePackage:
    texts = [
        ("text", "Rotterdam remains the home port of the Osprey Shipping Company."),
        ("table", "Vessel | Capacity (TEU)\nAurora | 8,500"),
        ("text", "The company expects 450,000 TEU in 2024."),
    ]
    items = []
    for rank, (modality, text) in enumerate(texts, 1):
        table = [["Vessel", "Capacity (TEU)"], ["Aurora", "8,500"]] if modality == "table" else None
        chunk = Chunk(rank, 0, modality, text, table=table, table_header_rows=1 if table else 0)
        chunk.chunk_id, chunk.doc_id = f"doc1:{rank}:0", "doc1"
        citation = Citation("doc1", "Fleet Report", rank, None, [], chunk.chunk_id, modality)
        items.append(EvidenceItem(chunk, 1.0 / rank, rank, citation))
    return EvidencePackage("What is the capacity of the Aurora?", "dual", items)


def test_llm_answerer_cites_and_falls_back(llm_server, client, meter):
    evidence = evidence_package()
    question = evidence.question
    answerer = LLMAnswerer(client, ExtractiveAnswerer())
    llm_server.script(Reply.json({"answer": "8,500 TEU [2].", "citations": [2, 7], "sufficient": True}))
    answer = answerer.answer(question, evidence)
    assert answer.answerer == "llm" and answer.sufficient
    assert [c.chunk_id for c in answer.citations] == ["doc1:2:0"]
    assert answer.support == ["8,500 TEU."] and answer.text == "8,500 TEU. [1]"
    prompt = user_text(llm_server.chat_requests[0])
    assert "[2]>\nFleet Report | page 2 | table" in prompt and "Aurora | 8,500" in prompt
    assert meter.snapshot()["answer"].calls == 1
    # The offline reading comes first: the expected kind, the likely answer and the chunk it is read from.
    assert "Expected answer: " in prompt
    selected = prompt.index("found without a model")
    assert selected < prompt.index("Source chunks:")
    assert "likely answer: 8,500" in prompt[selected:] and "[2] Aurora, Capacity (TEU): 8,500" in prompt[selected:]

    llm_server.script(Reply.error(500, "boom"))
    failed = answerer.answer(question, evidence)
    assert failed.answerer.startswith("extractive (model failed: HTTP 500")
    assert failed.citations and failed.citations[0].chunk_id == "doc1:2:0"

    llm_server.script(Reply.json({"answer": "8,500", "citations": [], "sufficient": True}))
    assert answerer.answer(question, evidence).answerer == "extractive (model failed: no valid citations)"

    llm_server.script(Reply.json({"answer": "Not stated.", "citations": [], "sufficient": False}))
    insufficient = answerer.answer(question, evidence)
    assert not insufficient.sufficient and insufficient.answerer == "llm" and not insufficient.citations


class HashEmbedder:
    """Bag of hashed words: enough for retrieval in a test, and nothing to load."""

    name = "test-hash"
    dim = 64

    def embed(self, texts):
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                vectors[row, zlib.crc32(word.encode()) % self.dim] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1.0, norms)


def test_end_to_end_tokens_counted_per_stage(llm_server, tmp_path):
    def handle(request: dict):
        name = schema_name(request)
        if name == "PageExtraction":
            return Reply.json(PAGE_1 if "Page: 1" in user_text(request) else PAGE_2)
        if name == "RefineReply":
            return Reply.json(REFINED)
        if name == "KeywordReply":
            return Reply.json({"low": ["Aurora"], "high": ["vessel capacity"]})
        return Reply.json({"answer": "8,500 TEU", "citations": [1], "sufficient": True})

    llm_server.handler = handle
    (tmp_path / "fleet.md").write_text(DOC)
    options = ModelOptions(base_url=llm_server.url, model="fake-model", timeout=2.0, max_retries=0)
    settings = Settings(
        embedder=HashEmbedder.name,
        build=BuildOptions(graph_embedder=HashEmbedder.name, anchor_min_pages=2),
        models=options,
    )
    # A collection with models configured builds and answers through the language-model path.
    col = Collection(tmp_path / "col", settings=settings, embedder=HashEmbedder())
    models = col.models  # one ModelSet: usage and cache live in the collection database
    try:
        report = col.add(tmp_path / "fleet.md")
        assert report.results[0].status == "added", report.results[0].reason
        graph = col.last_graph_report
        assert graph is not None and graph.refine.anchors >= 2 and graph.refine.edges_added >= 1
        keywords = llm_decompose(models.get("keywords"), "What is the capacity of the Aurora?")
        assert keywords.low == ["Aurora"]
        assert isinstance(col.parts.get("extractor"), LLMExtractor) and isinstance(col.parts.get("refiner"), LLMRefiner)
        assert isinstance(col.answerer, LLMAnswerer)
        answer = col.ask("What is the capacity of the Aurora?", mode="dual", k=5)
        assert answer.answerer == "llm" and answer.citations
        usage = models.snapshot()
        for stage in ("extract", "refine", "keywords", "answer"):
            assert usage[stage].calls >= 1 and usage[stage].prompt_tokens > 0, stage
            assert usage[stage].completion_tokens > 0 and not usage[stage].estimated, stage
        assert set(read_usage(col.path)) >= {"extract", "refine", "keywords", "answer"}
        assert json.loads(json.dumps(col.stats()["model_usage"]))["refine"]["calls"] >= 1
    finally:
        col.close()  # closes its ModelSet too


def test_answer_and_extraction_prompts_fit_a_small_context(llm_server, client, units):
    from hyperfolio.llm.server_profile import ServerProfile
    from hyperfolio.llm.usage import estimate_tokens

    client.link.profile = ServerProfile(client.base_url, client.model, context_tokens=1024)
    long = evidence_package()
    for item in long.items:
        item.chunk.text = "The Aurora carries containers between Rotterdam and Lisbon every week. " * 60
    long.items = long.items * 4  # twelve long chunks: far more than 1,024 tokens
    answerer = LLMAnswerer(client, ExtractiveAnswerer())
    assert estimate_tokens(answerer.messages(long.question, long)) < 1024 - 150  # room left for the reply

    extractor = LLMExtractor(client)
    room, reply_tokens = extractor.page_room(client.profile)
    chunks = [c for c in units[0].chunks if extractor.usable(c)]
    for chunk in chunks:
        chunk.text = chunk.text * 30  # a page far too long for one call
    parts = extractor.plan(chunks, room)
    assert len(parts) > 1  # split into several calls, none dropped
    assert sum(len(p) for p in parts) == len(chunks)
    for part in parts:
        assert estimate_tokens(extractor.messages(units[0], part, room)) + reply_tokens <= 1024


def test_auto_ranks_from_offline_keywords_whatever_model_is_configured(llm_server, tmp_path):
    """`auto` was fitted on features from offline keywords: with a keywords model configured (one that
    answers with unrelated words), it puts the same evidence first, and never asks the model."""

    def handle(request: dict):
        if schema_name(request) == "KeywordReply":
            return Reply.json({"low": ["Borealis", "Rotterdam"], "high": ["home port outlook"]})
        return Reply.error(400, "only keywords are asked here")

    llm_server.handler = handle
    (tmp_path / "fleet.md").write_text(DOC)
    build = BuildOptions(graph_embedder=HashEmbedder.name, anchor_min_pages=2)
    question = "What is the capacity of the Aurora?"
    offline = Collection(
        tmp_path / "col", settings=Settings(embedder=HashEmbedder.name, build=build), embedder=HashEmbedder()
    )
    try:
        assert offline.add(tmp_path / "fleet.md").results[0].status == "added"
        expected = [item.chunk.chunk_id for item in offline.retrieve(question, mode="auto").items]
    finally:
        offline.close()
    options = ModelOptions(base_url=llm_server.url, model="fake-model", timeout=2.0, max_retries=0)
    settings = Settings(embedder=HashEmbedder.name, build=build, models=options)
    with Collection(tmp_path / "col", settings=settings, embedder=HashEmbedder()) as col:
        ranked = col.retrieve(question, mode="auto")
        assert [item.chunk.chunk_id for item in ranked.items] == expected
        assert "keywords" not in col.models.snapshot()  # auto did not ask the model
        col.retrieve(question, mode="dual")  # the graph strategies do use the model's keywords
        assert col.models.snapshot()["keywords"].calls == 1


def test_the_short_answer_is_read_out_of_a_models_reply(llm_server, client):
    evidence = evidence_package()
    answerer = LLMAnswerer(client, ExtractiveAnswerer())
    llm_server.script(
        Reply.json({"answer": "The Aurora can carry 8,500 TEU, the fleet's report says.", "citations": [2]})
    )
    answer = answerer.answer("How many TEU can the Aurora carry?", evidence)
    assert answer.answerer == "llm" and answer.short == "8,500"
    llm_server.script(Reply.json({"answer": "Yes, Rotterdam is its home port.", "citations": [1]}))
    assert answerer.answer("Is Rotterdam the home port of the company?", evidence).short == "Yes"
