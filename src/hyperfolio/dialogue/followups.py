"""A follow-up rewritten offline into a question that stands alone, from the turn before it.

People ask "What was revenue in 2023?" and then "and in 2022?", "what about net income?", "why?", "how
did it change?", "show me the table". Retrieval reads words, so the follow-up's own words are not enough:
this reads what the earlier question asked — its lead ("What was"), its subject ("revenue"), its period
("in 2023"), the names in it — and puts the follow-up's new part in the slot it fills: a period replaces
the period, a name the name, a noun phrase the subject; a pronoun becomes what it stands for; "why"
asks why the earlier answer holds. The new part is never dropped: a follow-up is not answered as the
question before it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from hyperfolio.dialogue.turns import Turn
from hyperfolio.model import EvidencePackage, Scope

_PERIOD = re.compile(
    r"\b(?:(?:in|for|during|of|at|by|from|since)\s+)?(?:the\s+)?"
    r"(?:(?:fiscal|financial|calendar)\s+(?:year\s+)?(?:19|20)\d\d|FY\s?'?\d{2,4}|"
    r"(?:Q[1-4]|H[12]|(?:first|second|third|fourth)\s+(?:quarter|half)(?:\s+of)?)\s*(?:FY\s?)?(?:(?:19|20)\d\d)?|"
    r"(?:19|20)\d\d(?:\s*[-–/]\s*(?:19|20)?\d\d)?)\b",
    re.IGNORECASE,
)
_LEAD = re.compile(
    r"^\s*(?:(?:what's|who's|where's|what|which|who|whom|whose|where|when|how(?:\s+(?:much|many|long|often|large|big))?)"
    r"(?:\s+(?:is|are|was|were|did|does|do|has|have|had|will|would|can|could))?"
    r"(?:\s+(?:the|a|an))?|(?:is|are|was|were|did|does|do|has|have|can)(?:\s+(?:the|a|an))?)\s+",
    re.IGNORECASE,
)
_CONNECTIVE = re.compile(
    r"^\s*(?:(?:and|but|also|so|ok(?:ay)?|then|now)\b[\s,]*)*"
    r"(?:(?:what|how)\s+about|what\s+of|same\s+(?:for|with)|and\s+for|as\s+for)?\s*",
    re.IGNORECASE,
)
_WHY = re.compile(r"^\s*(?:and\s+)?(?:why|how\s+come|for\s+what\s+reason)\b", re.IGNORECASE)
_SHOW = re.compile(
    r"^\s*(?:(?:can\s+you\s+|could\s+you\s+|please\s+)?(?:show|give|display|open)(?:\s+me)?|where\s+is|which\s+page)\b",
    re.IGNORECASE,
)
# "it", "they"...; "that", "this" only where they stand for a thing ("why is that?", "did that change?"),
# not where they point at a noun or start a clause ("the plant that opened", "this year").
_PRONOUN = re.compile(
    r"\b(?:it|its|they|them|their|the same)\b|"
    r"\b(?:that|this|these|those)\b(?=\s*(?:[?.!]|$|(?:is|was|were|are|mean|means|change|changed|happen|happened)\b))",
    re.IGNORECASE,
)
_NAME = re.compile(r"\b[A-Z][\w&.\-']*(?:\s+(?:of\s+|&\s+|and\s+)?[A-Z][\w&.\-']*)*")
_QUESTION_WORDS = {
    "what", "which", "who", "whom", "whose", "where", "when", "why", "how", "is", "are", "was", "were",
    "did", "does", "do", "has", "have", "had", "and", "but", "also", "so", "then", "now", "about", "show",
    "me", "the", "a", "an", "of", "in", "for", "to", "same", "please", "can", "could", "you", "tell",
}  # fmt: skip
_AUXILIARIES = {"is", "are", "was", "were", "did", "does", "do", "has", "have", "had", "will", "would", "can", "could"}
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
# Follow-ups about the answer just given, asked where it was found.
CITED_SCOPE = frozenset({"why", "show", "pronoun", "where", "model-cited"})
LEANING = frozenset({"why", "show"})  # follow-ups that ask nothing of their own
_SHORT = 6  # a question of at most this many words that names no verb of its own leans on the one before
_ANTECEDENT = 5  # words at most in what a pronoun is read as


@dataclass(frozen=True)
class Rewrite:
    """A follow-up and the question it stands for."""

    asked: str
    standalone: str
    how: str  # what was carried: "period", "subject", "name", "pronoun", "why", "show", "where" (only the
    # documents the last answer cited: a pronoun not read further), "model" ("model-cited": asked where the
    # last answer was, as the rules would have), "" (it stands alone)

    @property
    def changed(self) -> bool:
        return self.standalone != self.asked

    def meta(self, asked_in: object, carried: object) -> dict[str, object] | None:
        """What an answer records of how it was asked (`Answer.meta["followup"]`): None for a question
        asked as written, in the scope it was given."""
        if not self.changed and asked_in == carried:
            return None
        return {"asked": self.asked, "standalone": self.standalone, "how": self.how, "doc": carried}


@dataclass
class Asking:
    """A question on its way to an answer: as asked, as it stands alone, the scope it was asked in and
    the one it runs in (a follow-up's carried from the turn before), and its evidence. Retrieval and
    answering are apart so a face can show the evidence before the answer is written."""

    question: str
    rewrite: Rewrite
    asked: Scope
    scope: Scope
    evidence: EvidencePackage

    def followup_meta(self) -> dict[str, object] | None:
        return self.rewrite.meta(self.asked.get("doc"), self.scope.get("doc"))

    def doc_scope(self) -> list[str]:
        """The documents it was asked of, as a turn records them for the next ([]: the whole collection).
        Not the ones it was carried to: a "why?" asked of the documents just cited must not hold every
        later question of the thread to them."""
        doc = self.asked.get("doc")
        return [doc] if isinstance(doc, str) else list(doc or [])


@dataclass(frozen=True)
class _Parts:
    """An earlier question taken apart: lead + subject + period, and the names in it."""

    lead: str  # "What was"
    subject: str  # "revenue" (the period left out)
    period: str  # "in 2023" ("" when none)
    names: list[str]

    @classmethod
    def of(cls, question: str) -> _Parts:
        text = question.strip().rstrip("?.! ")
        lead_match = _LEAD.match(text)
        lead = lead_match.group(0).strip() if lead_match else ""
        rest = text[lead_match.end() :] if lead_match else text
        periods = list(_PERIOD.finditer(rest))
        period = periods[-1].group(0).strip() if periods else ""
        subject = _PERIOD.sub(" ", rest) if periods else rest
        names = [n for n in _NAME.findall(rest) if n.lower() not in _QUESTION_WORDS and not _PERIOD.fullmatch(n)]
        return cls(lead, " ".join(subject.split()), period, names)

    def sentence(self, subject: str | None = None, period: str | None = None) -> str:
        words = [self.lead, self.subject if subject is None else subject, self.period if period is None else period]
        text = " ".join(w for w in words if w)
        return text[:1].upper() + text[1:] + "?"


class Rewriter(Protocol):
    """Reads a follow-up against the turns before it (offline rules, or a model: followups_model)."""

    def rewrite(self, question: str, history: Sequence[Turn]) -> Rewrite: ...


class OfflineRewriter:
    def rewrite(self, question: str, history: Sequence[Turn]) -> Rewrite:
        return rewrite_offline(question, history)


def rewrite_offline(question: str, history: Sequence[Turn]) -> Rewrite:
    """The follow-up as a standalone question, read against the last turn (unchanged when it already
    stands alone, or there is no turn before it)."""
    asked = " ".join(question.split())
    if not history or not asked:
        return Rewrite(asked, asked, "")
    # What the follow-up leans on: the last question that asked for something ("why?" and "show me" add
    # nothing to lean on; "why?" after "show me the table" still asks about the figure before).
    before = next((t for t in reversed(history) if t.how not in LEANING), history[-1])
    parts = _Parts.of(before.asked)
    if _WHY.match(asked) and len(_content(asked)) <= 2:
        return Rewrite(asked, _why(parts, before), "why")
    if _SHOW.match(asked):
        return Rewrite(asked, _show(asked, parts), "show")
    if _PRONOUN.search(asked) and (_LEAD.match(asked) or asked.endswith("?")):
        if _points_inside(asked):  # "What did Pepsico say about its debt?" stands alone
            return Rewrite(asked, asked, "")
        resolved = _resolve_pronouns(asked, parts)
        # A pronoun read no further still leans on the turn before: asked where that answer was found.
        return Rewrite(asked, resolved, "pronoun") if resolved else Rewrite(asked, asked, "where")
    if not _elliptical(asked):
        return Rewrite(asked, asked, "")
    return _fill_slot(asked, parts)


def carried(rewrite: Rewrite, history: Sequence[Turn], scope: Scope) -> Scope:
    """The scope a follow-up is asked in: its own, else the earlier turn's documents — the ones it was
    asked of, or, for a follow-up about its answer ("why?", "show me the table"), the ones it cited."""
    out = Scope(**scope)
    if history and not scope.get("doc"):
        before = history[-1]
        docs = before.scope or (before.doc_ids if rewrite.how in CITED_SCOPE else [])
        if docs:
            out["doc"] = list(docs)
    return out


def _content(text: str) -> list[str]:
    return [w for w in re.findall(r"[\w%$.'-]+", text.lower()) if w not in _QUESTION_WORDS]


def _elliptical(text: str) -> bool:
    """Leans on the question before it: opens with "and" / "what about", or is a few words without a
    question's lead of its own ("in 2022?", "net income?")."""
    opened = _CONNECTIVE.match(text)
    if opened and opened.group(0).strip():
        return True
    return len(text.split()) <= _SHORT and not _LEAD.match(text)


def _fill_slot(asked: str, parts: _Parts) -> Rewrite:
    """The follow-up's new part in the slot it fills in the earlier question."""
    opened = _CONNECTIVE.match(asked)
    new = asked[opened.end() :] if opened else asked
    new = new.strip().rstrip("?.! ")
    period_match = _PERIOD.search(new)
    period = period_match.group(0).strip() if period_match else ""
    rest = " ".join(_PERIOD.sub(" ", new).split()) if period else new
    rest = re.sub(r"^(?:the|a|an)\s+", "", rest, flags=re.IGNORECASE)
    if period and not _content(rest):  # "and in 2022?"
        return Rewrite(asked, parts.sentence(period=_period_or(period, parts)), "period")
    names = [n for n in _NAME.findall(rest) if n.lower() not in _QUESTION_WORDS]
    if names and parts.names and " ".join(names) == rest:  # "what about Microsoft?"
        subject = parts.subject.replace(parts.names[-1], rest)
        return Rewrite(asked, parts.sentence(subject=subject, period=_period_or(period, parts)), "name")
    if rest and len(parts.lead.split()) < 2:  # "Which oil field produced most?" + "net income?": no verb to keep
        subject = f"{parts.subject} {rest}"
        return Rewrite(asked, parts.sentence(subject=subject, period=_period_or(period, parts)), "subject")
    if rest:  # "what about net income?"
        return Rewrite(asked, parts.sentence(subject=rest, period=_period_or(period, parts)), "subject")
    return Rewrite(asked, parts.sentence(), "subject")


def _period_or(period: str, parts: _Parts) -> str:
    """The follow-up's period said as the earlier one was, with the earlier year where it names none
    ("in Q3 2023" then "and Q2?" -> "in Q2 2023"); else the earlier period."""
    if not period:
        return parts.period
    year = _YEAR.search(parts.period)
    if year and not _YEAR.search(period) and not re.search(r"FY", period, re.IGNORECASE):
        period = f"{period} {year.group(0)}"
    return _with_preposition(period, parts.period)


def _with_preposition(period: str, before: str) -> str:
    """ "2022" said as the earlier period was ("in 2023" -> "in 2022")."""
    if re.match(r"(?:in|for|during|of|at|by|from|since)\s", period, re.IGNORECASE):
        return period
    preposition = before.split()[0] if before and before.split()[0].lower() in {"in", "for", "during", "of"} else "in"
    return f"{preposition} {period}"


def _points_inside(asked: str) -> bool:
    """Whether the question's first pronoun may stand for a name before it in the question itself
    ("How much did Acme earn and how did it change?"); a period ("As of FY 2021, ...") is not a name."""
    pronoun = _PRONOUN.search(asked)
    before_it = asked[: pronoun.start()] if pronoun else ""
    return any(m.start() > 0 and not _PERIOD.match(before_it, m.start()) for m in _NAME.finditer(before_it))


def _resolve_pronouns(asked: str, parts: _Parts) -> str | None:
    """ "How did it change?" -> "How did revenue in 2023 change?": a pronoun stands for what the earlier
    question asked about — its subject when that is a short phrase, else the name it gave ("the Board"
    of a long question about board meetings); None when nothing short stands for what came before."""
    topic = _antecedent(parts)
    if not topic:
        return None

    def swap(match: re.Match[str]) -> str:
        return f"{topic}'s" if match.group(0).lower() in ("its", "their") else topic

    return _PRONOUN.sub(swap, asked, count=1)


def _antecedent(parts: _Parts) -> str:
    """What a pronoun after this question stands for: its subject (with its period) when that is at most
    `_ANTECEDENT` words, else its longest name; "" when neither."""
    if parts.subject and len(parts.subject.split()) <= _ANTECEDENT:
        return " ".join(w for w in (parts.subject, parts.period) if w)
    names = sorted((n for n in parts.names if len(n.split()) <= _ANTECEDENT), key=lambda n: -len(n.split()))
    return names[0] if names else ""


def _why(parts: _Parts, before: Turn) -> str:
    """ "why?" -> "Why was revenue in 2023 $5.2 million?": why the earlier answer holds; where the
    earlier question's subject is its question word ("Which region had ..."), "Why is it North Sea:
    which region had ...?"."""
    said = before.short or _first_clause(before.answer)
    topic = " ".join(w for w in (parts.subject, parts.period) if w)
    lead = parts.lead.split()
    if len(lead) > 1 and lead[1].lower() in _AUXILIARIES:
        return " ".join(w for w in ("Why", lead[1].lower(), topic, said) if w).rstrip(".") + "?"
    asked = before.asked.strip().rstrip("?")
    return f"Why is it {said.rstrip('.')}: {asked[:1].lower()}{asked[1:]}?" if said else f"Why: {asked}?"


def _first_clause(text: str) -> str:
    first = re.split(r"(?<=[.;])\s|\n", text.strip(), maxsplit=1)[0]
    return first[:120]


def _show(asked: str, parts: _Parts) -> str:
    """ "show me the table" -> "the table of revenue in 2023": what to show, of what was asked about."""
    opened = _SHOW.match(asked)
    thing = asked[opened.end() :].strip().rstrip("?.! ") if opened else asked
    thing = re.sub(r"^(?:me\s+)?(?:the|a|an|that|this|it)\b\s*", "", thing, flags=re.IGNORECASE) or "page"
    topic = " ".join(w for w in (parts.subject, parts.period) if w)
    return f"The {thing} of {topic}" if topic else f"The {thing}"
