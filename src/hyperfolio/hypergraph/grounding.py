"""Does a page say this? Names a model wrote, matched to the page's own text the way people read it.

A model rewrites what it copies: "1,850 MW" for a table cell "1,850" under the header "Capacity (MW)",
"97.3 M$" for "97.3", "cross page" for "cross-\npage", "Revenues" for "revenue". Matching word for
word drops such facts (13 of 18 on the sample report with a 1.5B model). Here both sides are compared
as `textmatch` reads text (numbers as values, words folded); a name is supported when every number
it holds is a number on the page, every capitalised word of it is on the page ("Caspian region" is
not supported by "region") and enough of its other words are, exactly or by a close spelling
(difflib's ratio, so one-letter slips and British/American spellings pass and other words do not).
"""

from __future__ import annotations

import difflib
import re

from hyperfolio.lexicon import STOPWORDS
from hyperfolio.textmatch import WORD, fold, has_unit, quantities, word_forms, word_unit

# Words that only say how a number is counted: a model adds them to a bare table value.
UNIT_WORDS = frozenset(
    "m bn b k mn mm cm km kg t mw gw kw kwh mwh gwh twh teu usd eur gbp jpy cny chf us percent pct per cent"
    " million billion thousand trillion".split()
)
# Close enough to be the same word: "organisation"/"organization" (0.92), "favour"/"favor" (0.91);
# not "capacity"/"capital" (0.67) or "north"/"south" (0.6).
CLOSE_SPELLING = 0.85
# Share of a name's words that must be on the page (numbers and capitalised words apart, which must
# all be there): "Baltic region" is supported by a table row "Baltic".
WORD_SHARE = 0.5
_LINE_BREAK_HYPHEN = re.compile(r"-[ \t]*\n\s*")


def _words(text: str) -> list[str]:
    """Content words as looked for: folded, stemmed, without stop words and unit words."""
    words = (word_unit(w) for w in WORD.findall(fold(text)))
    return [w for w in words if len(w) > 1 and w not in STOPWORDS and w not in UNIT_WORDS]


class PageText:
    """One page's text, read once, asked about many names."""

    def __init__(self, text: str) -> None:
        self.folded = " ".join(fold(text).split())
        self.quantities = quantities(text)
        # A hyphen at a line break may join one word ("con-\ntainer") or a compound ("cross-\npage"):
        # read as a compound, the page has the parts and the solid word.
        self.forms = word_forms(_LINE_BREAK_HYPHEN.sub("-", text))
        self._vocabulary = sorted(self.forms)
        self._close: dict[str, bool] = {}

    def has_word(self, word: str) -> bool:
        """The word is on the page, or one spelt closely enough (short words must match exactly)."""
        if has_unit(word, self.forms):
            return True
        if word not in self._close:
            close = len(word) >= 4 and difflib.get_close_matches(word, self._vocabulary, n=1, cutoff=CLOSE_SPELLING)
            self._close[word] = bool(close)
        return self._close[word]

    def supports(self, name: str) -> bool:
        """Whether the page states this name (see the module docstring)."""
        folded = " ".join(fold(name).split())
        if not folded:
            return False
        if folded in self.folded:
            return True
        numbers = quantities(name)
        if not all(any(q.value in p.forms for p in self.quantities) for q in numbers):
            return False
        words = _words(name)
        if not words:
            return bool(numbers)  # a value with only units around it: its numbers are on the page
        named = _words(" ".join(w for w in name.split() if w[:1].isupper()))
        if not all(self.has_word(w) for w in named):
            return False
        return sum(self.has_word(w) for w in words) >= WORD_SHARE * len(words)
