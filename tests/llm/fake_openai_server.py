"""A small OpenAI-compatible server for tests: scripted replies over real HTTP on 127.0.0.1.

    server = FakeLLM().start()
    server.script(Reply.json({"name": "x"}), Reply.error(429, retry_after="0"), "plain text")
    ... point a client at server.url ...
    server.requests       # every /chat/completions request body received, in order
    server.max_in_flight  # the most requests it was handling at once
    server.stop()

Requests with `stream: true` are answered as server-sent events, a few characters a piece (set
`streams = False` for a server that ignores `stream`); `props` answers llama.cpp's GET /props;
`disconnects` counts streamed replies whose client left before the end.

A script item is a Reply, a str (the reply's content), a dict/list (sent as JSON content) or a
callable(request_json) returning one of those. When the script is empty, `handler` (a callable)
answers, else `default`. `reject_formats` makes the server refuse response_format types the way
llama-cpp-python refuses json_schema (HTTP 500); refusals do not consume the script.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from hyperfolio.llm.server_profile import PROBE_MARKER


@dataclass
class Reply:
    content: str = "ok"
    status: int = 200
    delay: float = 0.0  # seconds to wait before answering (beyond the client timeout = a slow reply)
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None  # raw body, replacing the generated one (malformed server output)
    usage: dict[str, int] | bool = True  # True: computed from lengths; False: no usage block; dict: as given
    finish_reason: str = "stop"
    piece_delay: float = 0.0  # streamed replies: seconds between pieces (a slow but alive generation)
    cut_after: int | None = None  # streamed replies: drop the connection after this many pieces

    @classmethod
    def json(cls, value: Any, *, fenced: bool = False, **kw: Any) -> Reply:
        text = json.dumps(value)
        return cls(f"Here you are:\n```json\n{text}\n```\n" if fenced else text, **kw)

    @classmethod
    def error(cls, status: int, message: str = "error", *, retry_after: str | None = None, **kw: Any) -> Reply:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        body = json.dumps({"error": {"message": message, "type": "server_error", "code": status}})
        return cls(status=status, headers=headers, body=body, **kw)

    @classmethod
    def slow(cls, seconds: float, content: str = "late") -> Reply:
        return cls(content, delay=seconds)


Script = Reply | str | dict | list | Callable[[dict[str, Any]], Any]


def _as_reply(item: Any, request: dict[str, Any]) -> Reply:
    while callable(item) and not isinstance(item, Reply):
        item = item(request)
    if isinstance(item, Reply):
        return item
    if isinstance(item, str):
        return Reply(item)
    if item is None:
        return Reply("")
    return Reply.json(item)


class FakeLLM:
    def __init__(self, models: tuple[str, ...] = ("fake-model",)) -> None:
        self.models = list(models)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.handler: Callable[[dict[str, Any]], Any] | None = None
        self.default: Script = Reply("ok")
        self.reject_formats: set[str] = set()
        self.reject_status = 500
        self.in_flight = 0
        self.max_in_flight = 0
        self.streams = True
        self.props: dict[str, Any] | None = None
        self.disconnects = 0
        self.probes: list[dict[str, Any]] = []  # the client's speed probes (kept out of `requests`)
        self.pieces_sent = 0
        self._queue: deque[Script] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- control
    Reply = Reply

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *items: Script) -> FakeLLM:
        with self._lock:
            self._queue.extend(items)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        """Forget the requests received (the script is kept; `clear_script()` empties it)."""
        with self._lock:
            self.requests.clear()
            self.headers.clear()
            self.max_in_flight = 0

    def clear_script(self) -> None:
        with self._lock:
            self._queue.clear()

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if "messages" in r]

    def start(self) -> FakeLLM:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a slow reply
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- answering
    def _next(self, request: dict[str, Any]) -> Reply:
        fmt = (request.get("response_format") or {}).get("type")
        if fmt in self.reject_formats:
            message = f"response_format type {fmt!r} is not supported by this server"
            return Reply.error(self.reject_status, message)
        with self._lock:
            item = self._queue.popleft() if self._queue else None
        if item is None:
            item = self.handler if self.handler is not None else self.default
        return _as_reply(item, request)

    def _completion_body(self, request: dict[str, Any], reply: Reply) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "model": request.get("model", self.models[0]),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": reply.finish_reason,
                }
            ],
        }
        if reply.usage is True:
            prompt = sum(len(json.dumps(m.get("content", ""))) for m in request.get("messages", []))
            prompt_tokens, completion_tokens = max(1, prompt // 4), max(1, len(reply.content) // 4)
            body["usage"] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
        elif isinstance(reply.usage, dict):
            body["usage"] = dict(reply.usage)
        return body


def _is_probe(request: dict[str, Any]) -> bool:
    messages = request.get("messages") or []
    return any(str(m.get("content")).startswith(PROBE_MARKER) for m in messages if isinstance(m, dict))


def _make_handler(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def _send(self, status: int, body: str, headers: dict[str, str] | None = None) -> None:
            data = body.encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to do

        def _stream(self, request: dict[str, Any], reply: Reply) -> None:
            """Send `reply` as server-sent events; stop quietly when the client leaves."""
            text = reply.content
            pieces = [text[i : i + 4] for i in range(0, len(text), 4)] or [""]
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for number, piece in enumerate(pieces):
                    if reply.cut_after is not None and number >= reply.cut_after:
                        self.close_connection = True
                        return
                    if number and reply.piece_delay and fake._stopping.wait(reply.piece_delay):
                        return
                    event = {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                    with fake._lock:
                        fake.pieces_sent += 1
                final: dict[str, Any] = {"choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]}
                usage = fake._completion_body(request, reply).get("usage")
                if usage:
                    final["usage"] = usage
                self.wfile.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                with fake._lock:
                    fake.disconnects += 1
            self.close_connection = True

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            if self.path.rstrip("/").endswith("/props") and fake.props is not None:
                self._send(200, json.dumps(fake.props))
            elif self.path.rstrip("/").endswith("/models"):
                data = [{"id": m, "object": "model", "owned_by": "fake"} for m in fake.models]
                self._send(200, json.dumps({"object": "list", "data": data}))
            else:
                self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}))

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}))
                return
            try:
                request = json.loads(raw)
            except ValueError:
                self._send(400, json.dumps({"error": {"message": "request body is not JSON"}}))
                return
            if _is_probe(request):  # hyperfolio's probes: answered aside, the script untouched
                with fake._lock:
                    fake.probes.append(request)
                fmt = (request.get("response_format") or {}).get("type")
                if fmt in fake.reject_formats:
                    message = f"response_format type {fmt!r} is not supported by this server"
                    self._send(fake.reject_status, json.dumps({"error": {"message": message}}))
                    return
                reply = Reply('{"ok": true}' if "response_format" in request else " ".join(map(str, range(1, 21))))
                if request.get("stream") and fake.streams:
                    self._stream(request, reply)
                else:
                    self._send(200, json.dumps(fake._completion_body(request, reply)))
                return
            with fake._lock:
                fake.requests.append(request)
                fake.headers.append(dict(self.headers))
                fake.in_flight += 1
                fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
            try:
                reply = fake._next(request)
                if reply.delay > 0:
                    fake._stopping.wait(reply.delay)
                if request.get("stream") and fake.streams and reply.status == 200 and reply.body is None:
                    self._stream(request, reply)
                    return
                body = reply.body if reply.body is not None else json.dumps(fake._completion_body(request, reply))
            finally:
                with fake._lock:
                    fake.in_flight -= 1
            self._send(reply.status, body, reply.headers)

    return Handler
