"""Store schema versions: a collection written by an older release is upgraded in place when opened; one
written by a newer release is refused, since its tables may mean what this release cannot read."""

from __future__ import annotations

from hyperfolio.errors import StoreError


def newer_than_this(found: str | None, current: str, where: str) -> None:
    """Refuse a store whose schema is newer than `current`, in one line naming both versions."""
    if found is None or not found.isdigit() or int(found) <= int(current):
        return
    raise StoreError(
        f"{where} was written by a newer hyperfolio (store schema {found}); this release reads schema {current} "
        "and older: upgrade hyperfolio to open it"
    )
