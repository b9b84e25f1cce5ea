"""Case-blind cue patterns: a cover's wording varies in case ("FORM 10-K", "Form 10-K"), so every cue
the cards look for is one pattern built from its alternatives, ignoring case."""

from __future__ import annotations

import re


def cue(*alternatives: str) -> re.Pattern[str]:
    """One pattern matching any of the alternatives (each a regular expression), ignoring case."""
    return re.compile("|".join(alternatives), re.IGNORECASE)
