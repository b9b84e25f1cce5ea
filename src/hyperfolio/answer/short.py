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

import numpy as np

from hyperfolio.answer.expected import NUMERIC, Kind, core_question, expected_kind
from hyperfolio.answer.forms import ASKS_COMPANY, ShortAnswer, form_answer, one_of_two, opening_name, quoted_either
from hyperfolio.answer.passages import Passage, terms
from hyperfolio.answer.spans import CORPORATE, Span, in_format, name_spans, typed_spans
from hyperfolio.answer.table_answers import asks_rows

_WHICH_ROWS_ASKED = re.compile(r"^\s*(?:which|who)\b", re.I)  # the row's key is the answer, whatever it measures
READ_PASSAGES = 6  # best passages a short answer is read from
NEAR_WORDS = 12  # proximity falls to half this many words away from the question's words
STATED_COUNT_NEAR = 0.5  # a count within ~6 words of the question's words is the answer, not a list's length
LIST_SHARE = 0.7  # passages scoring this share of the best may hold a listed value
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
_WHERE = re.compile(r"^\s*where\b", re.I)
_LABEL_ABBREVIATIONS = {"no.": "number", "nos.": "numbers", "#": "number", "tel.": "telephone", "ph.": "phone"}
_HOW_MANY = re.compile(r"\bhow (?:many|much)\s+([^\W\d_]+)(?:\s+([^\W\d_]+))?", re.I)
_PLACE = re.compile(r"^(?:\w+\s+){0,3}?(?:in|at|near|from|on)\s+", re.I)
_WHICH_NOUN = re.compile(
    r"\b(which|what)\s+(?!(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|about)\b)\w+", re.I
)


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
    company = kind == Kind.NAME and bool(ASKS_COMPANY.search(question))
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


# A list of values of one kind ("what are the amounts on the checks", "list the years"): the plural noun
# the question asks for says which.
_VALUES_LISTED = (
    (Kind.MONEY, re.compile(r"\b(amounts|sums|prices|costs|payments|fees|salaries|budgets)\b", re.I)),
    (Kind.PERCENT, re.compile(r"\b(percentages|percents|rates|shares)\b", re.I)),
    (Kind.YEAR, re.compile(r"\byears\b", re.I)),
    (Kind.DATE, re.compile(r"\bdates\b", re.I)),
    (Kind.IDENTIFIER, re.compile(r"\b(phone numbers|e-?mail(?: addresse)?s|websites|web addresses|urls)\b", re.I)),
    (Kind.NUMBER, re.compile(r"\b(scores|values|numbers|figures|counts|totals)\b", re.I)),
)

_QUESTIONS_LISTED = re.compile(r"\bquestions\b", re.I)
_ASKED = re.compile(
    r"\b(?:Is|Are|Was|Were|Do|Does|Did|Can|Could|Has|Have|How|What|Why|Which|Who|When|Where)\b[^?.!:;]{3,120}\?"
)


def listed_values(question: str, ranked: Sequence[tuple[Passage, float]]) -> list[str]:
    """The values of the kind a list question asks for ("What are the amounts on the checks issued to
    Mont Blanc?") that the passages scoring near the best state, in rank order, each once, or the
    questions the best passage's chunk asks when it asks for questions; [] for fewer than two."""
    kind = next((kind for kind, asked in _VALUES_LISTED if asked.search(question)), None)
    asks_questions = bool(_QUESTIONS_LISTED.search(question))
    if (kind is None and not asks_questions) or not ranked:
        return []
    near = [passage.text for passage, score in ranked if score >= LIST_SHARE * ranked[0][1]]
    if asks_questions:  # "list the questions asked about the services": those the best passage's chunk asks
        found = [m.group(0).strip() for m in _ASKED.finditer(ranked[0][0].item.chunk.text)]
    else:
        assert kind is not None
        strict = kind in {Kind.MONEY, Kind.PERCENT, Kind.YEAR}  # "two checks" is no amount
        spans = [s for text in near for s in typed_spans(text, kind, question) if not strict or s.kind == kind]
        found = [in_format(question, s) for s in spans]
    values = [v for v in dict.fromkeys(found) if not stated_in(question, Span(v, 0, 0, Kind.TEXT))]
    return values if len(values) >= 2 else []


def listed(question: str, ranked: Sequence[tuple[Passage, float]]) -> str:
    """The values of the kind a list question asks for, else the items the best passage enumerates, else
    the names it states."""
    values = listed_values(question, ranked)
    if values:
        return ", ".join(values)
    passage = ranked[0][0]
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


def short_answer(question: str, candidates: Sequence[Passage], scores: np.ndarray) -> ShortAnswer | None:
    """The short answer to `question` from the scored passages, or None when none holds one."""
    order = [int(i) for i in np.argsort(-scores, kind="stable") if np.isfinite(scores[i])]
    if not order:
        return None
    ranked = [(candidates[i], float(scores[i])) for i in order[:READ_PASSAGES]]
    kind = expected_kind(question)
    asked, question = question, core_question(question)  # how to write the answer is not what it is about
    passage, score = ranked[0]
    if asks_rows(question):  # the rows a superlative, threshold or kind picks answer it, ranked first or not
        passage, score = next(((p, s) for p, s in ranked if p.kind == "derived" and p.value), ranked[0])
        if passage.kind == "derived" and _WHICH_ROWS_ASKED.match(question):  # "which region": the row, not a sum
            return ShortAnswer(passage.value, Kind.NAME, passage, score)
    if passage.value and (value := cell_value(asked, kind, passage.value)):  # a cell read off a table first
        return ShortAnswer(value, kind, passage, score)
    passage, score = ranked[0]
    if quoted_either(asked) and (either := one_of_two(asked, ranked)) is not None:
        return either
    if kind == Kind.EXPLANATION:
        found, found_score = explanation(ranked, candidates)
        return ShortAnswer(found.text, kind, found, found_score)
    if kind == Kind.YES_NO:
        return ShortAnswer(yes_no(question, passage), kind, passage, score)
    if kind == Kind.LIST:
        items = listed(question, ranked)
        return ShortAnswer(items, kind, passage, score) if items else None
    if kind == Kind.COUNT and (count := counted(question, ranked)) is not None:
        return count
    if kind in (Kind.NAME, Kind.TEXT) and (named := form_answer(question, ranked, candidates)) is not None:
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
