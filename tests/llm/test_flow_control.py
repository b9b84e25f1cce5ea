"""Flow control against scripted servers: streamed timeouts, budgets, disconnects, slots, the breaker."""

from __future__ import annotations

import json
import threading
import time

import pytest
from fake_openai_server import Reply
from pydantic import BaseModel

from hyperfolio.config import ModelOptions
from hyperfolio.hypergraph.extract_model import PageExtraction
from hyperfolio.llm.errors import ModelContextError, ModelHTTPError, ModelTimeoutError, ModelUnavailableError
from hyperfolio.llm.flow import AdaptiveLimit, CircuitBreaker
from hyperfolio.llm.json_repair import parse_json_reply
from hyperfolio.llm.openai_compat import OpenAICompatClient
from hyperfolio.llm.registry import ModelSet
from hyperfolio.llm.transport import ServerLink

ASK = [{"role": "user", "content": "Say something."}]


class Item(BaseModel):
    name: str


NAME_40 = "Offshore wind capacity of the North Sea."  # 40 characters of real text (a loop would be rejected)


@pytest.fixture
def client_for(make_client):
    """Clients that do not retry unless told to, optionally on a shared ServerLink."""

    def make(link: ServerLink | None = None, **kw) -> OpenAICompatClient:
        kw.setdefault("max_retries", 0)
        return make_client(link=link, **kw)

    return make


def test_slow_but_alive_stream_finishes_past_the_timeout(fake_llm, client_for):
    client = client_for(timeout=0.4)
    text = "tokens keep coming slowly but steadily"
    fake_llm.script(Reply(text, piece_delay=0.15))
    started = time.monotonic()
    assert client.complete(ASK) == text
    assert time.monotonic() - started > 0.4 * 2  # longer than the timeout, yet not cut off
    assert fake_llm.requests[-1]["stream"] is True


def test_a_timed_out_request_is_retried_with_a_larger_budget(fake_llm, client_for):
    client = client_for(timeout=0.4, max_retries=1)
    # Both attempts need 0.6 s to the first token: only a retry with more than 0.4 s can succeed.
    fake_llm.script(Reply.slow(0.6, "first"), Reply.slow(0.6, "second"))
    assert client.complete(ASK) == "second"
    assert len(fake_llm.requests) == 2


def test_a_client_that_gives_up_stops_the_generation(fake_llm, client_for):
    client = client_for(timeout=0.3)
    fake_llm.script(Reply("x" * 400, piece_delay=0.6))  # 100 pieces, each after a silence longer than the timeout
    with pytest.raises(ModelTimeoutError):
        client.complete(ASK)
    deadline = time.monotonic() + 3
    while fake_llm.disconnects == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake_llm.disconnects == 1  # the server noticed the client left ...
    assert fake_llm.pieces_sent <= 3  # ... and wrote almost nothing of the 100 pieces


def test_a_stream_cut_mid_way_is_retried(fake_llm, client_for):
    client = client_for(max_retries=1)
    fake_llm.script(Reply('{"name": "cut short and never finished"}', cut_after=2), Reply.json({"name": "whole"}))
    assert client.complete_json(ASK, Item).name == "whole"
    assert len(fake_llm.requests) == 2


def test_a_server_that_ignores_stream_still_works(fake_llm, client_for):
    fake_llm.streams = False
    client = client_for()
    fake_llm.script("plain reply")
    assert client.complete(ASK) == "plain reply"


def test_breaker_takes_a_stage_offline_after_repeated_failures(fake_llm, client_for, caplog):
    link = ServerLink(AdaptiveLimit(2, slots=2), CircuitBreaker(threshold=3, cooldown=60))
    client = client_for(link)
    fake_llm.default = Reply.error(500, "model crashed")
    for _ in range(3):
        with pytest.raises(ModelHTTPError):
            client.complete(ASK, stage="extract")
    with pytest.raises(ModelUnavailableError):
        client.complete(ASK, stage="extract")
    assert len(fake_llm.requests) == 3  # the fourth call was not sent
    warnings = [r for r in caplog.records if "continues offline" in r.getMessage()]
    assert len(warnings) == 1  # one warning, not one per call
    fake_llm.default = Reply("fine")
    assert client.complete(ASK, stage="answer") == "fine"  # other stages are not affected


def test_breaker_lets_one_call_through_after_the_cooldown(fake_llm, client_for):
    link = ServerLink(AdaptiveLimit(1, slots=1), CircuitBreaker(threshold=1, cooldown=0.2))
    client = client_for(link)
    fake_llm.script(Reply.error(500))
    with pytest.raises(ModelHTTPError):
        client.complete(ASK, stage="themes")
    with pytest.raises(ModelUnavailableError):
        client.complete(ASK, stage="themes")
    time.sleep(0.25)
    fake_llm.default = Reply("back")
    assert client.complete(ASK, stage="themes") == "back"
    assert not link.breaker.is_open("themes")


def _run_many(client: OpenAICompatClient, n: int) -> list:
    return client.complete_json_many([[{"role": "user", "content": f"item {i}"}] for i in range(n)], Item)


def test_unknown_single_slot_server_settles_at_one_request(fake_llm, client_for):
    slot = threading.Lock()

    def one_at_a_time(request):
        with slot:
            # Long beside the client's own work: a request's turnaround overlapped at two in flight is a
            # real gain (15 % is a step up), so the client's share must stay far below that even on a
            # loaded two-core machine (0.3 s let 45 ms of noise through once).
            time.sleep(0.6)
        return Reply.json({"name": NAME_40})

    fake_llm.handler = one_at_a_time
    link = ServerLink(AdaptiveLimit(4), CircuitBreaker())
    client = client_for(link)
    assert all(isinstance(r, Item) for r in _run_many(client, 12))  # settling takes 3 + 5 completions
    assert link.limit.settled and link.limit.limit == 1


def test_unknown_parallel_server_climbs_to_the_ceiling(fake_llm, client_for):
    def parallel(request):
        time.sleep(0.3)  # long beside the client's own work, so the gain of each step shows even on a busy machine
        return Reply.json({"name": NAME_40})

    fake_llm.handler = parallel
    link = ServerLink(AdaptiveLimit(4), CircuitBreaker())
    client = client_for(link)
    _run_many(client, 48)
    assert link.limit.limit == 4
    assert fake_llm.max_in_flight == 4


def test_429_halves_the_limit(fake_llm, client_for):
    link = ServerLink(AdaptiveLimit(4, slots=4), CircuitBreaker())
    client = client_for(link, max_retries=1)
    fake_llm.script(Reply.error(429, retry_after="0"), "ok")
    assert client.complete(ASK) == "ok"
    assert link.limit.limit == 2


def test_probe_reads_slots_context_formats_and_is_kept(fake_llm, tmp_path):
    fake_llm.props = {"total_slots": 2, "default_generation_settings": {"n_ctx": 1024}}
    fake_llm.reject_formats = {"json_schema"}  # like llama-cpp-python
    options = ModelOptions(base_url=fake_llm.url, model="fake-model")
    with ModelSet(options, tmp_path / "db.sqlite") as models:
        client = models.get("extract")
        assert client is not None and client.profile is not None
        assert client.profile.slots == 2 and client.profile.context_tokens == 1024
        assert client.profile.generation_tps and client.profile.generation_tps > 0
        assert client.profile.structured["json_schema"] is False
        assert client.profile.structured["json_object_schema"] is True
        assert client.structured_mode == "json_object_schema"  # no refused call is spent on real work
        assert client.link.limit.limit == 2
        assert models.get("answer").link is client.link  # one server, one limit for every role
    probes = len(fake_llm.probes)
    assert probes == 3  # json_schema refused, json_object_schema taken, then the speed probe
    with ModelSet(options, tmp_path / "db.sqlite") as models:
        again = models.get("extract")
        assert again.profile.slots == 2 and again.structured_mode == "json_object_schema"
    assert len(fake_llm.probes) == probes  # kept in the database: no second probe
    assert fake_llm.requests == []  # probing never consumed the script


def test_a_prompt_too_long_teaches_the_context(fake_llm, client_for):
    client = client_for()
    message = "This model's maximum context length is 2048 tokens. However, you requested 2111 tokens"
    fake_llm.script(Reply.error(400, message))
    with pytest.raises(ModelContextError) as info:
        client.complete_json(ASK, Item)
    assert info.value.context_tokens == 2048


def test_truncated_json_keeps_its_complete_part():
    cut = '{"entities": [{"name": "Rotterdam", "type": "place"}, {"name": "Aurora", "type": "ves'
    assert parse_json_reply(cut)["entities"][0] == {"name": "Rotterdam", "type": "place"}


def test_weak_output_is_validated_item_by_item():
    reply = PageExtraction.model_validate(
        {
            "entities": [
                {"name": "Rotterdam", "type": "place"},
                {"type": "no name"},  # invalid: dropped
                "Aurora",  # a bare name: accepted
                {"name": "Rotterdam", "type": "place"},  # repeated: dropped
            ],
            "low_edges": "none",  # wrong type: dropped
            "facts": [{"head": "Aurora", "relation": "capacity", "tail": "8,500 TEU"}],
        }
    )
    assert [e.name for e in reply.entities] == ["Rotterdam", "Aurora"]
    assert reply.low_edges == [] and len(reply.facts) == 1
    assert reply.dropped == 3
    assert "dropped" not in PageExtraction.model_json_schema()["properties"]  # never asked of the model


def test_progress_is_reported_per_call(fake_llm, client_for):
    fake_llm.handler = lambda request: Reply.json({"name": "x"})
    client = client_for()
    done: list[int] = []
    client.complete_json_many([ASK] * 5, Item, on_done=lambda: done.append(1))
    assert len(done) == 5


def test_progress_line_names_stage_calls_speed_and_time_left():
    from hyperfolio.llm.progress import ModelProgress, clock
    from hyperfolio.llm.usage import UsageMeter

    meter = UsageMeter()
    lines: list[str] = []
    progress = ModelProgress(meter, lines.append)
    progress.started -= 10.0  # ten seconds in
    meter.record("extract", prompt_tokens=100, completion_tokens=50)
    progress.calls(1, 4)
    assert lines[-1].startswith("extracting with the model: 1/4 calls")
    assert "tokens/s" in lines[-1] and "about 30 s left" in lines[-1]
    assert clock(185) == "3m05s" and clock(3720) == "1h02m"


def test_json_shape_is_compact_and_keeps_field_notes():
    from hyperfolio.llm.budget import tokens_of
    from hyperfolio.llm.json_shape import json_shape

    schema = PageExtraction.model_json_schema()
    shape = json_shape(schema)
    assert shape.startswith('{"entities": [{"name": string,') and '"facts": [{"head": string' in shape
    assert "string (text, table or visual)" in shape  # a field's description is kept beside it
    assert tokens_of(shape) * 3 < tokens_of(json.dumps(schema))  # a third of the JSON Schema, or less
