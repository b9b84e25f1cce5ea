"""The backends a collection can live in, chosen by its location in one place.

A location with a URL scheme (`postgresql://…`) names a server backend by that scheme; anything else is a
folder, the embedded SQLite backend. Each backend is a module with the same four functions (`open_store`,
`open_model_records`, `store_exists`, `remove_store`), imported only when chosen, so the default install
needs no database driver. A new backend is one row here and one such module.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from hyperfolio.errors import StoreError

SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class Backend:
    name: str
    module: str
    schemes: tuple[str, ...] = ()  # URL schemes it serves; none: the folder backend
    extra: str = ""  # the install extra that brings its driver

    def load(self, location: str | Path) -> ModuleType:
        """Its module; a missing driver is one line naming the location and what to install."""
        try:
            return importlib.import_module(self.module)
        except ImportError as exc:
            if not self.extra:
                raise
            raise StoreError(
                f"{location}: a {self.name} collection needs pip install 'hyperfolio[{self.extra}]' "
                f"({exc.name} is missing)"
            ) from exc


FOLDER = Backend("SQLite", "hyperfolio.store.sqlite")
BACKENDS = (Backend("PostgreSQL", "hyperfolio.store.postgres", ("postgresql", "postgres"), "postgres"), FOLDER)


def backend_of(location: str | Path) -> Backend:
    """The backend a location names; an unknown URL scheme is an error that lists the known ones."""
    text = str(location)
    found = SCHEME.match(text)
    if found is None:
        return FOLDER
    scheme = found.group(1).lower()
    for backend in BACKENDS:
        if scheme in backend.schemes:
            return backend
    known = ", ".join(f"{s}://" for b in BACKENDS for s in b.schemes)
    shown = re.sub(r"://([^/@]*?):[^/@]*@", r"://\1@", text)  # never the password
    raise StoreError(f"{shown}: no backend serves {scheme}:// (known: {known}; or a folder for SQLite)")


def is_url(location: str | Path) -> bool:
    """Whether a location names a server (a URL), not a folder."""
    return SCHEME.match(str(location)) is not None
