"""The whole language-model path over real HTTP: build, refine, decompose, answer, with tokens counted;
a model that fails or writes junk never sinks `add` (pages fall back offline, are recorded, and redone)."""

from __future__ import annotations

import json

import pytest
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
    from hyperfolio.llm.registry import ModelSet

    llm_server.handler = lambda request: Reply.json({"answer": "8,500 TEU"})
    settings = Settings.load(None, models={"base_url": llm_server.url, "model": "fake-model", "max_retries": 1})
    with ModelSet(settings) as models:
        chat = models.get("answer")
        short = extract_answer(chat, "Capacity of the Aurora?", "The table lists the Aurora with 8,500 TEU [1].")
    assert short == "8,500 TEU"
    assert exact_match(short, "8,500 TEU") == 1.0
    assert extract_answer(None, "q", "a long response") == "a long response"  # offline: unchanged


def test_overlapping_anchors_are_refined_in_one_call(llm_server):
    from hyperfolio.hypergraph.refine import StarEdge, group_anchors
    from hyperfolio.hypergraph.refine_model import LLMRefiner
    from hyperfolio.llm.registry import ModelSet
    from hyperfolio.model import Entity, Hyperedge

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
    from hyperfolio.hypergraph.merge import MergedEntity, MergedGraph
    from hyperfolio.hypergraph.summarise_model import DescriptionSummariser
    from hyperfolio.llm.registry import ModelSet

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


@pytest.mark.needs("graphviz")
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


# ------------------------------------------------------------------ failures, fallbacks, retries, estimates


def _settings(url: str, **models) -> Settings:
    return Settings.load(
        None,
        models={"base_url": url, "model": "fake-model", "max_retries": 0, "timeout": 5.0, **models},
        build={"anchor_min_pages": 2},
    )


def _entities(col: Collection) -> list[str]:
    doc = col.documents()[0].doc_id
    return sorted(e.name for e in col.store.get_entities(col.store.document_entities(doc)))


def test_schema_echoing_replies_fall_back_offline_and_are_recorded(tmp_path, embedder, llm_server):
    junk = {
        "entities": [{"name": "EntityReply", "type": "object"}, {"name": "#/$defs/PairReply"}],
        "high_edges": [{"members": ["EntityReply", "FactReply"], "description": "a list of items"}],
    }

    def echo(request):
        return Reply.json(junk) if "low_edges" in json.dumps(request) else respond(request)

    llm_server.handler = echo
    (tmp_path / "fleet.md").write_text(FLEET)
    col = Collection(tmp_path / "col", settings=_settings(llm_server.url), embedder=embedder)
    report = col.add([tmp_path / "fleet.md"])
    assert not report.failed
    names = _entities(col)
    assert "EntityReply" not in names and not any(n.startswith("#/") for n in names)
    assert "Rotterdam" in names  # the offline path built the pages
    offline = col.offline_parts()
    assert [(stage, item) for _, stage, item, _ in offline] == [("extract", "p.1"), ("extract", "p.2")]
    # refused by the client's content checks (llm/reply_checks.py), each page's reply and its retry
    assert all("names schema internals" in reason for *_, reason in offline)
    assert col.stats()["model_usage"]["extract"]["rejected"] == 4
    assert col.stats()["built_by"]["extract"] == {"offline": 2}
    col.close()


def test_model_down_then_back_redoes_only_the_offline_parts(tmp_path, embedder, llm_server, caplog):
    (tmp_path / "fleet.md").write_text(FLEET)
    llm_server.default = Reply.error(503, "model is loading")
    settings = _settings(llm_server.url, breaker_failures=2)
    col = Collection(tmp_path / "col", settings=settings, embedder=embedder)
    report = col.add([tmp_path / "fleet.md"])
    assert not report.failed  # the build finished offline
    assert {stage for _, stage, _, _ in col.offline_parts()} >= {"extract"}
    assert len([r for r in caplog.records if "continues offline" in r.getMessage()]) <= 2  # not one per page
    offline_names = _entities(col)
    col.close()

    # The model is back: only documents with offline-built parts are rebuilt, nothing is duplicated.
    llm_server.default = Reply("unused")
    llm_server.handler = respond
    col = Collection(tmp_path / "col", settings=settings, embedder=embedder)
    reports = col.build_graph(retry_model=True)
    assert len(reports) == 1 and reports[0].offline == 0
    assert col.offline_parts() == []
    assert col.stats()["built_by"]["extract"] == {"model": 2}
    names = _entities(col)
    assert {e["name"] for e in EXTRACTION["entities"]} <= set(names)
    assert len(names) == len(set(names))
    assert names != offline_names
    # Once everything was built by the model, a retry has nothing to do.
    assert col.build_graph(retry_model=True) == []
    col.close()

    fresh = Collection(tmp_path / "fresh", settings=settings, embedder=embedder)
    fresh.add([tmp_path / "fleet.md"])
    assert _entities(fresh) == names  # the retried graph is what a clean build with the model makes
    fresh.close()


def test_estimate_predicts_the_extraction_calls(tmp_path, embedder, llm_server):
    # Usage as the server counts it (from the prompt's length), not a fixed figure.
    llm_server.handler = lambda r: Reply.json(EXTRACTION) if "low_edges" in json.dumps(r) else respond(r)
    (tmp_path / "fleet.md").write_text(FLEET)
    col = Collection(tmp_path / "col", settings=_settings(llm_server.url), embedder=embedder)
    work = col.estimate(tmp_path / "fleet.md")
    extract = next(s for s in work.stages if s.stage == "extract")
    assert work.pages == 2 and extract.calls == 2
    assert work.seconds is not None and work.seconds > 0  # the probe measured the server's speed
    col.add([tmp_path / "fleet.md"])
    measured = col.stats()["model_usage"]["extract"]
    assert measured["calls"] == extract.calls
    assert abs(measured["prompt_tokens"] - extract.prompt_tokens) <= 0.2 * measured["prompt_tokens"], (
        measured,
        extract,
    )
    col.close()
