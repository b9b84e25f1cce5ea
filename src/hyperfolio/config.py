"""Typed settings in layers: defaults, the user's settings file, the collection's, environment, arguments."""

from __future__ import annotations

import difflib
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from hyperfolio.errors import ConfigError

ENV_PREFIX = "HYPERFOLIO_"


@dataclass(frozen=True)
class ParseOptions:
    chunk_tokens: int = 200  # token budget of a text chunk (word-piece approximated by words)
    chunk_overlap: int = 30  # tokens repeated between consecutive chunks of a page
    ocr: bool = True  # OCR pages without a text layer and images (needs Tesseract)
    ocr_language: str = "eng"
    ocr_dpi: int = 150
    ocr_images: bool = True  # OCR embedded images to make figures searchable
    min_page_chars: int = 40  # below this a page counts as having no text layer
    min_image_area: float = 0.02  # images smaller than this fraction of the page are ignored
    tables: bool = True  # detect table cell grids (costs time on long PDFs)
    table_layout: bool = False  # confirm tables with PyMuPDF's layout model (~0.6 s more per ruled page)
    virtual_page_words: int = 600  # page size for formats that have no pages (Markdown, HTML, text)
    max_page_chars: int = 200_000  # a page larger than this is truncated with a warning
    # Limits a file must keep (parse/limits.py); a file beyond one is refused with a line naming it.
    max_file_mb: float = 512.0  # bytes read per file
    max_pages: int = 5_000  # pages per document
    max_image_pixels: int = 150_000_000  # pixels per image or frame (a 12,000 x 12,000 scan passes)
    max_archive_mb: float = 1_024.0  # what an Office file's zipped parts inflate to, together
    max_stream_mb: float = 256.0  # what one compressed PDF stream inflates to
    page_seconds: float = 30.0  # a page still being read after this keeps its text, skips tables and figures
    worker_memory_mb: int = 4_096  # address space of each parsing worker process (0: no limit)


@dataclass(frozen=True)
class BuildOptions:
    """Hypergraph construction (Hyper-M2RAG): extraction, merging, anchor-driven refinement."""

    hypergraph: bool = True  # build the hypergraph on `add` (needed by the `dual` mode)
    multimodal: bool = True  # extract from tables and figures too (False: text chunks only, an ablation)
    refine: bool = True  # anchor-driven refinement (False: an ablation)
    refine_mode: str = "anchor"  # "anchor" (paper) or "full" (every page with its neighbours: the cost baseline)
    anchor_min_pages: int = 3  # tau: an entity on at least this many pages is a cross-page anchor
    anchor_cover: int = 2  # bridge each page break with at most this many anchors (0: refine every anchor)
    reconcile: bool = True  # check new facts against accepted ones, resolve conflicts (False: an ablation)
    concepts: bool = True  # build the concept layer and its evidence index (HVM-GraphRAG)
    themes: bool = True  # build the theme layer over the chunks (VizRAG's top layer, for --mode topdown)
    max_entities_per_page: int = 40
    aliases: bool = True  # merge a document's names for one thing (hypergraph/aliases.py; False: an ablation)
    # Cosine at which a name merges into the one longer name containing it; None: no such merges (on the
    # dev PDFs' labelled pairs, the best held-out threshold, 0.78, merges right only 63 % of the time).
    alias_threshold: float | None = None
    max_description_chars: int = 600
    graph_embedder: str = "model2vec"  # embeds entities and hyperedges (fast; many short texts)


@dataclass(frozen=True)
class DualOptions:
    """Dual-path retrieval knobs."""

    entity_threshold: float = 0.55  # gamma: similarity a vertex needs to match an entity keyword
    entities_per_keyword: int = 5
    hyperedges_per_keyword: int = 8
    max_keywords: int = 8


@dataclass(frozen=True)
class ConceptOptions:
    """Concept-anchor retrieval knobs (HVM-GraphRAG 3.2); defaults are the paper's MMLongBench row of Table 4."""

    concepts: int = 10  # k_c: concept anchors by similarity to the question
    threshold: float = 0.25  # theta: the similarity an anchor needs
    relations: int = 10  # k_r: relations by similarity; kept only when they touch an anchor
    graph_chunks: int = 10  # K: chunks kept from the concept -> chunk index
    flat_chunks: int = 2  # k_b: chunks by direct similarity, added to the graph's
    k_text: int = 5
    k_table: int = 3
    k_image: int = 2
    scoring: str = "hybrid"  # chunk similarity s(q, b): "hybrid" (embeddings + BM25), "dense" (paper), "keyword"
    use_graph: bool = True  # False: flat chunks only (an ablation; they take the graph's share too)
    by_modality: bool = True  # False: one ranked list, no modality groups (an ablation)


@dataclass(frozen=True)
class TopDownOptions:
    """Top-down retrieval knobs (VizRAG): themes of the top layer, then the bottom layer's neighbourhoods."""

    themes: int = 8  # top-layer theme hyperedges matched per question
    entities_per_keyword: int = 5
    hyperedges: int = 60  # bottom-layer neighbourhood hyperedges kept
    render: bool = False  # draw the bottom-layer subgraph per query (for a vision model) and time it
    visual: bool = True  # with a vision model: it locates the key entities in a picture of the top layer
    layouts: str = "set-force,bi-inc"  # the picture's dual view


@dataclass(frozen=True)
class ModelOptions:
    """Language-model plug-ins over an OpenAI-compatible HTTP API. Nothing configured = offline.

    A role (extract, keywords, answer, vision, judge) is served when a model name resolves for it: the
    role's own `<role>_model`, else `model` (vision needs `vision_model`: no images go to a text-only
    model by accident). Its base URL and key resolve the same way, falling
    back to OPENAI_BASE_URL / OPENAI_API_KEY when no HYPERFOLIO_MODELS_* value or file value is set.
    """

    base_url: str = ""  # e.g. http://127.0.0.1:8000/v1 (vLLM, SGLang, Ollama, llama.cpp server, hosted APIs)
    api_key: str = field(default="", repr=False)
    model: str = ""  # the model every role uses unless it names its own
    extract_model: str = ""
    keywords_model: str = ""
    answer_model: str = ""
    vision_model: str = ""
    judge_model: str = ""  # the LLM judge of `hyperfolio judge`
    extract_base_url: str = ""
    keywords_base_url: str = ""
    answer_base_url: str = ""
    vision_base_url: str = ""
    judge_base_url: str = ""
    extract_api_key: str = field(default="", repr=False)
    keywords_api_key: str = field(default="", repr=False)
    answer_api_key: str = field(default="", repr=False)
    vision_api_key: str = field(default="", repr=False)
    judge_api_key: str = field(default="", repr=False)
    timeout: float = 60.0  # seconds of silence before a request is given up (first token: more for long prompts)
    max_retries: int = 4  # extra attempts after a timeout (each at twice the budget), connection error, 429 or 5xx
    concurrency: int = 4  # most requests in flight at once per server (fewer when the server has fewer slots)
    stream: bool = True  # stream replies, so the timeout measures silence and a left request stops the server
    probe: bool = True  # learn the server's slots, context and speed once (kept in the collection database)
    context_tokens: int = 0  # the model's context length when the server does not say (0: ask the server)
    breaker_failures: int = 3  # failed calls in a row after which a stage runs offline for a while
    breaker_cooldown: float = 120.0  # seconds a stage stays offline before the model is tried again
    price_input: float = 0.0  # price per million prompt tokens, for `hyperfolio estimate` (0: not shown)
    price_output: float = 0.0  # price per million generated tokens
    temperature: float = 0.0
    max_tokens: int = 0  # 0: the server's default
    structured: str = "auto"  # "auto" (detect), "json_schema", "json_object" or "prompt"
    cache: bool = True  # keep replies in the collection database so a re-run costs nothing
    max_retry_wait: float = 60.0  # cap on a server's Retry-After and on backoff waits


@dataclass(frozen=True)
class Settings:
    parse: ParseOptions = field(default_factory=ParseOptions)
    build: BuildOptions = field(default_factory=BuildOptions)
    dual: DualOptions = field(default_factory=DualOptions)
    concept: ConceptOptions = field(default_factory=ConceptOptions)
    topdown: TopDownOptions = field(default_factory=TopDownOptions)
    models: ModelOptions = field(default_factory=ModelOptions)
    # Chunk embedder: packaged all-MiniLM-L6-v2 with int8 weights reading a chunk's first 128 tokens (2.2x
    # faster than "minilm", full precision and 256 tokens); "minilm", "minilm-int8", "minilm-128", "model2vec".
    embedder: str = "minilm-int8-128"
    embed_batch: int = 64
    workers: int = 0  # processes that parse and embed for add: 0 in-process (the API default), -1 one per core
    ray: str = ""  # parse on Ray instead: "local", "auto" or a cluster address
    default_mode: str = "auto"  # the learned ranking over every other source (retrieve/auto.py)
    top_k: int = 10
    rrf_k: int = 60
    answer_sentences: int = 2  # passages the extractive answerer joins into an answer
    # Abstention floors (benchmarks/abstention.py: held-out folds of MMLongBench-Doc dev, answerable questions
    # abstained on <= 10%): below this best-passage score the evidence is called insufficient (the highest
    # floor that abstains on no more dev questions than none) ...
    min_answer_score: float = 0.15
    # ... and below this share of the names, years and quantities the question states found in the evidence,
    # the answer says what the documents lack (answer/support.py); 0 never abstains.
    min_anchor_share: float = 0.6

    @classmethod
    def load(cls, path: Path | None = None, user: bool = True, **overrides: Any) -> Settings:
        """Defaults, then the user's settings file (`user`), then `path` (TOML or JSON), then HYPERFOLIO_*
        variables, then `overrides`. A ConfigError names the file or variable, the key and what is wrong."""
        return cls.resolve(path, user, **overrides)[0]

    @classmethod
    def resolve(cls, path: Path | None = None, user: bool = True, **overrides: Any) -> tuple[Settings, dict[str, str]]:
        """The settings and, for every key ("top_k", "parse.ocr"), the layer that set it."""
        layers = [
            *([_file_layer(user_settings_file(), "user settings")] if user else []),
            *([_file_layer(Path(path), "collection settings")] if path is not None else []),
            _environment_layer(),
            Layer("arguments", {k: v for k, v in overrides.items() if v is not None}),
        ]
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        sections: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
        for layer in layers:
            for key, value in layer.values.items():
                if key in SECTIONS:
                    if not isinstance(value, dict):
                        raise ConfigError(f"{layer.source}: [{key}] must be a table of settings, not {value!r}")
                    for inner, inner_value in value.items():
                        checked = _checked(SECTIONS[key], inner, inner_value, layer, section=key)
                        sections[key][inner] = checked
                        sources[f"{key}.{inner}"] = layer.source
                else:
                    values[key] = _checked(cls, key, value, layer)
                    sources[key] = layer.source
        for key, env_name in _openai_fallbacks(sections["models"]).items():
            sources[f"models.{key}"] = f"environment {env_name}"
        built = {name: replace(kind(), **sections[name]) for name, kind in SECTIONS.items()}
        return replace(cls(), **values, **built), sources

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


SECTIONS: dict[str, type] = {
    "parse": ParseOptions,
    "build": BuildOptions,
    "dual": DualOptions,
    "concept": ConceptOptions,
    "topdown": TopDownOptions,
    "models": ModelOptions,
}
SECRET_KEYS = frozenset(f.name for f in fields(ModelOptions) if f.name.endswith("api_key"))


@dataclass(frozen=True)
class Layer:
    """One source of settings: where they came from (for messages and `config show`) and its values."""

    source: str
    values: dict[str, Any]


def data_home() -> Path:
    """The data root, where named collections live: $HYPERFOLIO_ROOT, else $XDG_DATA_HOME/hyperfolio
    (~/.local/share/hyperfolio). `-c reports` on every face is the folder `reports` in it."""
    if root := os.environ.get("HYPERFOLIO_ROOT"):
        return Path(root).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or "~/.local/share"
    return Path(base).expanduser() / "hyperfolio"


def default_collection() -> Path:
    return data_home() / "default"


def user_settings_file() -> Path:
    """The user-wide settings: $XDG_CONFIG_HOME/hyperfolio/settings.toml (~/.config/hyperfolio/settings.toml)."""
    base = os.environ.get("XDG_CONFIG_HOME") or "~/.config"
    return Path(base).expanduser() / "hyperfolio" / "settings.toml"


def _file_layer(path: Path, kind: str) -> Layer:
    """A settings file's values (none when it does not exist); unreadable or malformed files name the file."""
    source = f"{kind} {path}"
    if not path.exists():
        return Layer(source, {})
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the settings file ({exc})") from exc
    try:
        values = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: a settings file holds keys and [sections], not {type(values).__name__}")
    return Layer(source, values)


# The HYPERFOLIO_* variables that are not settings: read by the faces, the benchmarks and the tests.
PROCESS_VARIABLES: dict[str, str] = {
    "HYPERFOLIO_COLLECTION": "the collection a CLI command works on (like -c)",
    "HYPERFOLIO_SERVER": "a running service the CLI asks instead of opening the collection (like --server)",
    "HYPERFOLIO_API_KEY": "the service's bearer token (serve --api-key; sent by the CLI's --server)",
    "HYPERFOLIO_ROOT": "the data root, where named collections live (default ~/.local/share/hyperfolio)",
    "HYPERFOLIO_PASSWORD": "the password of encrypted files being added (like --password)",
    "HYPERFOLIO_DEBUG": "1: show the full traceback of an error (like --debug)",
    "HYPERFOLIO_LOG": "the log level (default WARNING)",
    "HYPERFOLIO_CACHE": "where embedding models built on first use and PostgreSQL collections' keyword indexes are kept"
    " (default ~/.cache/hyperfolio)",
    "HYPERFOLIO_DATA": "the benchmark data folder that eval and benchmarks/ read (default ../shared/data)",
    "HYPERFOLIO_TEST_GGUF": "the GGUF model file the real-model tests serve",
    "HYPERFOLIO_TEST_ARTIFACTS": "where the browser tests keep their screenshots",
}


def cache_dir() -> Path:
    """This machine's folder for what is made once and kept (embedding models, PostgreSQL collections'
    keyword indexes): $HYPERFOLIO_CACHE, else hyperfolio under $XDG_CACHE_HOME or ~/.cache."""
    base = os.environ.get("HYPERFOLIO_CACHE") or os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    path = Path(base).expanduser() / "hyperfolio" if "HYPERFOLIO_CACHE" not in os.environ else Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def setting_variables() -> dict[str, str]:
    """Every HYPERFOLIO_* variable that sets a setting, and the setting's key ("parse.ocr")."""
    out: dict[str, str] = {}
    for f in fields(Settings):
        if f.name in SECTIONS:
            for inner in fields(SECTIONS[f.name]):
                out[f"{ENV_PREFIX}{f.name.upper()}_{inner.name.upper()}"] = f"{f.name}.{inner.name}"
        else:
            out[ENV_PREFIX + f.name.upper()] = f.name
    return out


def unknown_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line for each HYPERFOLIO_* variable that nothing reads (a misspelling, most likely), with the
    closest known name: such a variable is ignored, so without this line a typo changes nothing silently."""
    env = os.environ if environ is None else environ
    known = [*setting_variables(), *PROCESS_VARIABLES]
    lines = []
    for name in sorted(n for n in env if n.startswith(ENV_PREFIX) and n not in known):
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        hint = f" (did you mean {close[0]}?)" if close else "; hyperfolio config show lists the settings"
        lines.append(f"{name} is not a hyperfolio setting or variable and is ignored{hint}")
    return lines


def _environment_layer() -> Layer:
    """HYPERFOLIO_<KEY> for top-level settings, HYPERFOLIO_<SECTION>_<KEY> for a section's."""
    values: dict[str, Any] = {}
    for variable, key in setting_variables().items():
        env = os.environ.get(variable)
        if env is None:
            continue
        section, _, inner = key.rpartition(".")
        if section:
            values.setdefault(section, {})[inner] = env
        else:
            values[inner] = env
    return Layer("environment", values)


def _checked(kind: type, name: str, value: Any, layer: Layer | None = None, section: str = "") -> Any:
    """`value` as the type of `kind`'s field `name`, or a ConfigError naming the source, key and value."""
    where = f"[{section}] " if section else ""
    known = {f.name: f for f in fields(kind) if f.name not in SECTIONS or kind is not Settings}
    source = f"{layer.source}: " if layer is not None else ""
    if name not in known:
        # A section name is a key of the top level too: "[modles]" is a misspelt section.
        names = {k: repr(k) for k in known} | ({s: f"[{s}]" for s in SECTIONS} if kind is Settings else {})
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" (did you mean {names[close[0]]}?)" if close else f"; known: {', '.join(sorted(names.values()))}"
        raise ConfigError(f"{source}unknown setting {where}{name!r}{hint}")
    current = getattr(kind(), name)
    shown = "***" if name in SECRET_KEYS else repr(value)
    if layer is not None and layer.source == "environment":
        variable = f"{ENV_PREFIX}{section.upper() + '_' if section else ''}{name.upper()}"
        source, shown = f"{variable}={'***' if name in SECRET_KEYS else value}: ", ""

    def wrong(expected: str) -> ConfigError:
        said = f"{where}{name} = {shown}: " if shown else ""  # a variable's name says the key already
        return ConfigError(f"{source}{said}expects {expected}")

    if isinstance(current, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in TRUE_WORDS | FALSE_WORDS:
            return value.strip().lower() in TRUE_WORDS
        raise wrong("true or false")
    if isinstance(current, (int, float)):
        number = _as_number(value, int if isinstance(current, int) else float)
        if number is None:
            raise wrong("a whole number" if isinstance(current, int) else "a number")
        return number
    if isinstance(current, str):
        if isinstance(value, str):
            return value
        raise wrong("text in quotes")
    return value


def _as_number(value: Any, kind: type[int] | type[float]) -> int | float | None:
    """`value` as a whole-number or number setting takes it: a number (whole, for `int`) or text that
    reads as one; None when it cannot be (true and false are not numbers here)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) or (isinstance(value, float) and (kind is float or value.is_integer())):
        return kind(value)
    if isinstance(value, str):
        try:
            return kind(value.strip())
        except ValueError:
            return None
    return None


TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


def coerce_settings(kind: type, values: dict[str, Any]) -> Any:
    """Build a dataclass from loosely typed values (strings from a command line); ConfigError names the key."""
    return replace(kind(), **{name: _checked(kind, name, value) for name, value in values.items()})


def _openai_fallbacks(values: dict[str, Any]) -> dict[str, str]:
    """The conventional OPENAI_BASE_URL / OPENAI_API_KEY fill what neither a file nor HYPERFOLIO_* set;
    returns the keys filled and the variable each came from."""
    filled: dict[str, str] = {}
    for key, env_name in (("base_url", "OPENAI_BASE_URL"), ("api_key", "OPENAI_API_KEY")):
        env = os.environ.get(env_name)
        if env and not values.get(key):
            values[key] = env
            filled[key] = env_name
    return filled
