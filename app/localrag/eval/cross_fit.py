"""Fitting the cross-encoder (``core/answer/cross.py``) on the reader's candidate dumps.

``local-rag eval reader --fit-cross DUMP... --out resources/reader/cross_encoder.onnx``: the bundled MiniLM's
weights (read from its ONNX file, int8 with a scale per row or column, made float) become a cross-encoder: the
question and a span as one input, the mean of the last layer's word-piece vectors, one linear score. It is
trained listwise: for each question, each of its answering spans (at most ``POSITIVES``) against ``NEGATIVES``
of its other candidates drawn at random, with the cross-entropy of the answering one among them, one pass over
the questions (``EPOCHS``) with AdamW. Then it is written as ONNX in int8 (``int8_model``): its matrix
products run on int8 word-piece vectors and weights (onnxruntime's dynamic quantization), and its word and
position tables are stored as int8 with a scale per row, made float when the app opens it. Eight spans take
33–36 ms (each pair alone, on two threads) instead of the float model's 81–114 (2 AVX-512 cores), with picks
as good on questions it was not trained on (docs/benchmarks.md). ``requantize`` turns a model written before
(float arithmetic, its weights stored int8 and made float by ``DequantizeLinear``) into this form.

Training needs PyTorch and the ``onnx`` package (``requantize`` the ``onnx`` package alone), for this step
only: the app runs the written file with the onnxruntime it has. Two CPU cores take about 20 minutes for 480
questions, 15 for 770 (2 cores with AVX-512).
"""

from __future__ import annotations

import math
import random
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from localrag.core.answer.cross import pair_arrays, pair_tokenizer

HIDDEN, HEADS, FEED_FORWARD, LAYERS, VOCABULARY, POSITIONS = 384, 12, 1536, 6, 30522, 512
POSITIVES, NEGATIVES, EPOCHS = 3, 7, 1
LEARNING_RATE, WEIGHT_DECAY, SEED = 3e-5, 0.01, 0


def fit_cross(rows: list[dict[str, Any]], out: Path, say: Callable[[str], None] = print) -> int:
    """Train on ``rows`` (``reader_fit.load_dump``) and write the model to ``out``. Returns the groups trained
    on (one per answering span)."""
    import torch

    from localrag.core.embed.model_files import default_embedding_files

    files = default_embedding_files()
    tokenizer = pair_tokenizer(files.tokenizer)
    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    model = _cross_encoder(torch, _minilm_weights(files.onnx))
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY)
    model.train()
    trained = 0
    for epoch in range(EPOCHS):
        batch = groups(rows, rng)
        rng.shuffle(batch)
        running = 0.0
        for step, (question, answer, others) in enumerate(batch, 1):
            ids, mask, types = _encode(torch, tokenizer, question, [answer, *others])
            logits = model(ids, mask, types)
            loss = torch.nn.functional.cross_entropy(logits[None, :], torch.tensor([0]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running += float(loss.detach())
            if step % 100 == 0:
                say(f"epoch {epoch + 1} step {step}/{len(batch)}: loss {running / 100:.3f}")
                running = 0.0
        trained += len(batch)
    model.eval()
    _export(torch, tokenizer, model, out)
    return trained


def groups(rows: list[dict[str, Any]], rng: random.Random) -> list[tuple[str, str, list[str]]]:
    """(question, an answering span, other candidates) for each answering span of each question."""
    out = []
    for r in rows:
        cands = r["candidates"]
        answers = [c["text"] for c in cands if c["label"] and not c["features"].get("heading")]
        others = [c["text"] for c in cands if not c["label"]]
        if not answers or not others:
            continue
        for answer in answers[:POSITIVES]:
            out.append((r["question"], answer, rng.sample(others, min(NEGATIVES, len(others)))))
    return out


def _encode(torch: Any, tokenizer: Any, question: str, texts: list[str]) -> tuple[Any, Any, Any]:
    ids, mask, types = pair_arrays(tokenizer.encode_batch([(question, t) for t in texts]))
    return torch.tensor(ids), torch.tensor(mask), torch.tensor(types)


def _minilm_weights(graph: Path) -> dict[str, np.ndarray]:
    """The bundled MiniLM's weights by this module's names, made float from its int8 ONNX file (each int8
    matrix ``X_q`` times its scale ``X_scale``; the six layers' matrices in the order the graph names them:
    query, key, value, attention output, intermediate, output)."""
    import onnx
    from onnx import numpy_helper

    init = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(graph)).graph.initializer}

    def dq(name: str) -> np.ndarray:
        return np.asarray(init[name + "_q"], dtype=np.float32) * init[name + "_scale"]

    emb = "inner.embeddings."
    w = {
        "word.weight": dq(emb + "word_embeddings.weight"),
        "pos.weight": dq(emb + "position_embeddings.weight"),
        "typ.weight": init[emb + "token_type_embeddings.weight"],
        "ln.weight": init[emb + "LayerNorm.weight"],
        "ln.bias": init[emb + "LayerNorm.bias"],
    }
    matrices = sorted(int(k[4:-2]) for k in init if k.startswith("val_") and k.endswith("_q"))
    if len(matrices) != 6 * LAYERS:
        raise ValueError(f"unexpected embedding model graph: {len(matrices)} int8 matrices")
    for layer in range(LAYERS):
        p, ours = f"inner.encoder.layer.{layer}.", f"layers.{layer}."
        own = matrices[6 * layer : 6 * layer + 6]
        for name, index in zip(("q", "k", "v", "o", "i", "out"), own, strict=True):
            w[ours + name + ".weight"] = dq(f"val_{index}").T.copy()
        biases = {
            "q": "attention.self.query.bias",
            "k": "attention.self.key.bias",
            "v": "attention.self.value.bias",
            "o": "attention.output.dense.bias",
            "i": "intermediate.dense.bias",
            "out": "output.dense.bias",
            "ln1": "attention.output.LayerNorm.bias",
            "ln2": "output.LayerNorm.bias",
        }
        for name, source in biases.items():
            w[ours + name + ".bias"] = init[p + source]
        w[ours + "ln1.weight"] = init[p + "attention.output.LayerNorm.weight"]
        w[ours + "ln2.weight"] = init[p + "output.LayerNorm.weight"]
    return w


def _cross_encoder(torch: Any, weights: dict[str, np.ndarray]) -> Any:
    """MiniLM (BERT, 6 layers of 384) with a linear score over its mean word-piece vector."""
    nn = torch.nn
    module: Any = nn.Module

    class Layer(module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(HIDDEN, HIDDEN) for _ in range(4))
            self.ln1 = nn.LayerNorm(HIDDEN, eps=1e-12)
            self.i = nn.Linear(HIDDEN, FEED_FORWARD)
            self.out = nn.Linear(FEED_FORWARD, HIDDEN)
            self.ln2 = nn.LayerNorm(HIDDEN, eps=1e-12)

        def forward(self, x: Any, bias: Any) -> Any:
            b, t, _ = x.shape

            def heads(z: Any) -> Any:
                return z.view(b, t, HEADS, HIDDEN // HEADS).transpose(1, 2)

            att = heads(self.q(x)) @ heads(self.k(x)).transpose(-1, -2) / math.sqrt(HIDDEN // HEADS)
            ctx = ((att + bias).softmax(-1) @ heads(self.v(x))).transpose(1, 2).reshape(b, t, HIDDEN)
            x = self.ln1(x + self.o(ctx))
            return self.ln2(x + self.out(nn.functional.gelu(self.i(x))))

    class CrossEncoder(module):
        def __init__(self) -> None:
            super().__init__()
            self.word = nn.Embedding(VOCABULARY, HIDDEN)
            self.pos = nn.Embedding(POSITIONS, HIDDEN)
            self.typ = nn.Embedding(2, HIDDEN)
            self.ln = nn.LayerNorm(HIDDEN, eps=1e-12)
            self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
            self.head = nn.Linear(HIDDEN, 1)

        def forward(self, ids: Any, mask: Any, types: Any) -> Any:
            positions = torch.arange(ids.shape[1])[None, :]
            x = self.ln(self.word(ids) + self.pos(positions) + self.typ(types))
            bias = (1.0 - mask[:, None, None, :].float()) * -1e4
            for layer in self.layers:
                x = layer(x, bias)
            m = mask[..., None].float()
            return self.head((x * m).sum(1) / m.sum(1)).squeeze(-1)

    model = CrossEncoder()
    tensors = {k: torch.tensor(np.asarray(v)) for k, v in weights.items()}
    missing = model.load_state_dict(tensors, strict=False)
    if set(missing.missing_keys) != {"head.weight", "head.bias"} or missing.unexpected_keys:
        raise ValueError(f"weights do not fit the model: {missing}")
    return model


def _export(torch: Any, tokenizer: Any, model: Any, out: Path) -> None:
    """Write ``model`` as ONNX in int8 (``int8_model``)."""
    ids, mask, types = _encode(torch, tokenizer, "a question?", ["one span.", "another, longer span."])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "width"} for n in names} | {"score": {0: "batch"}}
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "plain.onnx"
        torch.onnx.export(
            model,
            (ids, mask, types),
            str(plain),
            input_names=names,
            output_names=["score"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
        int8_model(plain, out)


def int8_model(source: Path, out: Path) -> None:
    """``source`` (float) with its matrix products in int8: each constant weight matrix int8 with a scale per
    column, each product's other side quantized as it runs (``MatMulInteger``); then the tables
    ``int8_weights``. The weights use 7 bits (-64..63): on a CPU without VNNI (AVX2) onnxruntime multiplies
    unsigned by signed bytes adding pairs of products in 16 bits, which full 8-bit weights can overflow; with
    7 the same file computes the same on every x86 CPU."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        products = Path(tmp) / "products.onnx"
        quantize_dynamic(
            str(source),
            str(products),
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=True,
            op_types_to_quantize=["MatMul"],
            extra_options={"MatMulConstBOnly": True},
        )
        int8_weights(products, out)


def requantize(source: Path, out: Path) -> None:
    """A model written by ``int8_weights`` alone (weights made float by ``DequantizeLinear``, float
    arithmetic) written again by ``int8_model``: the same weights, its products in int8."""
    import onnx
    from onnx import numpy_helper

    m = onnx.load(str(source))
    g = m.graph
    stored = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    nodes, floats, used = [], [], set()
    for node in g.node:
        if node.op_type != "DequantizeLinear" or not all(x in stored for x in node.input):
            nodes.append(node)
            continue
        q, scale = stored[node.input[0]].astype(np.float32), stored[node.input[1]]
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        w = q * _along(scale, axis)
        floats.append(numpy_helper.from_array(w.astype(np.float32), node.output[0]))
        used.update(node.input)
    kept = [i for i in g.initializer if i.name not in used] + floats
    del g.initializer[:]
    g.initializer.extend(kept)
    del g.node[:]
    g.node.extend(nodes)
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "plain.onnx"
        onnx.save(m, str(plain))
        int8_model(plain, out)


def int8_weights(source: Path, out: Path, *, least: int = 100_000) -> None:
    """``source`` with each float matrix of at least ``least`` values stored as int8 and a scale per column
    (per row for the word and position tables), made float again by ``DequantizeLinear`` in the graph."""
    import onnx
    from onnx import helper, numpy_helper

    m = onnx.load(str(source))
    g = m.graph
    kept, made = [], []
    for init in g.initializer:
        w = numpy_helper.to_array(init)
        if w.dtype != np.float32 or w.ndim != 2 or w.size < least:
            kept.append(init)
            continue
        axis = 0 if w.shape[0] in (VOCABULARY, POSITIONS) else 1
        largest = np.abs(w).max(axis=1 - axis)
        scale = np.where(largest > 0, largest / 127.0, 1.0).astype(np.float32)
        q = np.clip(np.round(w / _along(scale, axis)), -127, 127).astype(np.int8)
        n = init.name
        kept += [
            numpy_helper.from_array(q, n + "_q"),
            numpy_helper.from_array(scale, n + "_scale"),
            numpy_helper.from_array(np.zeros_like(scale, dtype=np.int8), n + "_zero"),
        ]
        parts = [n + "_q", n + "_scale", n + "_zero"]
        made.append(helper.make_node("DequantizeLinear", parts, [n], axis=axis))
    nodes = list(g.node)
    del g.initializer[:]
    g.initializer.extend(kept)
    del g.node[:]
    g.node.extend(made + nodes)
    onnx.checker.check_model(m)
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(m, str(out))


def _along(scale: np.ndarray, axis: int) -> np.ndarray:
    """A matrix's scales (one per column for ``axis`` 1, per row for 0) shaped to multiply it."""
    return scale[None, :] if axis == 1 else scale[:, None]
