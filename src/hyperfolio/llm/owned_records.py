"""Model records lent to a helper, or opened by it from a collection's location and then closed with it."""

from __future__ import annotations

from pathlib import Path
from typing import Self

from hyperfolio.store import ModelRecordStore, model_records_from


class RecordsUser:
    """A helper over a collection's model records (the cache, the usage meter, the profiles), if any."""

    def __init__(self, records: ModelRecordStore | str | Path | None) -> None:
        self._records: ModelRecordStore | None = None
        self._owned = False
        if records is not None:
            self._records, self._owned = model_records_from(records)

    def close(self) -> None:
        if self._records is not None and self._owned:
            self._records.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
