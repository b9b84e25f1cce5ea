"""Facts, concepts and conflicts through a language model over real HTTP (the local test server)."""

from __future__ import annotations

import json

from fake_openai_server import Reply

from hyperfolio import Collection, Settings

REPORT = (
    "# Fleet Report\n\n## Operations\n\nThe Osprey fleet carries 412,000 TEU.\n"
    "\f\n## Outlook\n\nThe Osprey fleet carries 390,000 TEU, and it was founded in Rotterdam.\n"
)


def page_extraction(page: int) -> dict:
    capacity = "412,000 TEU" if page == 1 else "390,000 TEU"
    entities = [
        {"name": "Osprey fleet", "type": "fleet", "concept": "Fleet", "chunk_refs": [1]},
        {"name": capacity, "type": "quantity", "concept": "Capacity", "chunk_refs": [1]},
    ]
    facts = [{"head": "Osprey fleet", "relation": "Carries capacity", "tail": capacity, "chunk_refs": [1]}]
    if page == 2:
        entities.append({"name": "Rotterdam", "type": "place", "chunk_refs": [1]})  # no concept: offline fills it
        facts.append({"head": "Osprey fleet", "relation": "founded_in", "tail": "Rotterdam", "chunk_refs": [1]})
    return {"entities": entities, "low_edges": [], "high_edges": [], "facts": facts}


def respond(request: dict) -> Reply:
    text = json.dumps(request)
    if "low_edges" in text:
        return Reply.json(page_extraction(2 if "Page: 2" in text else 1))
    if "Which pairs conflict" in text:
        user = request["messages"][-1]["content"]
        numbers = {int(line[1 : line.index("]")]): line for line in user.splitlines() if line.startswith("[")}
        pair = [n for n, line in numbers.items() if "carries_capacity" in line]
        conflicts = [{"first": pair[0], "second": pair[1], "kind": "Mutual", "reason": "two capacities"}]
        return Reply.json({"conflicts": conflicts if len(pair) == 2 else []})
    if "decisions" in text:
        user = request["messages"][-1]["content"]
        first_is_old = "[1] (accepted)" in user or "412,000" in user.split("[2]")[0]
        keep, drop = (1, 2) if first_is_old else (2, 1)
        return Reply.json(
            {
                "decisions": [
                    {"fact": keep, "decision": "keep", "reason": "the operations section states it"},
                    {"fact": drop, "decision": "discard", "reason": "contradicted by the operations section"},
                ]
            }
        )
    return Reply.json({"low_level": [], "high_level": []})


def test_conflicts_detected_and_resolved_by_the_model(tmp_path, embedder, llm_server):
    llm_server.handler = respond
    (tmp_path / "report.md").write_text(REPORT)
    settings = Settings.load(None, models={"base_url": llm_server.url, "model": "fake-model", "max_retries": 1})
    with Collection(tmp_path / "col", settings=settings, embedder=embedder) as col:
        added = col.add([tmp_path / "report.md"]).results[0]
        assert added.status == "added", added.reason
        report = col.last_graph_report.reconcile
        assert report.conflicts == 1 and report.dropped == 1
        decisions = col.conflicts()
        dropped = next(d for d in decisions if d.decision == "dropped")
        assert "390,000 TEU" in dropped.fact and dropped.decided_by == "llm"
        assert "contradicted by the operations section" in dropped.reason
        facts = {(f.relation, f.tail_id) for f in col.store.document_facts(added.doc_id)}
        assert len(facts) == 2 and all(r in ("carries_capacity", "founded_in") for r, _ in facts)
        concepts = {e.name: e.concept for e in col.store.get_entities(col.store.document_entities(added.doc_id))}
        assert concepts["Osprey fleet"] == "Fleet" and concepts["412,000 TEU"] == "Capacity"
        assert concepts["Rotterdam"]  # filled offline when the model gave none
        usage = col.stats()["model_usage"]
        assert usage["reconcile"]["calls"] >= 2  # detection and resolution, counted under their own stage


def test_a_broken_detector_reply_falls_back_to_the_offline_rules(tmp_path, embedder, llm_server):
    def broken(request: dict) -> Reply:
        if "Which pairs conflict" in json.dumps(request):
            return Reply("this is not JSON {")
        return respond(request)

    llm_server.handler = broken
    (tmp_path / "report.md").write_text(REPORT)
    settings = Settings.load(None, models={"base_url": llm_server.url, "model": "fake-model", "max_retries": 0})
    with Collection(tmp_path / "col", settings=settings, embedder=embedder) as col:
        assert col.add([tmp_path / "report.md"]).results[0].status == "added"
        report = col.last_graph_report.reconcile
        assert report.conflicts == 1 and report.dropped == 1  # the offline rules found the same conflict
