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

# A number written as a word, as counts and page numbers are.
NUMBER_WORDS: dict[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
}  # fmt: skip

# A month's name or abbreviation -> its number.
MONTHS: dict[str, int] = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
            ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
            ("october", "oct"), ("november", "nov"), ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}  # fmt: skip

# A place in order written as a word: "the second page", "the third quarter", "the fourth bullet".
ORDINAL_WORDS: dict[str, int] = {
    word: place
    for place, word in enumerate(
        "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
        "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth".split(),
        1,
    )
}

# The parties a case's caption names, those named before its "v." first.
CASE_PARTIES: tuple[str, ...] = ("plaintiff", "appellant", "petitioner", "defendant", "appellee", "respondent")
FIRST_PARTIES: frozenset[str] = frozenset(CASE_PARTIES[:3])
