"""The short answer: the span of the expected kind that the best supporting passage states.

The extractive answerer ranks passages (sentences, table rows, cells read off a table); this module
reads the answer out of them. For a question expecting a number, a year, a name ... every span of that
kind in the best passages is scored by its passage's score and by how close it sits to the words of the
question it shares (an answer stands next to what it answers); a span the question itself states is
not an answer to it. "Why" questions get the explaining sentence (a cause cue, a slide's speaker notes,
or the sentence after the claim), yes/no questions a yes or no read from the best passage's polarity.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hyperfolio.answer.expected import NUMERIC, Kind, core_question, expected_kind
from hyperfolio.answer.passages import Passage, terms
from hyperfolio.answer.spans import CORPORATE, Span, in_format, name_spans, typed_spans
from hyperfolio.lexicon import JOINING_WORDS, ORDINAL_WORDS

READ_PASSAGES = 6  # best passages a short answer is read from
NEAR_WORDS = 12  # proximity falls to half this many words away from the question's words
STATED_COUNT_NEAR = 0.5  # a count within ~6 words of the question's words is the answer, not a list's length
EXPLAIN_SHARE = 0.4  # an explaining passage may score this share of the best and still be preferred
_CAUSE = re.compile(
    r"\b(because|due to|owing to|as a result|result(?:s|ed)? (?:in|from)|caused by|leads? to|led to|"
    r"driven by|thanks to|since|so that|in order to|therefore|thus|hence|reason)\b",
    re.I,
)
_NEGATION = re.compile(r"\b(not|no|never|none|neither|nor|without|cannot|n't)\b|n't\b", re.I)
_LIST_SPLIT = re.compile(r"\s*(?:,|;|\band\b|\bor\b|\n|•)\s*")
_COPULA = re.compile(r"\b(?:is|are|was|were|include[sd]?|including|called|named|:)\s+", re.I)
_WORD = re.compile(r"\S+")
# "who produced", "which officer verified and signed": the verb whose agent is asked for
_WHO_DID = re.compile(r"^\s*(?:who|which\s+\w+)\s+(?:\w+\s+and\s+)?(\w+ed)\b", re.I)
_WHERE = re.compile(r"^\s*where\b", re.I)
# A code a question looks an entry up by ("EPS Code AR01", "course GS5002"): capitals and digits together.
_CODE = r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{3,}\b"
_KEY_CODE = re.compile(_CODE)
# What parts entries of a list or a catalogue: a line, a list number, another code, a separator.
_ENTRY_EDGE = re.compile(rf"\n|(?:^|\s)\d{{1,3}}[.)]\s|{_CODE}|[;|•]")
ENTRY_WORDS = 8  # an entry longer than this is a sentence, not a catalogue's name
_ASKS_COMPANY = re.compile(r"\b(?:compan(?:y|ies)|firms?|corporations?|business(?:es)?)\b", re.I)
_LABEL_ABBREVIATIONS = {"no.": "number", "nos.": "numbers", "#": "number", "tel.": "telephone", "ph.": "phone"}
_TYPE_OF = re.compile(r"\bwhat (?:type|kind|sort) of ([^\W\d_]+)", re.I)
_HOW_MANY = re.compile(r"\bhow (?:many|much)\s+([^\W\d_]+)(?:\s+([^\W\d_]+))?", re.I)
_PLACE = re.compile(r"^(?:\w+\s+){0,3}?(?:in|at|near|from|on)\s+", re.I)
_WHICH_NOUN = re.compile(
    r"\b(which|what)\s+(?!(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|about)\b)\w+", re.I
)


@dataclass(frozen=True)
class ShortAnswer:
    """What the answer says first; `passage` is where it is read from (its quote and citation)."""

    text: str
    kind: Kind
    passage: Passage
    score: float


def _folded(text: str) -> str:
    return " ".join(re.sub(r"[^\w.%$]+", " ", text.lower().replace(",", "")).split())


def word_marks(text: str, question_terms: set[str]) -> list[tuple[int, bool]]:
    """(start offset, shares a term with the question) of each word of a passage: read once a passage,
    whatever number of spans it holds. A label's abbreviation ("No. 21-13199", "Tel.") is its word."""
    return [
        (m.start(), bool(set(terms(_LABEL_ABBREVIATIONS.get(m.group(0).lower(), m.group(0)))) & question_terms))
        for m in _WORD.finditer(text)
    ]


def proximity(span: Span, marks: list[tuple[int, bool]]) -> float:
    """1 when a word of the question stands right beside the span, falling with distance in words;
    0 when the passage holds none of the question's words (`marks`: `word_marks` of the passage)."""
    inside = {i for i, (at, _) in enumerate(marks) if span.start <= at < span.end}
    first = min(inside) if inside else sum(at < span.start for at, _ in marks)
    last = max(inside) if inside else first
    near = [i for i, (_, shared) in enumerate(marks) if i not in inside and shared]
    if not near:
        return 0.0
    # A value follows its label ("Fax: 514 ..."): a span after the question's word counts as a word nearer.
    # A name stands either side of its role ("Governor Rick Scott", "Rick Scott, Governor"): no side wins.
    after = 0 if span.kind == Kind.NAME else 1
    distance = min(first - i - after if i < first else i - last for i in near)
    return 1.0 / (1.0 + 2.0 * distance / NEAR_WORDS)


def stated_in(question: str, span: Span) -> bool:
    """Whether the question already says this span ("in 2019", "Apple's revenue"): not its answer."""
    return f" {_folded(span.text)} " in f" {_folded(question)} "


def names_asked(span: Span, question_terms: set[str]) -> bool:
    """Whether an e-mail or web address spells a name the question asks about ("lnahmiash@..." for
    "the e-mail of Laurent Nahmiash"): closer to the question than any span beside its words."""
    if span.kind != Kind.IDENTIFIER or "@" not in span.text and "." not in span.text:
        return False
    spelled = span.text.lower()
    return any(len(term) >= 4 and term in spelled for term in question_terms)


def asked_unit(question: str) -> set[str]:
    """What "how many / how much" counts, as terms: "how many square miles does" -> {square, mile}."""
    asked = _HOW_MANY.search(question)
    if asked is None:
        return set()
    unit: list[str] = []
    for word in (w for w in asked.groups() if w):
        said = terms(word)
        if not said:  # "how many are", "how many more": a stop word ends what is counted
            break
        unit += said
    return set(unit)


def counts_unit(span: Span, text: str, unit: set[str]) -> bool:
    """Whether the words right after a number are what the question counts ("538 square miles")."""
    return bool(unit) and bool(set(terms(text[span.end : span.end + 40])[:2]) & unit)


def best_span(question: str, kind: Kind, ranked: Sequence[tuple[Passage, float]]) -> tuple[Span, Passage, float] | None:
    """The best-scoring span of `kind` across the ranked passages; a span said beside what the question
    names it by (an e-mail spelling the asked name, a number before what "how many" counts) scores as
    if nearer than any word of the question."""
    q_terms = set(terms(question))
    unit = asked_unit(question) if kind in NUMERIC else set()
    company = kind == Kind.NAME and bool(_ASKS_COMPANY.search(question))
    best: tuple[Span, Passage, float] | None = None
    for passage, score in ranked:
        # A name would run on from the heading into the sentence ("Harbours Kestrel Harbour"): names are
        # read after it; the spans are offsets into `body`.
        body = passage.text[passage.lead :] if kind == Kind.NAME else passage.text
        marks: list[tuple[int, bool]] | None = None
        for span in typed_spans(body, kind, question):
            if stated_in(question, span):
                continue
            marks = marks if marks is not None else word_marks(body, q_terms)
            beside = names_asked(span, q_terms) or counts_unit(span, body, unit)
            near = 1.5 if beside or company and CORPORATE.search(span.text) else proximity(span, marks)
            total = score * (0.6 + 0.4 * near)
            if best is None or total > best[2]:
                best = (span, passage, total)
    return best


def explanation(ranked: Sequence[tuple[Passage, float]], every: Sequence[Passage]) -> tuple[Passage, float]:
    """The explaining sentence: a speaker note or a sentence with a cause cue among the best passages
    (a little lower in rank is fine), else the sentence after the best claim when it states a cause."""
    best, top = ranked[0]
    for passage, score in ranked:
        notes = bool(passage.item.chunk.meta.get("notes"))
        if (notes or _CAUSE.search(passage.text)) and score >= EXPLAIN_SHARE * top:
            return passage, score
    position = next((i for i, p in enumerate(every) if p is best), None)
    if position is not None and position + 1 < len(every):
        after = every[position + 1]
        if after.item is best.item and _CAUSE.search(after.text):
            return after, top
    return best, top


def yes_no(question: str, passage: Passage) -> str:
    """Yes unless the passage negates what the question asks and the question does not."""
    negated = bool(_NEGATION.search(passage.text))
    return "No" if negated and not _NEGATION.search(question) else "Yes"


def enumerated(question: str, passage: Passage) -> list[str]:
    """The items a passage enumerates after its copula or colon ("... include A, B and C"), one per
    line or separator; [] when it enumerates fewer than two."""
    body = passage.text[passage.lead :]  # the heading a chunk opens with is no item
    cue = _COPULA.search(body)
    tail = body[cue.end() :] if cue else body
    items = [i.strip(" .") for i in _LIST_SPLIT.split(tail) if i.strip(" .")]
    items = [i for i in items if len(i.split()) <= 6 and not stated_in(question, Span(i, 0, 0, Kind.TEXT))]
    return items if len(items) >= 2 else []


def listed(question: str, passage: Passage) -> str:
    """The items a passage enumerates, else the names it states."""
    items = enumerated(question, passage)
    if items:
        return ", ".join(items)
    # Names are read after the heading a chunk opens with ("Dataset" + "We use PDTB" is no "Dataset We").
    names = [s.text for s in name_spans(passage.text[passage.lead :]) if not stated_in(question, s)]
    return ", ".join(dict.fromkeys(names))


def counted(question: str, ranked: Sequence[tuple[Passage, float]]) -> ShortAnswer | None:
    """A count the evidence does not state but lists: "how many areas ..." over a passage enumerating
    them, when no count stands near the question's words (the items are the quote that shows it)."""
    passage, score = ranked[0]
    marks = word_marks(passage.text, set(terms(question)))
    stated = [s for s in typed_spans(passage.text, Kind.COUNT, question) if not stated_in(question, s)]
    if any(proximity(s, marks) >= STATED_COUNT_NEAR for s in stated):
        return None
    items = enumerated(question, passage)
    return ShortAnswer(str(len(items)), Kind.COUNT, passage, score) if items else None


def opening_name(text: str) -> Span | None:
    """The name `text` opens with ("Mr. S.V. Shanbhag was ...", "Florida Department of Health 4052 ..."),
    if it opens with one."""
    return next((n for n in name_spans(text) if n.start == 0), None)


def phrase_after(question: str, passage: Passage) -> str:
    """A text answer: the phrase after the copula that follows the question's words in the passage
    ("The capital of X is Y." answers "What is the capital of X?"), at most twelve words. A number the
    question names ("UNIT 15") must stand before the cue: "UNIT 14: ..." says nothing about unit 15."""
    q_terms = set(terms(question))
    q_numbers = set(re.findall(r"\d+", question))
    for cue in _COPULA.finditer(passage.text):
        before = set(terms(passage.text[: cue.start()]))
        if not before & q_terms or q_numbers and not q_numbers & set(re.findall(r"\d+", passage.text[: cue.start()])):
            continue
        tail = passage.text[cue.end() :]
        clause = re.split(r"[.;!?](?!\w)|,\s(?:which|while|and|but)\b", tail)[0].strip(" ,")
        opening = opening_name(tail)
        if opening is not None and len(opening.text) > len(clause):
            clause = opening.text  # "Mr. S.V. Shanbhag" is not cut at its first full stop
        if _WHERE.match(question) and (place := _PLACE.search(clause)):
            clause = clause[place.end() :]  # "conceived in the Berlin School" -> "the Berlin School"
        words = clause.split()
        if words and len(words) <= 12:
            return clause
    return ""


def cell_value(question: str, kind: Kind, value: str) -> str:
    """A cell as the answer: a numeric question takes the cell's first number of its kind (a cell
    merged from two columns reads "1,020 2,310"), or nothing when it holds none; anything else the
    whole cell."""
    if kind in NUMERIC:
        spans = typed_spans(value, kind, question)
        return in_format(question, spans[0]) if spans else ""  # a label is no answer to "how many"
    return value


def agent_named(
    question: str, ranked: Sequence[tuple[Passage, float]], every: Sequence[Passage] = ()
) -> ShortAnswer | None:
    """ "Who produced / signed / approved X?": the name after "produced by" in the best passages that say
    it ("Produced by: Florida Department of Health"); a cue that ends its passage (a cover's "Produced
    by:" line) is followed into the passage after it (`every`: all passages, in reading order)."""
    asked = _WHO_DID.match(question)
    if asked is None:
        return None
    verb = asked.group(1).lower()
    for passage, score in ranked:
        said = re.search(rf"\b{re.escape(verb)}\s+by\s*:?\s*", passage.text, re.I)
        if said is None:
            continue
        rest = passage.text[said.end() :]
        if not rest.strip():
            after = following(passage, every)
            passage, rest = (after, after.text) if after is not None else (passage, rest)
        name = opening_name(rest)
        if name is not None:
            return ShortAnswer(name.text, Kind.NAME, passage, score)
    return None


def following(passage: Passage, every: Sequence[Passage]) -> Passage | None:
    """The passage read right after `passage`: its chunk's next sentence, else the first of the next chunk
    on its page."""
    position = next((i for i, p in enumerate(every) if p is passage), None)
    if position is not None and position + 1 < len(every) and every[position + 1].item is passage.item:
        return every[position + 1]
    chunk = passage.item.chunk
    return next(
        (p for p in every if p.item.chunk.doc_id == chunk.doc_id and p.item.chunk.page == chunk.page
         and p.item.chunk.order == chunk.order + 1),
        None,
    )  # fmt: skip


def keyed_entry(question: str, ranked: Sequence[tuple[Passage, float]]) -> ShortAnswer | None:
    """ "What's the market name for code AR01?": the entry a catalogue lists beside that code ("1. Little
    Rock AR01 2. Northern Arkansas AR02" -> "Little Rock"), read back to the list number, line or code
    before it, else on to the next."""
    codes = _KEY_CODE.findall(question)
    if len(codes) != 1:
        return None
    for passage, score in ranked:
        text = passage.text
        for at in re.finditer(rf"\b{re.escape(codes[0])}\b", text):
            edges = list(_ENTRY_EDGE.finditer(text[: at.start()]))
            before = text[edges[-1].end() if edges else 0 : at.start()].strip(" :-\u2013,.")
            after_edge = _ENTRY_EDGE.search(text, at.end())
            after = text[at.end() : after_edge.start() if after_edge else len(text)].strip(" :-\u2013,.")
            for entry in (before, after):
                if entry and len(entry.split()) <= ENTRY_WORDS and re.search(r"[^\W\d_]", entry):
                    return ShortAnswer(entry, Kind.TEXT, passage, score)
    return None


_EITHER = re.compile(r"\b([^\W\d_]{2,})['\u2019\"]?\s+or\s+['\u2018\"]?([^\W\d_]{2,})\b")
# "Answer 'left' or 'right'": the question says its answer is one of two, whatever else it asks about.
_QUOTE = "['\"\u2018\u2019\u201c\u201d]"
_QUOTED_EITHER = re.compile(rf"{_QUOTE}[^\W\d_][\w ]*{_QUOTE}\s+or\s+{_QUOTE}[^\W\d_][\w ]*{_QUOTE}")


def one_of_two(question: str, ranked: Sequence[tuple[Passage, float]]) -> ShortAnswer | None:
    """ "On the left or right side of the screen ...?": the one of two alternatives the best passage
    says, when it says only that one."""
    for pair in _EITHER.finditer(question):
        options = [pair.group(1), pair.group(2)]
        if any(not terms(o) for o in options):
            continue  # "whether or not", "more or less" offer no two things
        passage, score = ranked[0]
        said = [o for o in options if re.search(rf"\b{re.escape(o)}\b", passage.text, re.I)]
        if len(said) == 1:
            return ShortAnswer(said[0], Kind.TEXT, passage, score)
    return None


_NUMBERED_PART = re.compile(
    r"\b(unit|chapter|section|module|lesson|week|part|appendix|article|phase|stage|quarter|semester)"
    r"\s*[-#]?\s*(\d{1,3}|[IVX]{1,5})\b",
    re.I,
)
TITLE_WORDS = 12  # a part's title longer than this is a sentence about it


def part_title(
    question: str, ranked: Sequence[tuple[Passage, float]], every: Sequence[Passage] = ()
) -> ShortAnswer | None:
    """ "What's the topic of UNIT 14?": the title a heading gives after the part's number and a colon or
    dash ("UNIT 14: Using Financial Information and Accounting"), in the best passages, else in any of the
    evidence (the heading is precise, the words around it need not match)."""
    asked = _NUMBERED_PART.search(question)
    if asked is None:
        return None
    heading = re.compile(rf"\b{asked.group(1)}\s*[-#]?\s*{asked.group(2)}\s*[:\u2013\u2014-]\s*(.+)", re.I)
    floor = ranked[-1][1] if ranked else 0.0
    for passage, score in [*ranked, *((p, floor) for p in every)]:
        found = heading.search(passage.text)
        if found is None:
            continue
        title = re.split(r"(?<=[a-z])\.\s|\s[\u2022•]\s|\n", found.group(1))[0].strip(" .")
        if title and len(title.split()) <= TITLE_WORDS:
            return ShortAnswer(title, Kind.TEXT, passage, score)
    return None


_PLACE_WORD = "|".join([*ORDINAL_WORDS, "last"])
_ORDINAL_ITEM = re.compile(
    rf"\b(?:the\s+)?({_PLACE_WORD}|\d{{1,2}}(?:st|nd|rd|th))\s+(bullet(?:\s+point)?|point|item|step|entry|"
    r"objective|goal|recommendation|question|requirement|tip|rule|principle|reason|example)s?\b",
    re.I,
)
# Where a list's items part: a bullet, a dash opening a line, a number or a letter opening a line.
_BULLET = re.compile(r"\s*[\u2022\u25aa\u25cf\u25e6\uf0b7]\s*|\n\s*[-\u2013*]\s+|\n\s*(?:\d{1,2}|[a-z])[.)]\s+")


def list_items(text: str) -> tuple[str, list[str]]:
    """The heading a bulleted text opens with and its items ("3.5.2 Safety • Use ... • Operate ...");
    no items when it holds fewer than two."""
    parts = [p.strip() for p in _BULLET.split(text)]
    heading, items = parts[0], [" ".join(p.split()) for p in parts[1:] if p]
    return heading, items if len(items) >= 2 else []


def ordinal_item(
    question: str, ranked: Sequence[tuple[Passage, float]], every: Sequence[Passage] = ()
) -> ShortAnswer | None:
    """ "What is the second bullet point for safety?": that item of the bulleted list whose heading (or
    section) says what the question names, in the best passages' chunks first, then any of the evidence."""
    asked = _ORDINAL_ITEM.search(question)
    if asked is None:
        return None
    said = asked.group(1).lower()
    place = -1 if said == "last" else ORDINAL_WORDS.get(said) or int(re.sub(r"\D", "", said))
    about = set(terms(question[: asked.start()] + " " + question[asked.end() :])) - set(terms(asked.group(2)))
    floor = ranked[-1][1] if ranked else 0.0
    seen: set[str] = set()
    for passage, score in [*ranked, *((p, floor) for p in every)]:
        chunk = passage.item.chunk
        if chunk.chunk_id in seen:
            continue
        seen.add(chunk.chunk_id)
        heading, items = list_items(chunk.text)
        named = set(terms(heading)) | set(terms(" ".join(chunk.section_path[-1:])))
        if items and about & named and len(items) >= abs(place):
            item = items[place - 1] if place > 0 else items[-1]
            return ShortAnswer(item, Kind.TEXT, Passage(item, passage.item, "sentence"), score)
    return None


_PARTY = re.compile(r"\b(plaintiff|defendant|appellant|appellee|petitioner|respondent)s?\b", re.I)
_FIRST_PARTY = frozenset({"plaintiff", "appellant", "petitioner"})  # named before "v."
_VERSUS = re.compile(r"\s(?:v\.|vs\.?|versus)\s", re.I)
CAPTION_CHARS = 300  # how far either side of "v." a case caption names its parties


def _runs(names: list[Span], text: str) -> list[str]:
    """Names that stand side by side with only spaces between read as one ("Diane" "HANSON")."""
    joined: list[list[Span]] = []
    for name in names:
        if joined and not text[joined[-1][-1].end : name.start].strip():
            joined[-1].append(name)
        else:
            joined.append([name])
    return [text[run[0].start : run[-1].end] for run in joined]


def party_named(question: str, ranked: Sequence[tuple[Passage, float]]) -> ShortAnswer | None:
    """ "Who is the defendant of this case?": the party a case's caption names on that side of "v."
    ("Diane HANSON v. DELAWARE STATE PUBLIC INTEGRITY COMMISSION"), a company among them when the
    question asks for one."""
    asked = _PARTY.search(question)
    if asked is None:
        return None
    first = asked.group(1).lower() in _FIRST_PARTY
    for passage, score in ranked:
        text = " ".join(passage.item.chunk.text.split())
        split = _VERSUS.search(text)
        if split is None:
            continue
        side = (
            text[max(0, split.start() - CAPTION_CHARS) : split.start()]
            if first
            else text[split.end() :][:CAPTION_CHARS]
        )
        names = [n for n in name_spans(side) if not _PARTY.search(n.text)]
        runs = _runs(names, side)
        if _ASKS_COMPANY.search(question):
            runs = [r for r in runs if CORPORATE.search(r)] or runs
        if runs:  # the party nearest "v." (before it, the court and the case number come first)
            name = runs[-1] if first else runs[0]
            return ShortAnswer(name, Kind.NAME, Passage(side.strip(), passage.item, "sentence"), score)
    return None


_LONGEST = re.compile(r"\b(longest|shortest)\b", re.I)
_DURATION = re.compile(r"\b(\d+(?:\.\d+)?)\s*(hours?|days?|weeks?|months?|years?)\b", re.I)
_DAYS = {"hour": 1 / 24, "day": 1, "week": 7, "month": 30.4, "year": 365.25}


def duration_extreme(question: str, ranked: Sequence[tuple[Passage, float]]) -> ShortAnswer | None:
    """ "Which programme has the longest time period?": of the things a passage's chunk lists each with
    its duration on its line ("Leaders in Education Programme 7 months", "... Schools Programme 17
    weeks"), the one whose duration is the longest (or shortest), durations compared in days."""
    asked = _LONGEST.search(question)
    if asked is None:
        return None
    pick = max if asked.group(1).lower() == "longest" else min
    seen: set[str] = set()
    for passage, score in ranked:
        chunk = passage.item.chunk
        if chunk.chunk_id in seen:
            continue
        seen.add(chunk.chunk_id)
        lines = chunk.text.split("\n")
        timed = []
        for at, line in enumerate(lines):
            said = _DURATION.search(line)
            label = line[: said.start()].strip(" :-\u2013,") if said else ""
            if said is None or not label:
                continue
            before = lines[at - 1].split() if at else []
            if before and before[-1].lower() in JOINING_WORDS:  # "Management and Leadership in" / "Schools ..."
                label = f"{lines[at - 1].strip()} {label}"
            unit = said.group(2).lower().rstrip("s")
            timed.append((float(said.group(1)) * _DAYS[unit], label))
        if len(timed) >= 2:
            _, label = pick(timed)
            return ShortAnswer(label, Kind.NAME, passage, score)
    return None


def type_named(question: str, ranked: Sequence[tuple[Passage, float]]) -> ShortAnswer | None:
    """ "What type of court ...?": the capitalised word the best passages set before that noun, the noun
    included ("SUPERIOR COURT", "District Court": a place before them is where, not what type); one set
    as a line of its own (a caption's "SUPERIOR COURT") before one in a sentence ("this Honourable Court")."""
    asked = _TYPE_OF.search(question)
    if asked is None:
        return None
    noun = re.escape(asked.group(1))
    named = re.compile(rf"\b([A-Z][\w'\u2019-]*\s+)(?i:{noun})\b")
    found: list[tuple[bool, ShortAnswer]] = []
    for passage, score in ranked:
        text = passage.text  # a heading may be just where the type is said
        for match in named.finditer(text):
            if terms(match.group(1)):  # "The Court": no type said
                lines = {" ".join(line.split()) for line in passage.item.chunk.text.split("\n")}
                whole = " ".join(match.group(0).split()) in lines
                found.append((whole, ShortAnswer(" ".join(match.group(0).split()), Kind.NAME, passage, score)))
    return next((a for whole, a in found if whole), found[0][1] if found else None)


def short_answer(question: str, candidates: Sequence[Passage], scores: np.ndarray) -> ShortAnswer | None:
    """The short answer to `question` from the scored passages, or None when none holds one."""
    order = [int(i) for i in np.argsort(-scores, kind="stable") if np.isfinite(scores[i])]
    if not order:
        return None
    ranked = [(candidates[i], float(scores[i])) for i in order[:READ_PASSAGES]]
    kind = expected_kind(question)
    asked, question = question, core_question(question)  # how to write the answer is not what it is about
    passage, score = ranked[0]
    if passage.value and (value := cell_value(asked, kind, passage.value)):  # a cell read off a table first
        return ShortAnswer(value, kind, passage, score)
    if _QUOTED_EITHER.search(asked) and (either := one_of_two(asked, ranked)) is not None:
        return either
    if kind == Kind.EXPLANATION:
        found, found_score = explanation(ranked, candidates)
        return ShortAnswer(found.text, kind, found, found_score)
    if kind == Kind.YES_NO:
        return ShortAnswer(yes_no(question, passage), kind, passage, score)
    if kind == Kind.LIST:
        items = listed(question, passage)
        return ShortAnswer(items, kind, passage, score) if items else None
    if kind == Kind.COUNT and (count := counted(question, ranked)) is not None:
        return count
    if kind in (Kind.NAME, Kind.TEXT):
        named = ordinal_item(question, ranked, candidates) or party_named(question, ranked)
        named = named or agent_named(question, ranked, candidates)
        named = named or type_named(question, ranked) or duration_extreme(question, ranked)
        named = named or keyed_entry(question, ranked) or part_title(question, ranked, candidates)
        if (named := named or one_of_two(question, ranked)) is not None:
            return named
    if kind == Kind.TEXT:  # a phrase the best passages state about the question's words, or none
        for passage, score in ranked[:2]:
            phrase = phrase_after(question, passage)
            if phrase:
                return ShortAnswer(phrase, kind, passage, score)
        if not _WHICH_NOUN.search(question):
            return None  # "what does the report say about ..." asks for the passage itself
        kind = Kind.NAME  # "which system ...", "what company ...": a name
    found_span = best_span(question, kind, ranked)
    if found_span is None:
        return None
    span, passage, score = found_span
    return ShortAnswer(in_format(asked, span), kind, passage, score)


_LEADING_YES_NO = re.compile(r"^\W*(yes|no)\b", re.I)
SHORT_REPLY_WORDS = 12


def short_of_reply(question: str, reply: str) -> str:
    """The short answer inside a model's reply, read by the same rules as the evidence (HVM-GraphRAG
    B.3 without a second model call): a yes or no it opens with, the first span of the expected kind
    the question does not already state, or the whole reply when it is already short."""
    kind = expected_kind(question)
    core = core_question(question)
    if kind == Kind.YES_NO and (opening := _LEADING_YES_NO.match(reply)):
        return opening.group(1).capitalize()
    for span in typed_spans(reply, kind, core):
        if not stated_in(core, span):
            return in_format(question, span)
    words = reply.split()
    return reply.strip().rstrip(".") if 0 < len(words) <= SHORT_REPLY_WORDS else ""
