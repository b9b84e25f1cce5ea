"""Canonical merging: one vertex per normalised name, duplicate hyperedges collapsed, provenance pooled."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from hyperfolio.hypergraph.aliases import Named
from hyperfolio.hypergraph.extract import FACT, ExtractedEdge, ExtractedEntity, PageGraph
from hyperfolio.model import VALUE_TYPES
from hyperfolio.phrases import normalize_name

_DEFINITION = re.compile(r"([A-Z][\w\-]*(?:\s+(?:of|for|and|the|[A-Z][\w\-]*)){1,8})\s+\(([A-Z][A-Za-z0-9\-]{1,9})\)")


# Entities named by their place in one document: merged within it, never across documents.
DOCUMENT_LOCAL_TYPES = frozenset({"table", "figure", "reference"})


def entity_id(norm_name: str) -> str:
    return "E" + hashlib.sha1(norm_name.encode()).hexdigest()[:14]


def edge_id(level: str, member_ids: list[str], description: str) -> str:
    """Same members and same meaning give the same id; any other fact over those members is a new edge."""
    meaning = " ".join(normalize_name(description).split())
    key = "|".join([level, *sorted(member_ids), meaning])
    return "H" + hashlib.sha1(key.encode()).hexdigest()[:14]


@dataclass
class MergedEntity:
    entity_id: str
    name: str
    norm_name: str
    type: str
    modality: str
    descriptions: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    score: float = 0.0
    concept: str = ""

    def description(self, cap: int) -> str:
        return " | ".join(self.descriptions)[:cap]


@dataclass
class MergedEdge:
    edge_id: str
    level: str
    description: str
    keywords: list[str]
    strength: float
    members: list[tuple[str, str]]  # (entity_id, role)
    chunks: list[str] = field(default_factory=list)
    relation: str = ""


@dataclass
class MergedGraph:
    entities: dict[str, MergedEntity] = field(default_factory=dict)
    edges: dict[str, MergedEdge] = field(default_factory=dict)


def acronym_aliases(graphs: list[PageGraph]) -> dict[str, str]:
    """'Retrieval-Augmented Generation (RAG)' makes RAG an alias of the long name: norm(short) -> norm(long)."""
    aliases: dict[str, str] = {}
    for graph in graphs:
        for entity in graph.entities:
            for long, short in _DEFINITION.findall(entity.description):
                letters = short.upper().rstrip("S")
                spelled = _spelled_out(long.split(), letters)
                if letters and spelled:
                    aliases[normalize_name(short)] = normalize_name(spelled)
    return aliases


# Vertices whose names are never aliases of others (hypergraph/aliases.py): values, a document's own tables
# and figures, column headers.
UNALIASED_TYPES = VALUE_TYPES | DOCUMENT_LOCAL_TYPES | {"table_header"}


def document_names(graphs: list[PageGraph]) -> list[Named]:
    """Each vertex name the document's pages give, once: its key, first spelling, type and the chunks
    naming it (how often it is said)."""
    seen: dict[str, tuple[str, str, set[str]]] = {}
    for graph in graphs:
        for e in graph.entities:
            if e.type not in UNALIASED_TYPES and (key := normalize_name(e.name)):
                seen.setdefault(key, (e.name, e.type, set()))[2].update(e.chunks)
    return [Named(key, name, type_, len(chunks)) for key, (name, type_, chunks) in seen.items()]


def _spelled_out(words: list[str], letters: str) -> str:
    """The end of `words` whose capitalised words' initials are `letters`, connectors inside kept:
    "... the Association for Computational Linguistics" and "ACL" give "Association for Computational
    Linguistics"; "" when they do not spell it."""
    want = list(letters)
    start = len(words)
    while want and start > 0:
        start -= 1
        parts = [p for p in re.split(r"-", words[start]) if p]
        if not parts or not parts[0][0].isupper():
            continue  # "of", "for", "and": inside the name, no letter of its acronym
        for part in reversed(parts):
            if want and part[0].upper() == want[-1]:
                want.pop()
    return " ".join(words[start:]) if not want else ""


def merge(
    graphs: list[PageGraph], max_description_chars: int = 600, aliases: Mapping[str, str] | None = None
) -> MergedGraph:
    """`aliases` (hypergraph/aliases.find_aliases) maps a name's key to the key it merges into; without
    them, only the acronyms the document defines are merged."""
    merged = MergedGraph()
    alias_of = dict(aliases) if aliases is not None else acronym_aliases(graphs)

    def canonical(name: str) -> str:
        norm = normalize_name(name)
        return alias_of.get(norm, norm)

    def add_entity(e: ExtractedEntity, doc_id: str) -> str:
        norm = canonical(e.name)
        if e.type in DOCUMENT_LOCAL_TYPES:
            norm = f"{norm} @{doc_id}"  # "Table 2" of one document is not "Table 2" of another
        eid = entity_id(norm)
        found = merged.entities.get(eid)
        if found is None:
            found = merged.entities[eid] = MergedEntity(eid, e.name, norm, e.type, e.modality)
        if normalize_name(e.name) != norm and e.name not in found.aliases:
            found.aliases.append(e.name)
        for alias in e.aliases:
            if alias not in found.aliases and alias != found.name:
                found.aliases.append(alias)
        room = sum(len(d) for d in found.descriptions) < max_description_chars
        if e.description and e.description not in found.descriptions and room:
            found.descriptions.append(e.description)
        found.chunks.extend(c for c in e.chunks if c not in found.chunks)
        found.score = max(found.score, e.score)
        found.concept = found.concept or e.concept
        if found.modality == "text" and e.modality != "text":
            found.modality = e.modality  # a table or figure entity keeps its modality when also named in text
        return eid

    for graph in graphs:
        ids = {e.name: add_entity(e, graph.doc_id) for e in graph.entities}
        for edge in graph.edges:
            add_edge(merged, edge, ids)
    return merged


def add_edge(merged: MergedGraph, edge: ExtractedEdge, ids: dict[str, str]) -> str | None:
    members: list[tuple[str, str]] = []
    for name in edge.members:
        eid = ids.get(name)
        if eid and eid not in [m for m, _ in members]:
            members.append((eid, edge.roles.get(name, "member")))
    if len(members) < 2:
        return None
    # A fact is its (head, relation, tail): stated in several sentences, it is one fact with pooled evidence.
    meaning = edge.relation if edge.level == FACT else edge.description
    ids_in_order = [m for m, _ in members]
    hid = edge_id(
        edge.level, ids_in_order if edge.level != FACT else [f"{i}:{m}" for i, m in enumerate(ids_in_order)], meaning
    )
    found = merged.edges.get(hid)
    if found is None:
        found = merged.edges[hid] = MergedEdge(
            hid, edge.level, edge.description, list(edge.keywords), edge.strength, members, relation=edge.relation
        )
    found.chunks.extend(c for c in edge.chunks if c not in found.chunks)
    found.strength = max(found.strength, edge.strength)
    return hid
