"""What adding files would take (model calls, tokens, time, price), from the files parsed here and
nothing indexed: `hypergraph.estimate` does the sums."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hyperfolio.config import Settings
from hyperfolio.errors import HyperfolioError
from hyperfolio.hypergraph.estimate import WorkEstimate, estimate_work
from hyperfolio.hypergraph.extract_offline import OfflineExtractor
from hyperfolio.ingest.report import expand_paths
from hyperfolio.llm.registry import ModelSet
from hyperfolio.parse import parse_bytes
from hyperfolio.parse.unlock import Password, read_unlocked


def estimate_adding(
    paths: Iterable[str | Path] | str | Path,
    password: Password | None,
    settings: Settings,
    models: ModelSet,
    offline: OfflineExtractor,
) -> WorkEstimate:
    """`Collection.estimate`: with a model configured its server's profile (probed once, kept) gives the
    context, slots and speed; the collection's past replies calibrate the reply lengths."""
    files, failed = expand_paths([paths] if isinstance(paths, (str, Path)) else paths)
    if failed:
        raise HyperfolioError(f"{failed[0].path}: {failed[0].reason}")
    documents = [parse_bytes(path, read_unlocked(path, password), settings.parse) for path in files]
    opts = settings.models
    client = models.get("extract") if models.configured else None
    return estimate_work(
        documents,
        client.profile if client is not None else None,
        history=models.usage.totals(),
        max_tokens=opts.max_tokens or None,
        build=settings.build,
        slots=client.link.limit.limit if client is not None else 1,
        price_input=opts.price_input,
        price_output=opts.price_output,
        offline=offline,
    )
