"""Parsing on a Ray cluster: the same task functions as the process pool, as Ray tasks.

`local` starts a Ray instance on this machine (what the tests use); `auto` joins the cluster
this machine belongs to; anything else is a cluster address (`ray://head:10001` or
`head:6379`). Every node needs hyperfolio installed; file bytes travel through Ray's object
store, so workers need not see the files.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from hyperfolio.errors import HyperfolioError


class RayExecutor:
    name = "ray"

    def __init__(self, address: str) -> None:
        try:
            import ray
        except ModuleNotFoundError as exc:
            raise HyperfolioError(
                "--ray needs Ray, which the default install leaves out: pip install 'hyperfolio[ray]'"
            ) from exc
        self._ray = ray
        self._started_here = not ray.is_initialized()
        if self._started_here:
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
            try:
                if address == "local":
                    ray.init(**options)
                else:
                    ray.init(address=address, **options)
            except Exception as exc:
                raise HyperfolioError(f"cannot reach the Ray cluster at {address!r}: {exc}") from exc
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._remote: dict[Callable[..., Any], Any] = {}

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future:
        remote = self._remote.get(fn)
        if remote is None:
            remote = self._remote[fn] = self._ray.remote(num_cpus=1)(fn)
        return remote.remote(*args).future()

    def share(self, path: Path, data: bytes) -> Any:
        return self._ray.put(data)

    def close(self, abandon: bool = False) -> None:
        if self._started_here and self._ray.is_initialized():
            self._ray.shutdown()
