"""Ingestion engine: parsing work as plain task functions on an executor, one writer.

Executors: in-process, a pool of worker processes (one per core by default), or Ray for many
machines. Only parsing runs on them (it is most of the work and needs no store); the writer
(the `Collection`) assembles, writes, embeds and builds the hypergraph document by document,
in the order the files were given, so a run with any number of workers builds the same store.
"""

from hyperfolio.ingest.executors import Executor, InlineExecutor, ProcessExecutor, default_workers, make_executor
from hyperfolio.ingest.parse_ahead import FileJob, ParseAhead

__all__ = [
    "Executor",
    "FileJob",
    "InlineExecutor",
    "ParseAhead",
    "ProcessExecutor",
    "default_workers",
    "make_executor",
]
