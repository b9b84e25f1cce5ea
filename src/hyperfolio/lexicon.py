"""Word lists shared by keyword search and answer scoring (no project imports, like model.py)."""

from __future__ import annotations

STOPWORDS: frozenset[str] = frozenset(
    """a an and are as at be but by did do does for from had has have how i if in into is it its of on or so
    such than that the their then there these they this to was were what when where which who whom why will
    with would you your we our can could should may might much many about over any all each other some more
    most""".split()
)

# Words that carry no content in a question about a document, on top of the stop words.
QUESTION_WORDS: frozenset[str] = frozenset(
    "according report document page show shows shown give given tell please list".split()
)

# Words that join: a line ending in one runs on into the next ("THE IMPACTS OF CLIMATE CHANGE ON" /
# "HUMAN HEALTH"), so it is no heading of its own and a title continues past it.
JOINING_WORDS: frozenset[str] = frozenset(
    "a an and as at by for from in into of on or the to with & via vs vs. versus about under toward towards".split()
)
