"""The whole language-model path over real HTTP: build, refine, decompose, answer, with tokens counted."""

from __future__ import annotations

import json

from fake_openai_server import Reply

from hyperfolio import Collection, Settings

FLEET = (
    "# Fleet Report\n\n## Operations\n\nThe Osprey Shipping Company runs its fleet from Rotterdam.\n\n"
    "| Vessel | Capacity (TEU) |\n| --- | --- |\n| Aurora | 8,500 |\n\f\n## Outlook\n\n"
    "Rotterdam stays the home port of the Osprey Shipping Company and the Aurora.\n"
)

EXTRACTION = {
    "entities": [
        {
            "name": "Osprey Shipping Company",
            "type": "organization",
            "description": "a shipping line",
            "modality": "text",
            "chunk_refs": [1],
        },
        {"name": "Rotterdam", "type": "place", "description": "home port", "modality": "text", "chunk_refs": [1]},
        {"name": "Aurora", "type": "vessel", "description": "a container ship", "modality": "table", "chunk_refs": [1]},
    ],
    "low_edges": [
        {
            "source": "Osprey Shipping Company",
            "target": "Rotterdam",
            "description": "Osprey Shipping Company is based in Rotterdam",
            "keywords": ["home port"],
            "strength": 0.9,
            "chunk_refs": [1],
        }
    ],
    "high_edges": [
        {
            "members": ["Osprey Shipping Company", "Rotterdam", "Aurora"],
            "description": "The Aurora sails for Osprey Shipping Company out of Rotterdam",
            "keywords": ["fleet"],
            "chunk_refs": [1],
        }
    ],
}
REFINED = {
    "relations": [
        {
            "members": ["Osprey Shipping Company", "Aurora"],
            "description": "Across the report the Aurora is the Osprey flagship based in Rotterdam",
            "keywords": ["flagship"],
            "strength": 0.8,
            "sources": [1, 2],
        }
    ]
}
KEYWORDS = {"low": ["Aurora", "Capacity (TEU)"], "high": ["vessel capacity"]}
ANSWER = {"answer": "The Aurora carries 8,500 TEU.", "citations": [1], "sufficient": True}


def respond(request: dict) -> Reply:
    """Reply by what the request asks for, recognised from its schema or prompt."""
    text = json.dumps(request)
    if "key_entities" in text:
        theme = {"theme": "Osprey's fleet and its home port", "key_entities": ["Osprey Shipping Company", "Rotterdam"]}
        return Reply.json(theme, usage={"prompt_tokens": 80, "completion_tokens": 20, "total_tokens": 100})
    if "low_edges" in text:
        return Reply.json(EXTRACTION, usage={"prompt_tokens": 400, "completion_tokens": 120, "total_tokens": 520})
    if "sufficient" in text:
        return Reply.json(ANSWER, usage={"prompt_tokens": 500, "completion_tokens": 30, "total_tokens": 530})
    if "relations" in text:
        return Reply.json(REFINED, usage={"prompt_tokens": 300, "completion_tokens": 60, "total_tokens": 360})
    return Reply.json(KEYWORDS, usage={"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70})


def test_language_model_path_end_to_end(tmp_path, embedder, llm_server):
    llm_server.handler = respond
    (tmp_path / "fleet.md").write_text(FLEET)
    settings = Settings.load(
        None,
        models={"base_url": llm_server.url, "model": "fake-model", "max_retries": 1},
        build={"anchor_min_pages": 2},  # a two-page document
    )
    col = Collection(tmp_path / "col", settings=settings, embedder=embedder)
    report = col.add([tmp_path / "fleet.md"])
    assert report.results[0].status == "added", report.results[0].reason

    entities = {e.name for e in col.store.get_entities(col.store.document_entities(report.results[0].doc_id))}
    assert {"Osprey Shipping Company", "Rotterdam", "Aurora"} <= entities
    graph = col.stats()
    assert graph["hyperedges_by_level"].get("refine", 0) >= 1
    themes = col.store.get_hyperedges(col.store.hyperedges_of_level(report.results[0].doc_id, "theme"))
    assert themes and all(t.description == "Osprey's fleet and its home port" for t in themes)  # the model's themes
    names = {e.entity_id: e.name for e in col.store.get_entities([m for t in themes for m, _ in t.members])}
    assert {"Osprey Shipping Company", "Rotterdam"} <= set(names.values())

    answer = col.ask("What is the capacity of the Aurora?", mode="dual")
    assert answer.answerer == "llm"
    assert "8,500" in answer.text
    assert answer.citations and answer.citations[0].title == "Fleet Report"
    assert answer.evidence.meta["keywords"]["low"] == ["Aurora", "Capacity (TEU)"]

    usage = col.stats()["model_usage"]
    for stage in ("extract", "refine", "keywords", "answer", "themes"):
        assert usage[stage]["calls"] >= 1, (stage, usage)
        assert usage[stage]["prompt_tokens"] > 0, (stage, usage)
    assert usage["extract"]["prompt_tokens"] >= 800  # two pages, 400 tokens each as the server reported
    col.close()

    # A rebuild of the same content is served from the response cache: no new requests.
    before = len(llm_server.chat_requests)
    again = Collection(tmp_path / "col", settings=settings, embedder=embedder)
    again.store.clear_graph()
    again.build_graph()
    assert len(llm_server.chat_requests) == before
    assert again.stats()["model_usage"]["extract"]["cache_hits"] >= 2
    again.close()


def test_answer_extraction_step_for_exact_match(llm_server):
    from hyperfolio.eval.extraction import extract_answer
    from hyperfolio.eval.metrics import exact_match
    from hyperfolio.models.registry import ModelSet

    llm_server.handler = lambda request: Reply.json({"answer": "8,500 TEU"})
    settings = Settings.load(None, models={"base_url": llm_server.url, "model": "fake-model", "max_retries": 1})
    with ModelSet(settings) as models:
        chat = models.get("answer")
        short = extract_answer(chat, "Capacity of the Aurora?", "The table lists the Aurora with 8,500 TEU [1].")
    assert short == "8,500 TEU"
    assert exact_match(short, "8,500 TEU") == 1.0
    assert extract_answer(None, "q", "a long response") == "a long response"  # offline: unchanged


def test_overlapping_anchors_are_refined_in_one_call(llm_server):
    from hyperfolio.build.refine import StarEdge, group_anchors
    from hyperfolio.build.refine_llm import LLMRefiner
    from hyperfolio.model import Entity, Hyperedge
    from hyperfolio.models.registry import ModelSet

    def star(edge_id: str, members: dict[str, str], page: int) -> StarEdge:
        edge = Hyperedge(
            edge_id,
            "low",
            f"{' and '.join(members.values())} on page {page}",
            [],
            1.0,
            [(m, "member") for m in members],
        )
        return StarEdge(edge, members, [(f"d:{page}:0", "d", page)])

    shared = star("H1", {"E1": "Rotterdam", "E2": "Osprey"}, 1)
    stars = {
        "E1": [shared, star("H2", {"E1": "Rotterdam", "E3": "Aurora"}, 3)],
        "E2": [shared, star("H3", {"E2": "Osprey", "E3": "Aurora"}, 4)],
    }
    assert group_anchors(["E2", "E1"], stars, max_anchors=8, max_edges=32) == [["E1", "E2"]]
    assert group_anchors(["E2", "E1"], stars, max_anchors=1, max_edges=32) == [["E1"], ["E2"]]

    llm_server.handler = lambda request: Reply.json(
        {
            "relations": [
                {"members": ["Rotterdam", "Aurora"], "description": "Aurora is based in Rotterdam", "sources": [1, 2]},
                {"members": ["Osprey", "Aurora"], "description": "Osprey owns the Aurora", "sources": [3]},
                {"members": ["Aurora"], "description": "no anchor here"},
            ]
        }
    )
    settings = Settings.load(None, models={"base_url": llm_server.url, "model": "fake-model", "max_retries": 1})
    with ModelSet(settings) as models:
        refiner = LLMRefiner(models.get("extract"))
        anchors = [(Entity("E1", "Rotterdam"), stars["E1"]), (Entity("E2", "Osprey"), stars["E2"])]
        result = refiner.refine_group(anchors)
    assert len(llm_server.chat_requests) == 1  # one call for both anchors
    prompt = json.dumps(llm_server.chat_requests[0])
    assert prompt.count("Rotterdam and Osprey on page 1") == 1  # the shared relation is listed once
    assert [e.description for e in result["E1"]] == ["Aurora is based in Rotterdam"]
    assert [e.description for e in result["E2"]] == ["Osprey owns the Aurora"]
    assert result["E1"][0].members[:2] == ["E1", "E3"]


def test_merged_descriptions_are_summarised_by_the_model(llm_server):
    from hyperfolio.build.merge import MergedEntity, MergedGraph
    from hyperfolio.build.summarise import DescriptionSummariser
    from hyperfolio.models.registry import ModelSet

    llm_server.handler = lambda request: Reply.json({"description": "Rotterdam is Osprey's home port and hub."})
    graph = MergedGraph()
    graph.entities["E1"] = MergedEntity(
        "E1", "Rotterdam", "rotterdam", "place", "text", ["home port of Osprey", "Osprey hub", "largest port in Europe"]
    )
    graph.entities["E2"] = MergedEntity("E2", "Aurora", "aurora", "vessel", "table", ["a ship"])
    settings = Settings.load(None, models={"base_url": llm_server.url, "model": "fake-model", "max_retries": 1})
    with ModelSet(settings) as models:
        assert DescriptionSummariser(models.get("extract"))(graph) == 1
        assert models.snapshot()["merge"].calls == 1
    assert graph.entities["E1"].descriptions == ["Rotterdam is Osprey's home port and hub."]
    assert graph.entities["E2"].descriptions == ["a ship"]  # one description: nothing to merge


def test_vision_model_reads_graph_pictures_for_themes_and_top_down(tmp_path, embedder, llm_server):
    pictures: list[str] = []

    def handle(request: dict) -> Reply:
        text = json.dumps(request)
        has_image = "image_url" in text
        if "key_entities" in text:
            if has_image:
                pictures.append("theme")
            return Reply.json({"theme": "The Osprey fleet", "key_entities": ["Osprey Shipping Company"]})
        if "looked up" in text:  # top-down: which entities, from the picture of the themes
            assert has_image
            pictures.append("locate")
            return Reply.json({"entities": ["E2", "E1"]})
        if "sufficient" in text and has_image:  # the answer, from the text and the evidence's picture
            pictures.append("answer")
            assert request["model"] == "fake-vision"
        return respond(request)

    llm_server.handler = handle
    (tmp_path / "fleet.md").write_text(FLEET)
    settings = Settings.load(
        None,
        models={"base_url": llm_server.url, "model": "fake-model", "vision_model": "fake-vision", "max_retries": 0},
    )
    with Collection(tmp_path / "col", settings=settings, embedder=embedder) as col:
        doc = col.add([tmp_path / "fleet.md"]).results[0].doc_id
        assert "theme" in pictures  # the chunk's hypergraph picture went to the vision model
        evidence = col.retrieve("Where is the Osprey fleet based?", mode="topdown", doc=doc)
        assert "locate" in pictures
        assert evidence.meta["located_by_vision"]  # entities picked from the picture of the top layer
        usage = col.stats()["model_usage"]
        assert usage["locate"]["calls"] == 1 and usage["themes"]["calls"] >= 1
        plain = col.retrieve("Where is the Osprey fleet based?", mode="topdown", doc=doc, options={"visual": False})
        assert "located_by_vision" not in plain.meta and "picture" not in plain.meta
        answer = col.ask("Where is the Osprey fleet based?", mode="topdown", doc=doc)
        assert "answer" in pictures and answer.answerer == "llm"  # the vision model answered with the picture
        assert evidence.meta["render_seconds"] > 0
