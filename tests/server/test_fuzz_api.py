"""Property-based fuzzing of the HTTP API with schemathesis, against a running service with real data.

The service runs on loopback (uvicorn, `serve_app`) over a collection holding the indexed sample
report. Every operation in `/openapi.json` gets generated requests, valid (positive) and invalid
(negative), some with the real collection, document, page and job in the path and some with random
ones, and each response is checked: no server error (5xx), a documented status code and content
type, a body matching the declared schema, and invalid input refused with a 4xx.

Nothing is left out silently:
- the two server-sent-event endpoints are fuzzed: `ask/stream` always ends after the answer, and the
  only real job the path gets is the finished fixture job, whose stream ends after its last event (a
  random job id answers 404); a per-request timeout guards against a stream that would not end;
- `DELETE .../documents/{doc}` is fuzzed last, because it may remove the fixture document (and a
  random id can match it by prefix), which the other operations need;
- uploads are fuzzed twice over: schemathesis's own multipart bodies (its parts are named `files` or
  `files.pdf`, so mostly refused with 415) and parts whose names, suffixes and bytes are drawn here;
  likewise ask, ask/stream and retrieve get, besides schemathesis's bodies, drawn bodies in every mode
  that reach the retrieval code (a random `options` or `doc` mostly ends in a 400 or 404);
- the ingestion jobs the accepted uploads start are waited for at the end: one that fails is an error.
`positive_data_acceptance` is not checked: the API answers documented 400s to requests its JSON schema
cannot rule out (a graph needs exactly one of doc, query, entity; a box needs four numbers).

Findings are collected rather than raised (no shrinking), so one run reports all of them; the test
prints the cases run per operation and the statuses seen, and fails on any finding.

`benchmarks/fuzz_api.py` runs the same fuzzing (this module's `prepare` and `fuzz`) with more examples.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="pip install -e '.[serve]' installs the service")
pytest.importorskip("schemathesis", reason="pip install -e '.[test]' installs schemathesis")

import schemathesis  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.core.failures import Failure, FailureGroup  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from hyperfolio.sample import SAMPLE_QUESTION, write_sample_report  # noqa: E402
from hyperfolio.server.app import ServerConfig, create_app  # noqa: E402

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,
]
DEFERRED = ("DELETE /api/collections/{name}/documents/{doc}",)  # fuzzed after everything else (see above)
UPLOAD = "POST /api/collections/{name}/documents"
JOB_FAILED = "ingestion job failed"
REQUEST_TIMEOUT = 60.0  # seconds; a request that takes longer is reported as a failure
EXAMPLES = 80  # per operation in the test; benchmarks/fuzz_api.py takes --examples
MODES = ("auto", "bm25", "dense", "hybrid", "dual", "concept", "topdown")
QUESTIONS = (SAMPLE_QUESTION, "What was the net income in 2024?", "How much electricity was generated in 2022?")
SUPPORTED = (".pdf", ".md", ".txt", ".html")
SUFFIXES = ("", ".pdf", ".PDF", ".md", ".markdown", ".txt", ".html", ".htm", ".png", ".pdf.exe", ".")


@dataclass
class Target:
    """The service under test and the real things its paths can name."""

    url: str
    collection: str
    doc_id: str
    title: str
    pages: int
    job_id: str
    sample: bytes


@dataclass
class Finding:
    operation: str
    title: str
    status: int | None
    message: str


@dataclass
class Report:
    cases: Counter[str] = field(default_factory=Counter)
    statuses: dict[str, Counter[int]] = field(default_factory=dict)
    findings: dict[tuple[str, str, int | None], Finding] = field(default_factory=dict)
    jobs: Counter[str] = field(default_factory=Counter)  # ingestion jobs by their final status
    errors: int = 0  # 5xx answers, and ingestion jobs that failed
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.cases.values())

    @property
    def server_errors(self) -> list[Finding]:
        return [f for f in self.findings.values() if (f.status or 0) >= 500 or f.title == JOB_FAILED]

    def record(self, finding: Finding) -> None:
        self.findings.setdefault((finding.operation, finding.title, finding.status), finding)

    def table(self) -> str:
        lines = [f"{'operation':<62} {'cases':>6}  statuses"]
        for label, count in self.cases.items():
            seen = ", ".join(f"{code}x{n}" for code, n in sorted(self.statuses.get(label, Counter()).items()))
            lines.append(f"{label:<62} {count:>6}  {seen}")
        jobs = ", ".join(f"{n} {status}" for status, n in sorted(self.jobs.items())) or "none"
        lines.append(f"ingestion jobs started by the fuzzed uploads, by final status: {jobs}")
        lines.append(
            f"{self.total} cases in {self.seconds:.1f} s, {self.errors} server errors, "
            f"{len(self.findings)} distinct findings"
        )
        return "\n".join(lines)


# ---------------------------------------------------------------------- the service with real data
def prepare(url: str, sample: Path, collection: str = "docs", timeout: float = 300.0) -> Target:
    """Create `collection` on the running service, index the sample report and wait for its job."""
    with httpx.Client(base_url=url, timeout=60.0) as client:
        made = client.post("/api/collections", json={"name": collection})
        assert made.status_code in (200, 201), made.text
        data = sample.read_bytes()
        upload = client.post(f"/api/collections/{collection}/documents", files=[("files", ("sample-report.pdf", data))])
        assert upload.status_code == 202, upload.text
        job_id = upload.json()["job_id"]
        deadline = time.monotonic() + timeout
        while (job := client.get(f"/api/jobs/{job_id}").json())["status"] not in ("done", "failed"):
            assert time.monotonic() < deadline, f"the sample's ingestion did not end in {timeout:.0f} s"
            time.sleep(0.2)
        assert job["status"] == "done" and not job["failures"], job
        docs = client.get(f"/api/collections/{collection}/documents").json()
    doc = next(d for d in docs if d["num_pages"] == 4)
    return Target(url, collection, doc["doc_id"], doc["title"], doc["num_pages"], job_id, data)


# ---------------------------------------------------------------------- strategies
def path_choices(path: str, target: Target) -> list[dict[str, Any]]:
    """Real values for the operation's path parameters: the collection, the document (by id, id
    prefix and title), a page that exists and one past the end, the finished fixture job."""
    names = re.findall(r"{(\w+)}", path)
    if not names:
        return []
    values: dict[str, list[Any]] = {
        "name": [target.collection],
        "doc": [target.doc_id, target.doc_id[:8], target.title],
        "page": [1, target.pages, target.pages + 1],
        "job_id": [target.job_id],
    }
    choices: list[dict[str, Any]] = [{}]
    for name in names:
        choices = [{**c, name: v} for c in choices for v in values.get(name, [None]) if v is not None]
    return choices


def query_choices(path: str, target: Target) -> list[dict[str, Any] | None]:
    """Query parameters that make the operation reach real data (None: all generated)."""
    if path.endswith("/graph"):  # exactly one of doc, query, entity, else a 400
        return [None, {"doc": target.doc_id}, {"query": SAMPLE_QUESTION}]
    if path.endswith("/image"):
        return [None, {"box": "60,90,400,300"}]
    if path.endswith("/regions"):  # Table 1 of page 2 and a row's key in it
        return [None, {"box": "60,190,490,300", "quote": "North Sea"}]
    if path.endswith("/conflicts"):
        return [None, {"doc": target.doc_id}]
    return [None]


def case_strategy(operation: Any, target: Target) -> st.SearchStrategy[Any]:
    """Positive and negative cases; two in three with real path parameters, the rest random."""
    modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    wild = [operation.as_strategy(generation_mode=mode) for mode in modes]
    real = [
        operation.as_strategy(generation_mode=mode, path_parameters=params, query=query)
        for params in path_choices(operation.path, target)
        for query in query_choices(operation.path, target)
        for mode in modes
    ]
    if not real:
        return st.one_of(wild)
    return st.one_of(st.one_of(real), st.one_of(wild), st.one_of(real))


def upload_parts(sample: bytes) -> st.SearchStrategy[dict[str, Any]]:
    """Own multipart parts for the upload: drawn names and suffixes, and bytes that are random,
    text, the sample report or the sample cut short."""
    name = st.builds(
        lambda stem, suffix: stem + suffix,
        st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=40),
        st.one_of(st.sampled_from(SUPPORTED), st.sampled_from(SUFFIXES)),  # accepted suffixes half the time
    )
    data = st.one_of(
        st.binary(max_size=2048),
        st.text(max_size=2048).map(lambda text: text.encode("utf-8", "surrogatepass")),
        st.just(sample),
        st.integers(0, len(sample)).map(lambda n: sample[:n]),
    )
    part = st.tuples(st.just("files"), st.tuples(name, data))
    return st.builds(lambda parts: {"files": parts}, st.lists(part, min_size=1, max_size=3))


def question_bodies(target: Target) -> st.SearchStrategy[dict[str, Any]]:
    """Own bodies for ask, ask/stream and retrieve that reach the retrieval code: every mode, a
    question about the sample or any text, any k, scoped to the document or not."""
    body = st.fixed_dictionaries(
        {
            "question": st.one_of(st.sampled_from(QUESTIONS), st.text(min_size=1, max_size=300)),
            "mode": st.sampled_from(MODES),
        },
        optional={"k": st.integers(1, 100), "doc": st.sampled_from([[target.doc_id], [target.title]])},
    )
    return st.builds(lambda json: {"json": json}, body)


def own_request(label: str, target: Target) -> st.SearchStrategy[dict[str, Any]]:
    """Transport arguments that replace the generated body for some cases ({}: keep it)."""
    if label == UPLOAD:
        return st.one_of(st.just({}), upload_parts(target.sample))
    if label.endswith(("/ask", "/ask/stream", "/retrieve")):
        return st.one_of(st.just({}), question_bodies(target))
    return st.just({})


# ---------------------------------------------------------------------- one operation, many cases
def fuzz_operation(operation: Any, target: Target, report: Report, examples: int, seed: int | None = None) -> None:
    label = f"{operation.method.upper()} {operation.path}"
    statuses = report.statuses.setdefault(label, Counter())
    report.cases[label] += 0

    def run(case: Any, own: dict[str, Any]) -> None:
        report.cases[label] += 1
        try:
            response = case.call(base_url=target.url, timeout=REQUEST_TIMEOUT, **own)
        except Exception as exc:  # no answer at all: a timeout, a dropped connection
            report.record(Finding(label, f"no response: {type(exc).__name__}", None, str(exc)[:500]))
            return
        statuses[response.status_code] += 1
        if refused_by_http_server(response):
            return  # a request line HTTP itself forbids (e.g. raw control characters): the app never saw it
        try:  # the transport arguments tell the checks when the generated body was not the one sent
            case.validate_response(response, checks=CHECKS, transport_kwargs=own or None)
        except FailureGroup as group:
            for failure in group.exceptions:
                report.record(_finding(label, failure, response.status_code))
        except Failure as failure:
            report.record(_finding(label, failure, response.status_code))
        if response.status_code >= 500:  # whatever the checks made of it, with the request that caused it
            report.errors += 1
            report.record(Finding(label, "server error", response.status_code, _reproducer(response)))

    fuzz = settings(
        max_examples=examples,
        deadline=None,
        derandomize=seed is None,
        database=None,
        phases=(Phase.explicit, Phase.generate),  # no shrinking: findings are collected, not raised
        suppress_health_check=list(HealthCheck),
    )(given(case=case_strategy(operation, target), own=own_request(label, target))(run))
    if seed is not None:
        from hypothesis import seed as fixed_seed

        fuzz = fixed_seed(seed)(fuzz)
    fuzz()


def refused_by_http_server(response: Any) -> bool:
    """uvicorn's own answer to a malformed HTTP request, before any route runs."""
    return response.status_code == 400 and response.text.strip() == "Invalid HTTP request received."


def _reproducer(response: Any) -> str:
    sent = response.request
    body = sent.body if isinstance(sent.body, bytes) else str(sent.body or "").encode()
    shown = body[:400].decode("utf-8", "replace") + (" ..." if len(body) > 400 else "")
    return f"{sent.method} {sent.url}\n{shown}\n-> {response.text[:400]}"


def _finding(label: str, failure: Failure, status: int) -> Finding:
    return Finding(label, failure.title, status, failure.message[:800])


def fuzz(
    target: Target,
    examples: int,
    seed: int | None = None,
    on_operation: Callable[[str, Report], None] | None = None,
) -> Report:
    """Fuzz every operation of the running service's schema, `examples` cases each."""
    schema = schemathesis.openapi.from_url(f"{target.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    operations.sort(key=lambda op: f"{op.method.upper()} {op.path}" in DEFERRED)
    report = Report()
    started = time.perf_counter()
    for operation in operations:
        fuzz_operation(operation, target, report, examples, seed)
        if on_operation is not None:
            on_operation(f"{operation.method.upper()} {operation.path}", report)
    settle(target, report)
    report.seconds = time.perf_counter() - started
    return report


def settle(target: Target, report: Report, timeout: float = 300.0) -> None:
    """Wait for the ingestion jobs the fuzzed uploads started; a job that failed as a whole (not one
    file refused, which the job reports) is a server error."""
    with httpx.Client(base_url=target.url, timeout=60.0) as client:
        deadline = time.monotonic() + timeout
        while client.get("/api/ready").json().get("ingesting"):
            if time.monotonic() > deadline:
                report.record(Finding("ingestion", "jobs still running", None, f"after {timeout:.0f} s"))
                return
            time.sleep(0.5)
        for collection in client.get("/api/collections").json():
            for job in client.get(f"/api/collections/{collection['name']}/jobs").json():
                if job["job_id"] == target.job_id:
                    continue
                report.jobs[job["status"]] += 1
                if job["status"] != "done":
                    report.errors += 1
                    report.record(Finding(f"job {job['job_id']}", JOB_FAILED, None, job["error"] or job["status"]))


# ---------------------------------------------------------------------- the test
@pytest.mark.long
def test_fuzz_every_operation(tmp_path, serve_app, capsys):
    sample = write_sample_report(tmp_path / "sample-report.pdf")
    app = create_app(ServerConfig(root=tmp_path / "root", mcp=False, max_upload_mb=2.0))
    with serve_app(app) as url:
        target = prepare(url, sample)
        report = fuzz(target, EXAMPLES)
        assert httpx.get(f"{url}/api/health").json() == {"status": "ok"}  # still up after all that
    with capsys.disabled():
        print(f"\n{report.table()}")
    assert len(report.cases) >= 18, sorted(report.cases)  # every operation of the schema was fuzzed
    assert all(count > 0 for count in report.cases.values()), report.cases
    shown = "\n\n".join(f"{f.operation} [{f.status}] {f.title}\n{f.message}" for f in report.findings.values())
    assert not report.findings, f"{len(report.findings)} findings:\n\n{shown}"
