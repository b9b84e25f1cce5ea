"""Plain-data views of answers and evidence, shared by the CLI's JSON output and, later, the service."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from hyperfolio.model import Answer, Citation, EvidencePackage


def citation_dict(citation: Citation) -> dict[str, Any]:
    out = asdict(citation)
    out["bbox"] = list(citation.bbox) if citation.bbox else None
    out["label"] = citation.label()
    out["quotes"] = citation.quotes()  # what to mark inside the region: the row's cells, else the sentence
    return out


def evidence_dict(evidence: EvidencePackage, text_chars: int = 800) -> dict[str, Any]:
    return {
        "question": evidence.question,
        "strategy": evidence.strategy,
        "seconds": evidence.meta.get("seconds"),
        "items": [
            {
                "rank": item.rank,
                "score": item.score,
                "sources": item.sources,
                "modality": item.chunk.modality,
                "text": item.chunk.text[:text_chars],
                "image_path": item.chunk.image_path,
                "citation": citation_dict(item.citation),
            }
            for item in evidence.items
        ],
        "by_modality": {m: [i.rank for i in items] for m, items in evidence.by_modality().items()},
        "keywords": evidence.meta.get("keywords"),
        # What else the strategy reports: concept anchors, relations, themes, disputed statements, timings.
        "meta": {k: v for k, v in evidence.meta.items() if k not in ("seconds", "keywords")},
        "entities": [
            {
                "id": hit.entity.entity_id,
                "name": hit.entity.name,
                "type": hit.entity.type,
                "modality": hit.entity.modality,
                "score": hit.score,
                "via": hit.via,
                "pages": [{"doc_id": d, "page": p} for d, p in hit.pages],
            }
            for hit in evidence.entities
        ],
        "hyperedges": [
            {
                "id": hit.hyperedge.edge_id,
                "level": hit.hyperedge.level,
                "description": hit.hyperedge.description,
                "members": hit.member_names,
                "score": hit.score,
                "via": hit.via,
                "pages": [{"doc_id": d, "page": p} for d, p in hit.pages],
            }
            for hit in evidence.hyperedges
        ],
    }


def answer_dict(answer: Answer) -> dict[str, Any]:
    return {
        "question": answer.question,
        "answer": answer.text,
        "short": answer.short,
        "sufficient": answer.sufficient,
        "answerer": answer.answerer,
        "support": answer.support,
        "meta": answer.meta,  # the model answerer's citation check: given, dropped, added, how well supported
        "citations": [citation_dict(c) for c in answer.citations],
        "evidence": evidence_dict(answer.evidence),
    }
