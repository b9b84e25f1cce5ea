"""Finding entity-like phrases in text without a model, and naming them canonically.

Shared by the offline extractor (which builds the hypergraph) and by offline query
decomposition (which looks the same kinds of phrases up in it), so both sides agree
on what a name is and how it is normalised.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from hyperfolio.labels import DISPLAY_PARTS, label_mentions
from hyperfolio.lexicon import MONTHS, STOPWORDS

# Words that may sit inside a capitalised name ("Bank of England", "Procter & Gamble").
_CONNECTORS = {"of", "&", "for", "the", "de", "la", "du", "von", "van"}
# Capitalised words that start sentences or headings but rarely name anything.
_WEAK_CAPITALS = {
    "the", "a", "an", "in", "on", "at", "for", "from", "to", "this", "that", "these", "those", "it", "its",
    "we", "our", "they", "their", "he", "she", "his", "her", "as", "by", "with", "and", "or", "but", "if",
    "when", "while", "after", "before", "since", "however", "moreover", "also", "there", "here", "what",
    "which", "who", "how", "why", "where", "all", "each", "every", "some", "many", "most", "more", "other",
    "such", "both", "one", "two", "three", "first", "second", "third", "new", "table", "figure", "fig",
    "page", "section", "chapter", "note", "notes", "source", "sources", "see", "yes", "no", "total", "i",
    "is", "are", "was", "were", "be", "been", "can", "may", "will", "would", "should", "could", "not",
}  # fmt: skip
_WORD = r"[A-Z][\w'’\-]*[\w]|[A-Z]"
_CAPITALISED = re.compile(rf"(?:{_WORD})(?:\s+(?:(?:of|&|for|de|la|du|von|van|of the)\s+)?(?:{_WORD}))*")
_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9]{1,9}(?:-[A-Z0-9]+)*s?\b")
_QUANTITY = re.compile(
    r"(?:[$€£¥]\s?)?\b\d(?:[\d,]*\d)?(?:\.\d+)?\s?(?:%|percent|per cent|million|billion|trillion|thousand|"
    r"mw|gw|kw|mwh|gwh|twh|kg|km|mm|cm|m|ms|s|x|people|staff|children|(?-i:[A-Z]{2,5}\b)|(?-i:[a-z]{3,}s\b))?(?!\w)",
    re.IGNORECASE,
)
_NUMBER_PART = re.compile(r"[$€£¥]?\s?\d(?:[\d,]*\d)?(?:\.\d+)?")
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_TOKEN = re.compile(r"[^\W\d_](?:[^\W\d_]|-){2,}")  # words of three or more letters, in any script
# The same words, found faster (whole runs of letters or hyphens; the short ones are dropped after).
_RUN = re.compile(r"[^\W\d_](?:[^\W\d_]+|-+)*")
_ASCII_RUN = re.compile(r"[a-z]+(?:-+[a-z]*)*")  # _RUN where every letter is one of a-z
_WIDE_WORD_CHAR = re.compile(r"[^\W\x00-\x7f]")  # a letter or digit beyond ASCII
# Sentence ends in a chunk's text (a chunk is already within one page and section): end punctuation
# before a capital or digit, blank lines, and list bullets.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n{2,}|\n(?=[-•*]\s)")


@dataclass(frozen=True)
class Phrase:
    text: str
    kind: str  # "name", "acronym", "quantity", "year", "label", "keyphrase"
    start: int


def normalize_name(name: str) -> str:
    """Canonical key of a name: case, accents, punctuation, leading articles and plurals folded."""
    text = unicodedata.normalize("NFKD", name)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = re.sub(r"[’'`]s\b", "", text)
    text = re.sub(r"[^\w%$€£.]+", " ", text).strip(" .")
    words = text.split()
    while words and words[0] in {"the", "a", "an"}:
        words = words[1:]
    if words and len(words[-1]) > 3 and words[-1].endswith("s") and not words[-1].endswith("ss"):
        words[-1] = words[-1][:-1]
    return " ".join(words)


def _clean_capitalised(match: str) -> str:
    words = match.split()
    while words and words[0].lower() in _WEAK_CAPITALS:
        words = words[1:]
    while words and words[-1].lower() in _CONNECTORS:
        words = words[:-1]
    return " ".join(words)


def find_phrases(text: str, known_names: set[str] | frozenset[str] = frozenset()) -> list[Phrase]:
    """Entity-like phrases in reading order: names, acronyms, quantities, years, figure/table labels.

    A lone capitalised word opening a sentence counts only if `known_names` (names seen
    mid-sentence elsewhere in the document) holds it: "Rotterdam remains..." but not "Revenue rose...".
    """
    found: dict[tuple[int, str], Phrase] = {}
    taken: list[tuple[int, int]] = []

    def add(start: int, end: int, value: str, kind: str) -> None:
        if any(s <= start < e or s < end <= e for s, e in taken):
            return
        taken.append((start, end))
        found[(start, value)] = Phrase(value, kind, start)

    for label in label_mentions(text, DISPLAY_PARTS):
        add(label.start, label.end, str(label), "label")
    for m in _QUANTITY.finditer(text):
        value = m.group(0).strip()
        number = _NUMBER_PART.match(value)
        if _YEAR.fullmatch(value) or (number and _YEAR.fullmatch(number.group(0)) and value[-1].isalpha()):
            year = number.group(0) if number else value  # "2023 revenues" is a year followed by a word
            add(m.start(), m.start() + len(year), year, "year")
        elif re.search(r"[%$€£¥a-zA-Z]", value) or len(re.sub(r"\D", "", value)) >= 3:
            add(m.start(), m.end(), value, "quantity")
    for m in _CAPITALISED.finditer(text):
        value = _clean_capitalised(m.group(0))
        if not value or value.lower() in STOPWORDS or value.lower() in _WEAK_CAPITALS:
            continue
        start = m.start() + max(0, m.group(0).find(value.split()[0]))  # the value's spaces may be cleaned
        sentence_start = start == 0 or text[max(0, start - 2) : start].strip() in {"", ".", "!", "?", ":", "•"}
        if sentence_start and " " not in value and not value.isupper() and value not in known_names:
            continue  # a lone capitalised word opening a sentence is usually just a word
        if len(value) < 2:
            continue
        add(start, start + len(value), value, "name")
    for m in _ACRONYM.finditer(text):
        value = m.group(0)
        if value.lower() not in _WEAK_CAPITALS and not value.isdigit():
            add(m.start(), m.end(), value, "acronym")
    return sorted(found.values(), key=lambda p: p.start)


_NUMBER_TEXT = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def numbers(text: str) -> list[float]:
    """Every number in a text, in order, thousands separators dropped ("412,000 TEU" -> [412000.0])."""
    return [float(m.group(0).replace(",", "")) for m in _NUMBER_TEXT.finditer(text)]


def first_number(text: str) -> float | None:
    """The first number in a text ("412,000 TEU" -> 412000.0), thousands separators dropped."""
    match = _NUMBER_TEXT.search(text)
    return float(match.group(0).replace(",", "")) if match else None


# Names that say little about which passage answers, whatever the document: legal-form suffixes,
# calendar words and bare units. Years and bare numbers are recognised by shape.
_GENERIC_NAMES = frozenset(MONTHS) | frozenset(
    """inc inc. ltd ltd. llc corp corp. co co. plc ag sa gmbh nv bv lp llp group company companies
    q1 q2 q3 q4 h1 h2 fy
    monday tuesday wednesday thursday friday saturday sunday
    % percent per cent million billion thousand usd eur gbp inr rs rs. mw gw kw kg km mm cm""".split()
)
_NUMBERISH = re.compile(r"^[$€£¥]?\s?[\d.,]+\s?(?:%|[a-z]{0,3})?$", re.IGNORECASE)


def generic_name(name: str) -> bool:
    """Whether an entity name is generic by its form: a year, a bare number or quantity, a legal-form
    suffix, a month or weekday, a unit. Such entities join many hyperedges and explain little."""
    text = name.strip().lower()
    if not text:
        return True
    return bool(_YEAR.fullmatch(text) or _NUMBERISH.fullmatch(text)) or text in _GENERIC_NAMES


_NOT_CONTENT = STOPWORDS | _WEAK_CAPITALS


def word_runs(text: str) -> list[str]:
    """The text's lower-cased words, a word of two letters or less left out when that is known before
    lowering; what `content_words` filters."""
    if "\u0130" in text or "\u03a3" in text:  # "İ" lowers to two characters and "Σ" by what follows it:
        return [w.lower() for w in _RUN.findall(text) if len(w) > 2]  # each word lowered on its own
    low = text.lower()  # lowering first finds the same words, in one call
    if low.isascii() or not _WIDE_WORD_CHAR.search(low):  # letters are a-z only: a pattern twice as fast
        return _ASCII_RUN.findall(low)
    return _RUN.findall(low)


def is_content_word(word: str) -> bool:
    """A lower-cased word longer than two letters that is not a stop word."""
    return len(word) > 2 and word not in _NOT_CONTENT


def content_words(text: str) -> list[str]:
    """Lower-cased content words (no stop words), for key phrases and theme keywords."""
    return [w for w in word_runs(text) if len(w) > 2 and w not in _NOT_CONTENT]


def key_phrases(text: str, max_len: int = 3) -> list[str]:
    """Runs of 2..max_len consecutive content words: candidate multi-word terms ("renewable energy")."""
    out: list[str] = []
    for clause in re.split(r"[.;:!?,()\[\]\n]", text):
        words = re.findall(r"[^\W\d_](?:[^\W\d_]|-)+|\S+", clause)  # capitalised words are names, not terms
        run: list[str] = []
        for w in words + ["."]:
            if _TOKEN.fullmatch(w) and w.islower() and w not in STOPWORDS and w not in _WEAK_CAPITALS:
                run.append(w)
                continue
            for size in range(2, max_len + 1):
                for i in range(len(run) - size + 1):
                    out.append(" ".join(run[i : i + size]))
            run = []
    return out


def one_line(text: str) -> str:
    """Whitespace folded to single spaces: prompts and tables read better without layout breaks."""
    return " ".join(text.split())


def clip(text: str, limit: int) -> str:
    """At most `limit` characters, with an ellipsis when something was cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


_ABBREVIATION_END = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|No|Nos|Fig|Figs|Vol|pp|vs|Inc|Ltd|Co|Corp|e\.g|i\.e|etc|approx)|"
    r"(?<!\w)[A-Z])\.$"
)


def sentences(text: str) -> list[str]:
    """The sentences of a chunk's text, whitespace folded; empty pieces dropped. A full stop after a
    title, a common abbreviation or an initial ("Mr. S.V. Shanbhag", "Fig. 3", "Acme Inc. reported")
    does not end a sentence."""
    found: list[str] = []
    for piece in _SENTENCE_END.split(text):
        folded = one_line(piece)
        if not folded:
            continue
        if found and _ABBREVIATION_END.search(found[-1]):
            found[-1] = f"{found[-1]} {folded}"
        else:
            found.append(folded)
    return found
