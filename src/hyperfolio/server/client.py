"""A client of a running hyperfolio service, for the CLI's `--server` (questions answered by the
service's loaded models instead of loading them in every command)."""

from __future__ import annotations

from typing import Any

import httpx

from hyperfolio.errors import HyperfolioError


class ServiceClient:
    def __init__(self, url: str, api_key: str = "", timeout: float = 300.0) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        try:
            response = self._http.post(path, json=body)
        except httpx.HTTPError as exc:
            raise HyperfolioError(f"cannot reach the hyperfolio service at {self.url}: {exc}") from exc
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail") or response.text
            except ValueError:
                detail = response.text[:300]
            raise HyperfolioError(f"the service at {self.url} answered {response.status_code}: {detail}")
        return response.json()

    def ask(self, collection: str, question: str, **query: Any) -> dict[str, Any]:
        """The service's answer as `render.answer_dict` gives it; `query`: mode, k, doc, options."""
        return self._post(f"/api/collections/{collection}/ask", _body(question, **query))

    def retrieve(self, collection: str, question: str, **query: Any) -> dict[str, Any]:
        """The service's evidence as `render.evidence_dict` gives it; `query` as for `ask`."""
        return self._post(f"/api/collections/{collection}/retrieve", _body(question, **query))

    def close(self) -> None:
        self._http.close()


def _body(
    question: str,
    mode: str | None = None,
    k: int | None = None,
    doc: str | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"question": question, "mode": mode, "k": k, "doc": [doc] if doc else None}
    if options:
        body["options"] = options
    return body
