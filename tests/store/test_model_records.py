"""The model-call records (reply cache, usage per stage, server profiles) on both backends.

The same expectations for a SQLite collection directory and a PostgreSQL database: what one records
object writes, another on the same collection reads (so separate processes share the cache and the
accounting); counts add up under concurrent writers; nothing is created by reading usage.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from hyperfolio.llm.cache import ResponseCache
from hyperfolio.llm.server_profile import ProfileStore, ServerProfile
from hyperfolio.llm.usage import UsageMeter, read_usage
from hyperfolio.store import open_model_records, open_store, store_exists


@pytest.fixture(params=["sqlite", "postgres"])
def location(request, tmp_path):
    """A collection's location, its store created (as `Collection` does before any model call)."""
    where = str(tmp_path / "col") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    open_store(where).close()
    return where


def test_replies(location):
    one, two = open_model_records(location), open_model_records(location)
    try:
        one.put_reply("k1", "m", "first", 3, 4)
        one.put_reply("k2", "other", "second", 0, 0)
        got = two.reply("k1")
        assert got is not None and (got.response, got.model, got.prompt_tokens, got.completion_tokens) == (
            "first",
            "m",
            3,
            4,
        )
        two.put_reply("k1", "m", "replaced", 5, 6)  # a second write of a key replaces it
        assert one.reply("k1").response == "replaced" and one.count_replies() == 2
        one.discard_reply("k1")
        assert two.reply("k1") is None and two.reply("never") is None
        assert two.clear_replies("m") == 0 and two.clear_replies("other") == 1
        assert one.count_replies() == 0
    finally:
        one.close()
        two.close()


def test_usage_accumulates_across_record_objects(location):
    with UsageMeter(location) as first:
        first.record("extract", prompt_tokens=10, completion_tokens=5, seconds=0.5)
        first.record_hit("extract")
    with UsageMeter(location) as second:  # another run (or process) adds to the totals
        second.record("extract", prompt_tokens=1, completion_tokens=1, seconds=0.25, estimated=True)
        second.record_retry("answer", seconds=1.0)
        assert second.snapshot()["extract"].calls == 1
    totals = read_usage(location)
    extract = totals["extract"]
    assert (extract.calls, extract.cache_hits, extract.prompt_tokens, extract.completion_tokens) == (2, 1, 11, 6)
    assert extract.seconds == pytest.approx(0.75) and extract.estimated_calls == 1
    assert (totals["answer"].retries, totals["answer"].calls) == (1, 0)
    with UsageMeter(location) as meter:
        meter.reset()
    assert read_usage(location) == {}


OLD_USAGE_TABLE = """CREATE TABLE model_usage (
    stage TEXT PRIMARY KEY,
    calls BIGINT NOT NULL DEFAULT 0,
    cache_hits BIGINT NOT NULL DEFAULT 0,
    prompt_tokens BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    seconds DOUBLE PRECISION NOT NULL DEFAULT 0,
    estimated_calls BIGINT NOT NULL DEFAULT 0,
    retries BIGINT NOT NULL DEFAULT 0
)"""


def test_a_usage_table_made_before_the_rejected_counter_gains_it(location):
    """Collections made before `rejected` existed keep their totals and count rejections from then on."""
    records = open_model_records(location)
    try:  # the table as it was made then, with totals in it
        records._run("DROP TABLE model_usage")
        records._run(OLD_USAGE_TABLE)
        records._run("INSERT INTO model_usage (stage, calls, retries) VALUES ('extract', 7, 2)")
    finally:
        records.close()
    before = read_usage(location)["extract"]  # opening to read adds the column
    assert (before.calls, before.retries, before.rejected) == (7, 2, 0)
    with UsageMeter(location) as meter, UsageMeter(location) as other:  # a second opening finds it there
        meter.record_rejected("extract")
        other.record_rejected("extract")
        meter.record("extract", prompt_tokens=3)
    after = read_usage(location)["extract"]
    assert (after.calls, after.retries, after.rejected, after.prompt_tokens) == (8, 2, 2, 3)


def test_concurrent_counting_loses_nothing(location):
    meters = [UsageMeter(location) for _ in range(2)]  # two connections, four threads
    try:

        def work(meter: UsageMeter) -> None:
            for _ in range(50):
                meter.record("extract", prompt_tokens=2, completion_tokens=1)

        threads = [threading.Thread(target=work, args=(meters[i % 2],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for meter in meters:
            meter.close()
    extract = read_usage(location)["extract"]
    assert (extract.calls, extract.prompt_tokens, extract.completion_tokens) == (200, 400, 200)


def test_profiles(location):
    profile = ServerProfile("http://127.0.0.1:9/v1", "tiny", kind="llama-cpp-python", slots=1, probed_at=time.time())
    stale = ServerProfile("http://127.0.0.1:8/v1", "tiny", probed_at=time.time() - 30 * 24 * 3600)
    writer, reader = ProfileStore(location), ProfileStore(location)
    try:
        writer.put(profile)
        writer.put(stale)
        got = reader.get("http://127.0.0.1:9/v1", "tiny")
        assert got is not None and (got.kind, got.slots) == ("llama-cpp-python", 1)
        assert reader.get("http://127.0.0.1:8/v1", "tiny") is None  # older than the profile's lifetime
        assert reader.get("http://127.0.0.1:9/v1", "other") is None
        writer.forget()
        fresh = ProfileStore(location)  # nothing in its memory: it reads the table
        assert fresh.get("http://127.0.0.1:9/v1", "tiny") is None
        fresh.close()
    finally:
        writer.close()
        reader.close()


def test_reading_usage_creates_nothing(tmp_path):
    missing = tmp_path / "nothing-here"
    assert read_usage(missing) == {}
    assert not missing.exists()


def test_cache_through_the_collection_database(location):
    with ResponseCache(location) as cache:
        cache.put("key", "m", "reply", 1, 2)
        assert cache.get("key").response == "reply" and cache.get("nope") is None
        assert (cache.hits, cache.misses, len(cache)) == (1, 1, 1)
    assert store_exists(location)


def test_postgres_copy_keeps_the_model_records(pg_url, pg_url_factory):
    from hyperfolio.store.postgres import PostgresStore

    source = PostgresStore(pg_url)
    with ResponseCache(pg_url) as cache, UsageMeter(pg_url) as meter:
        cache.put("key", "m", "reply")
        meter.record("answer", prompt_tokens=7)
    target = source.copy_to(pg_url_factory())
    try:
        with ResponseCache(target.url) as copied:
            assert copied.get("key").response == "reply"
        assert read_usage(target.url)["answer"].prompt_tokens == 7
    finally:
        source.close()
        target.close()


def test_sqlite_records_live_in_the_collection_file(tmp_path):
    from hyperfolio.store.sqlite import DB_NAME

    with ResponseCache(tmp_path / "col") as cache:
        cache.put("key", "m", "reply")
        assert cache.where == str(tmp_path / "col" / DB_NAME)
    assert Path(cache.where).is_file()


def test_two_workers_on_one_postgres_collection_share_replies_and_usage(pg_url, tmp_path, fake_llm, embedder):
    """Two `Collection`s on one PostgreSQL database (two machines, each with its own local folder): the
    second reuses the reply the first paid for and sees its accounting."""
    from fake_openai_server import Reply  # registered by tests/conftest.py

    from hyperfolio.collection import Collection
    from hyperfolio.config import ModelOptions, Settings
    from hyperfolio.sample import SAMPLE_QUESTION, write_sample_report

    fake_llm.default = Reply.json({"answer": "North Sea, 1,850 MW", "citations": [1], "sufficient": True})
    options = ModelOptions(base_url=fake_llm.url, answer_model="fake-model", probe=False, max_retries=0)
    settings = Settings(models=options)
    first = Collection(pg_url, settings=settings, embedder=embedder, folder=tmp_path / "one")
    try:
        first.add(write_sample_report(tmp_path / "report.pdf"))
        assert first.ask(SAMPLE_QUESTION, mode="hybrid").answerer == "llm"
    finally:
        first.close()
    asked = len(fake_llm.requests)
    assert asked >= 1
    second = Collection(pg_url, settings=settings, embedder=embedder, folder=tmp_path / "two")
    try:
        answer = second.ask(SAMPLE_QUESTION, mode="hybrid")
        assert answer.answerer == "llm" and "1,850" in answer.text
        assert len(fake_llm.requests) == asked  # served from the shared cache
        usage = second.stats()["model_usage"]["answer"]
        assert usage["calls"] == asked and usage["cache_hits"] == 1
    finally:
        second.close()
    assert not list((tmp_path / "two").glob("*.db"))  # nothing about models was kept locally
