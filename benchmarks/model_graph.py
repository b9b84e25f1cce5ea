"""Is what a model builds at least as good as the offline graph? The sample report, built both ways.

    python benchmarks/model_graph.py --base-url http://127.0.0.1:8080/v1 --model smol
    python benchmarks/model_graph.py --model smol --server-cmd \
        "python -m llama_cpp.server --model SmolLM2-135M-Instruct.Q4_1.gguf --port 8766 --model_alias smol"

Builds the 4-page sample report offline and with the model (extraction, reconciliation, refinement
and themes on the server), then prints: entities and facts of each graph; how many of the offline
graph's table facts (head, relation, tail as names) the model graph keeps; what the model's
extraction dropped or was given (`stats` "extraction"); replies rejected as echoes or repetition per
stage; which parts the model built and which fell back; and the answers to the Baltic revenue
question in hybrid, dual and concept mode — by the model answerer and by the extractive one on the
model-built graph — with the pages they cite and whether each cited chunk contains "97.3".
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import replace
from pathlib import Path

from hyperfolio import Collection, Settings
from hyperfolio.sample import write_sample_report
from real_model import Server, _port

QUESTION = "What was the revenue of the Baltic region in 2024?"
ANSWER = "97.3"
MODES = ("hybrid", "dual", "concept")


def table_facts(col: Collection) -> set[tuple[str, str, str]]:
    """(head, relation, tail) by entity names of the facts stated in a table chunk."""
    store = col.store
    doc = col.documents()[0].doc_id
    tables = {c.chunk_id for c in store.iter_chunks(doc) if c.modality == "table"}
    rows = store.document_facts(doc)
    evidence = store.provenance("hyperedge", [f.edge_id for f in rows])
    rows = [f for f in rows if {c for c, _, _ in evidence.get(f.edge_id, [])} & tables]
    names = {e.entity_id: e.name for e in store.get_entities([i for f in rows for i in (f.head_id, f.tail_id)])}
    return {(names[f.head_id], f.relation, names[f.tail_id]) for f in rows}


def answers(col: Collection, label: str) -> None:
    for mode in MODES:
        answer = col.ask(QUESTION, mode=mode)
        texts = {item.chunk.chunk_id: item.chunk.text for item in answer.evidence.items}
        cited = [f"p.{c.page}{'+' if ANSWER in texts.get(c.chunk_id, '') else '-'}" for c in answer.citations]
        found = "yes" if ANSWER in answer.text else "no"
        print(
            f"  {label:10} {mode:8} {ANSWER} in answer: {found:3}  cites {' '.join(cited) or '-'}  by {answer.answerer}"
        )
        print(f"             {answer.text[:150]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", help="the server's /v1 URL (default: from --server-cmd's --port)")
    parser.add_argument("--model", required=True, help="the model name the server answers to")
    parser.add_argument("--server-cmd", help="a command that serves the model; the benchmark runs it")
    parser.add_argument("--max-tokens", type=int, default=0, help="reply tokens per call (0: sized to the server)")
    parser.add_argument("--out", type=Path, help="folder for the collections (default: a temp dir)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="hyperfolio-model-graph-"))
    out.mkdir(parents=True, exist_ok=True)
    document = write_sample_report(out / "sample-report.pdf")
    base_url = args.base_url or f"http://127.0.0.1:{_port(args.server_cmd or '')}/v1"
    server = Server(args.server_cmd, base_url, out / "server.log") if args.server_cmd else None
    if server is not None:
        server.start()
    try:
        offline = Collection(out / "offline")
        offline.add([document])
        reference = table_facts(offline)
        stats = offline.stats()
        facts = len(offline.store.document_facts(offline.documents()[0].doc_id))
        print(f"offline: {stats['entities']} entities, {facts} facts, {len(reference)} table facts")

        settings = Settings.load(
            None, models={"base_url": base_url, "model": args.model, "max_tokens": args.max_tokens}
        )
        col = Collection(out / "model", settings=settings)
        result = col.add([document]).results[0]
        kept = table_facts(col) & reference
        stats = col.stats()
        facts = len(col.store.document_facts(col.documents()[0].doc_id))
        print(f"model:   {stats['entities']} entities, {facts} facts; {len(kept)} of {len(reference)} table facts kept")
        print(f"  add: {result.status}, built {result.built}, {result.model_calls} model calls")
        print(f"  extraction: {stats.get('extraction', {})}")
        usage = col.models.snapshot()
        print(
            "  rejected replies by stage: "
            + ", ".join(f"{s} {getattr(u, 'rejected', 0)}/{u.calls}" for s, u in sorted(usage.items()))
        )
        for _, stage, item, reason in col.offline_parts()[:12]:
            print(f"  offline: {stage} {item}: {reason[:120]}")
        print(f"\n{QUESTION}")
        answers(col, "model")
        col.close()
        # The same model-built graph, answered without a model (only the extract role stays configured).
        offline_answers = replace(settings.models, model="", extract_model=args.model)
        extractive = Collection(out / "model", settings=replace(settings, models=offline_answers))
        answers(extractive, "extractive")
        extractive.close()
        answers(offline, "offline")
        offline.close()
    finally:
        if server is not None:
            server.stop()
    print(f"\n(collections in {out})")


if __name__ == "__main__":
    main()
