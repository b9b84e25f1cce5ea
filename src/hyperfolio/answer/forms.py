"""Question forms with a reader of their own, tried before the span of the expected kind is scored.

"Who produced X" is read after "produced by", "the market name for code AR01" beside the code, "the topic
of UNIT 14" after the unit's heading, "the second bullet point for safety" off the list under that
heading, "the defendant of this case" off the caption's side of "v.", "what type of court" before the
noun, "which programme is the longest" from the durations a list gives, "'left' or 'right'" as the one
the evidence says. Each returns the `ShortAnswer` and the passage it is read from, or None when the
question is not of its form or the evidence does not say it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from hyperfolio.answer.expected import Kind
from hyperfolio.answer.passages import Passage, terms
from hyperfolio.answer.spans import CORPORATE, Span, name_spans
from hyperfolio.lexicon import CASE_PARTIES, FIRST_PARTIES, JOINING_WORDS, ORDINAL_WORDS

ASKS_COMPANY = re.compile(r"\b(?:compan(?:y|ies)|firms?|corporations?|business(?:es)?)\b", re.I)


@dataclass(frozen=True)
class ShortAnswer:
    """What the answer says first; `passage` is where it is read from (its quote and citation)."""

    text: str
    kind: Kind
    passage: Passage
    score: float


# "who produced", "which officer verified and signed": the verb whose agent is asked for
_WHO_DID = re.compile(r"^\s*(?:who|which\s+\w+)\s+(?:\w+\s+and\s+)?(\w+ed)\b", re.I)


# A code a question looks an entry up by ("EPS Code AR01", "course GS5002"): capitals and digits together.
_CODE = r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{3,}\b"


_KEY_CODE = re.compile(_CODE)


# What parts entries of a list or a catalogue: a line, a list number, another code, a separator.
_ENTRY_EDGE = re.compile(rf"\n|(?:^|\s)\d{{1,3}}[.)]\s|{_CODE}|[;|•]")


ENTRY_WORDS = 8  # an entry longer than this is a sentence, not a catalogue's name


_TYPE_OF = re.compile(r"\bwhat (?:type|kind|sort) of ([^\W\d_]+)", re.I)


def opening_name(text: str) -> Span | None:
    """The name `text` opens with ("Mr. S.V. Shanbhag was ...", "Florida Department of Health 4052 ..."),
    if it opens with one."""
    return next((n for n in name_spans(text) if n.start == 0), None)


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


def quoted_either(question: str) -> bool:
    """Whether the question says its answer is one of two quoted words ("Answer 'left' or 'right'")."""
    return _QUOTED_EITHER.search(question) is not None


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


def by_chunk(ranked: Iterable[tuple[Passage, float]]) -> Iterator[tuple[Passage, float]]:
    """The first of the ranked passages of each chunk, in rank order: readers that read whole chunks."""
    seen: set[str] = set()
    for passage, score in ranked:
        if passage.item.chunk.chunk_id not in seen:
            seen.add(passage.item.chunk.chunk_id)
            yield passage, score


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
    for passage, score in by_chunk([*ranked, *((p, floor) for p in every)]):
        chunk = passage.item.chunk
        heading, items = list_items(chunk.text)
        named = set(terms(heading)) | set(terms(" ".join(chunk.section_path[-1:])))
        if items and about & named and len(items) >= abs(place):
            item = items[place - 1] if place > 0 else items[-1]
            return ShortAnswer(item, Kind.TEXT, Passage(item, passage.item, "sentence"), score)
    return None


_PARTY = re.compile(rf"\b({'|'.join(CASE_PARTIES)})s?\b", re.I)


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
    first = asked.group(1).lower() in FIRST_PARTIES
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
        if ASKS_COMPANY.search(question):
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
    for passage, score in by_chunk(ranked):
        chunk = passage.item.chunk
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


_DEFINE = re.compile(
    r"\b(?:how\s+(?:does|do|is|are)\b.{0,60}?\bdefined?|define|definition\s+of|meaning\s+of)\s+"
    r"(?:the\s+(?:term\s+|word\s+)?)?(?P<term>[^?]{3,80}?)\s*(?:\bas\b.*)?\??\s*$",
    re.I,
)


def definition(question: str, ranked: Sequence[tuple[Passage, float]]) -> ShortAnswer | None:
    """ "How does this document define the law of good gestalt?": the sentence after the term set as a
    run-in heading ("Law of good Gestalt. Elements of objects tend to be ..."), in the best passages'
    chunks."""
    asked = _DEFINE.search(question)
    if asked is None:
        return None
    term = re.sub(r"^(?:the|a|an)\s+", "", asked.group("term").strip(" ."), flags=re.I)
    term = re.sub(r"\s+(?:in|by|according\s+to)\s+(?:this|the)\s+\w+$", "", term, flags=re.I)  # "in this report"
    # The term opens its line or sentence: a run-in heading, not a sentence that ends on it.
    heading = re.compile(rf"(?:^|\n|[.!?]\s+){re.escape(term)}\s*[.:\u2013\u2014-]\s+([A-Z][^.!?]*[.!?])", re.I)
    for passage, score in by_chunk(ranked):
        chunk = passage.item.chunk
        found = heading.search(chunk.text)
        if found is not None:
            said = " ".join(found.group(1).split())
            return ShortAnswer(said, Kind.TEXT, Passage(said, passage.item, "sentence"), score)
    return None


# "What is the title of the case study given under unit 8?": the thing whose title or name is asked.
_TITLE_OF = re.compile(
    r"\bwhat(?:'s|\u2019s| is| was| are| were) the (?:title|name|topic|subject) of (?:the |a |an |this )?"
    r"([^\W\d_][\w' -]{1,40}?)(?=\s+(?:given|listed|shown|named|under|in|for|of|on|at|that|which|mentioned)\b|\s*\?|$)",
    re.I,
)
_LABEL_VALUE_END = re.compile(r"[\u2014\n|]|[.;!?](?:\s|$)|\s\u2013\s")


def labelled_title(question: str, ranked: Sequence[tuple[Passage, float]]) -> ShortAnswer | None:
    """ "What is the title of the case study given under unit 8?": what follows the thing the question
    names set as a label ("Critical Thinking Case Study- Discrimination in the Workplace Continues—submit
    ..." -> "Discrimination in the Workplace Continues"), up to the label's line, dash or sentence end."""
    asked = _TITLE_OF.search(question)
    if asked is None:
        return None
    label = re.escape(asked.group(1).strip()).replace(r"\ ", r"[\s-]+")
    for passage, score in by_chunk(ranked):  # the chunk keeps the line the label's value ends with
        text = passage.item.chunk.text
        for said in re.finditer(rf"\b{label}s?\s*(?:[-\u2013:]+|\s\u2014)\s*(?=\S)", text, re.I):
            tail = text[said.end() :]
            end = _LABEL_VALUE_END.search(tail)
            value = tail[: end.start() if end else len(tail)].strip(" -\u2013:,")
            if value and len(value.split()) <= ENTRY_WORDS and re.search(r"[^\W\d_]", value):
                return ShortAnswer(value, Kind.TEXT, passage, score)
    return None


def form_answer(question: str, ranked: Sequence[tuple[Passage, float]], every: Sequence[Passage]) -> ShortAnswer | None:
    """The answer of the first form `question` has whose reader finds it in the ranked passages (`every`:
    all passages, in reading order, where a reader may look past the best)."""
    return (
        definition(question, ranked)
        or ordinal_item(question, ranked, every)
        or party_named(question, ranked)
        or agent_named(question, ranked, every)
        or type_named(question, ranked)
        or duration_extreme(question, ranked)
        or keyed_entry(question, ranked)
        or labelled_title(question, ranked)
        or part_title(question, ranked, every)
        or one_of_two(question, ranked)
    )
