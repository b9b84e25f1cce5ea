"""A document's title from what its file says of itself: the metadata (document-properties) title when
it reads as one, else the file's name made readable. The cover's layout comes first where there is one
(`parse.title`)."""

from __future__ import annotations

import re
from pathlib import Path

_PLACEHOLDER_TITLES = {
    "untitled",
    "contents",
    "document",
    "slide 1",
    "powerpoint presentation",
    "presentation",
    "title",
    "ug",
}
_FILE_TITLE = re.compile(r"\.(pdf|docx?|pptx?|xlsx?|csv|indd|tex|dvi|qxd|html?)$")


def meaningful_title(title: str | None) -> str | None:
    """A metadata (document-properties) title worth showing, or None: templates and tools leave
    placeholders, file names ("Report_Cajon_4.30.20", "draft.docx") and their own names. The one rule
    for every format's metadata title."""
    if not title:
        return None
    title = " ".join(title.split())
    low = title.lower()
    if len(title) < 4 or low in _PLACEHOLDER_TITLES or not any(ch.isalpha() for ch in title):
        return None
    if "_" in title or _FILE_TITLE.search(low) or low.startswith(("microsoft ", "untitled")):
        return None
    return title


def file_title(path: str | Path) -> str:
    """The file's name as a title, the last resort: "ISEP_student_handbook_2020.pdf" -> "ISEP student
    handbook 2020" (a name that is only a hash stays as it is: nothing better is known)."""
    stem = Path(path).stem
    return " ".join(stem.replace("_", " ").split()) or stem
