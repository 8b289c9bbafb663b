"""A sentence model read from a folder in the Hugging Face sentence-transformers layout, run by
onnxruntime when it is installed (meaning/ort.py), else by numpy (docs/ranking.md, "By meaning").

The folder holds ``config.json`` (a BERT encoder: sizes, layers, heads), ``tokenizer.json`` (read
by ``tokenizers``), ``model.safetensors`` (read by ``safetensors``), and optionally
``1_Pooling/config.json`` (mean, CLS or max pooling; mean when absent) and
``sentence_bert_config.json`` (``max_seq_length``). ``encode`` returns one unit-length float32
row a text, so a dot product is the cosine similarity. No torch: the forward pass is a few
matrix products, the same for any model of this shape, and a tiny one built in a test goes
through exactly this code.

A folder that is not such a model is refused at load with ``MeaningUnavailable`` naming the file
and what is wrong, never later: only regular files are opened (a FIFO cannot hang the load), a
JSON file is read up to ``meaning_json_bytes`` and the weights up to ``meaning_weights_bytes``,
JSON nested too deep is refused, every tensor's shape is checked against the config and the
tokenizer, and a sentence is embedded once (``probe``) before the model is handed out.

numpy, tokenizers and safetensors come with the meaning extra (``INSTALL_HINT``); without them
``load_model`` raises ``MeaningUnavailable`` saying so. onnxruntime is optional: it embeds a
query several times faster than numpy does.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import math
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vault_mem.errors import InvalidInput, MeaningUnavailable
from vault_mem.settings import Settings
from vault_mem.vault.portable import O_BINARY, read_regular

log = logging.getLogger("vault_mem.meaning")

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Matrix = NDArray[np.float32]

RUNTIMES = ("auto", "onnxruntime", "numpy")
# Texts whose vectors an 8-bit query encoder must give as the full-precision one does, about.
PROBES = ("which message broker did we pick?", "Meeting notes: the garden, the budget and the trip to Paris",
          "def main(): return 0")
INSTALL_HINT = "install the meaning extra: from the vault-mem folder, pip install -e '.[meaning]'"
WEIGHTS_FILE = "model.safetensors"
CARD_FILE = "README.md"  # a model card, as the Hugging Face hub keeps beside a model; its first heading names it
# Models known by their weights (the second identity ``_identities`` gives), named so wherever their folder is and
# whatever it is called: the folder a package or an archive unpacks to names no model.
KNOWN_WEIGHTS = {"d480bd19774e5ade": "sentence-transformers/all-MiniLM-L6-v2"}


@dataclass(frozen=True)
class Layer:
    q: tuple[Any, Any]
    k: tuple[Any, Any]
    v: tuple[Any, Any]
    out: tuple[Any, Any]
    norm1: tuple[Any, Any]
    up: tuple[Any, Any]
    down: tuple[Any, Any]
    norm2: tuple[Any, Any]


class SentenceModel:
    """A loaded model: ``encode(texts)`` -> unit rows; ``name``, ``dim`` and ``fingerprint`` (the
    weights' identity, so vectors of another model are never mixed with its own)."""

    def __init__(self, folder: Path, tokenizer: Any, weights: dict[str, Any], layout: dict[str, Any],
                 pooling: str, max_tokens: int, fingerprint: str, name: str | None = None, *,
                 config: Settings) -> None:
        import numpy as np

        self.config = config
        self.folder = folder
        self.name = name or folder.name
        self.fingerprint = fingerprint
        self.max_tokens = max_tokens
        self.pooling = pooling
        self.heads = int(layout["num_attention_heads"])
        self.eps = float(layout.get("layer_norm_eps", 1e-12))
        self._np = np
        self._tokenizer = tokenizer
        prefix = _prefix(weights)
        where = folder / WEIGHTS_FILE

        def w(tensor: str, *shape: int | None) -> Any:
            """The tensor named ``tensor``, as float32, of ``shape`` (None: any size on that axis)."""
            key = prefix + tensor
            if key not in weights:
                raise MeaningUnavailable(f"{where}: no tensor {key!r}; is this a BERT sentence model?")
            array = np.asarray(weights[key], dtype=np.float32)
            if array.ndim != len(shape) or any(want is not None and got != want
                                               for got, want in zip(array.shape, shape, strict=True)):
                wanted = " x ".join("any" if d is None else str(d) for d in shape)
                raise MeaningUnavailable(f"{where}: tensor {key!r} is {' x '.join(map(str, array.shape)) or 'a scalar'}"
                                         f", not {wanted} as the model's other tensors and config.json say")
            return array

        def linear(name: str, inputs: int, outputs: int) -> tuple[Any, Any]:
            return np.ascontiguousarray(w(name + ".weight", outputs, inputs).T), w(name + ".bias", outputs)

        def norm(name: str, size: int) -> tuple[Any, Any]:
            return w(name + ".weight", size), w(name + ".bias", size)

        self.words = w("embeddings.word_embeddings.weight", None, None)
        self.dim = dim = int(self.words.shape[1])
        _check_sizes(folder, layout, tokenizer, self.words.shape)
        self.positions = w("embeddings.position_embeddings.weight", None, dim)
        self.types = w("embeddings.token_type_embeddings.weight", None, dim)
        if len(self.positions) < 2 or not len(self.types):
            raise MeaningUnavailable(f"{where}: the position embeddings need at least 2 rows and the token type "
                                     "embeddings 1")
        self.embed_norm = norm("embeddings.LayerNorm", dim)
        if self.dim % self.heads:
            raise MeaningUnavailable(f"{folder / 'config.json'}: hidden size {self.dim} is not a multiple of "
                                     f"num_attention_heads {self.heads}")
        self.max_tokens = min(self.max_tokens, int(self.positions.shape[0]))
        # The feed-forward block's width: the first layer's, which every layer must have.
        inner = int(w("encoder.layer.0.intermediate.dense.weight", None, dim).shape[0])

        def block(at: str) -> Layer:
            return Layer(linear(at + "attention.self.query", dim, dim), linear(at + "attention.self.key", dim, dim),
                         linear(at + "attention.self.value", dim, dim),
                         linear(at + "attention.output.dense", dim, dim), norm(at + "attention.output.LayerNorm", dim),
                         linear(at + "intermediate.dense", dim, inner), linear(at + "output.dense", inner, dim),
                         norm(at + "output.LayerNorm", dim))

        self.layers = [block(f"encoder.layer.{i}.") for i in range(int(layout["num_hidden_layers"]))]
        tokenizer.enable_truncation(max_length=self.max_tokens)
        tokenizer.no_padding()
        self._encoder: Any = None
        self._query_encoder: Any = None  # onnxruntime with the weights in 8 bits (meaning/ort.py), for queries
        self.runtime = "numpy"
        self.query_bits = 32

    def use_runtime(self, runtime: str) -> None:
        """Run the encoder by ``runtime``: ``numpy``, ``onnxruntime`` (MeaningUnavailable when it is
        not installed or refuses the graph), or ``auto`` (onnxruntime when installed, else numpy).
        Both compute the same vectors (to float rounding), so the stored ones serve either."""
        if runtime not in RUNTIMES:
            raise InvalidInput("meaning runtime", f"{runtime!r} is not one of {', '.join(RUNTIMES)}")
        if runtime == self.runtime or (runtime == "auto" and self._encoder is not None):
            return
        if not self.layers:
            raise MeaningUnavailable(f"{self.folder}: the weights were handed to onnxruntime; load the model again")
        if runtime == "numpy":
            self._encoder, self._query_encoder, self.runtime, self.query_bits = None, None, "numpy", 32
            return
        try:
            from vault_mem.meaning.ort import OrtEncoder

            self._encoder, self.runtime = OrtEncoder(self, eight_bit=False), "onnxruntime"
            self._query_encoder = self._eight_bit_encoder()
            self.query_bits = 8 if self._query_encoder is not None else 32
            # onnxruntime holds its own copy of the layers: numpy's would double the model's memory.
            self.layers = []
        except ImportError:
            if runtime == "onnxruntime":
                raise MeaningUnavailable("the onnxruntime runtime needs the onnxruntime package: "
                                         "pip install onnxruntime") from None
        except Exception as exc:  # onnxruntime raises its own types for a graph it cannot run
            if runtime == "onnxruntime":
                raise MeaningUnavailable(f"{self.folder}: onnxruntime could not run this model ({exc})") from None
            log.warning("meaning: onnxruntime could not run %s (%s); numpy runs it", self.folder, exc)

    def _eight_bit_encoder(self) -> Any:
        """An onnxruntime encoder whose weights are kept in 8 bits, for queries, when the settings ask
        for it (``meaning_query_bits``) and its vectors agree with the full-precision ones on a few
        probe texts (cosine at least ``meaning_query_agreement``); else None, and queries are embedded
        as notes are. Its vectors are close, not equal: the stored ones stay full precision."""
        from vault_mem.meaning.ort import OrtEncoder

        config = self.config
        if config.meaning_query_bits != 8:
            return None
        try:
            encoder = OrtEncoder(self, eight_bit=True)
            # The cosine of two unit rows at that distance; two zero rows (a text of unknown words
            # only, in a model that maps them to nothing) agree.
            agreement = min(1.0 - float(((self._forward(ids, mask, encoder) - self._forward(ids, mask)) ** 2).sum()) / 2
                            for ids, mask in map(self._one, PROBES))
        except Exception as exc:  # onnxruntime raises its own types for an operator it lacks
            log.info("meaning: queries are embedded at full precision: 8-bit weights did not run (%s)", exc)
            return None
        if agreement < config.meaning_query_agreement:
            log.info("meaning: queries are embedded at full precision: with 8-bit weights a probe's vector was at "
                     "cosine %.4f with the full one", agreement)
            return None
        return encoder

    def probe(self) -> None:
        """MeaningUnavailable unless a sentence embeds into a finite row: what the shape checks do
        not see (weights that are not numbers, a tokenizer the library refuses to run) is found at
        load, never by a search."""
        try:
            row = self.encode([PROBES[0]])[0]
        except Exception as exc:  # numpy, tokenizers and onnxruntime raise their own types
            raise MeaningUnavailable(f"{self.folder}: the model could not embed a sentence "
                                     f"({type(exc).__name__}: {exc})") from None
        if not self._np.isfinite(row).all():
            raise MeaningUnavailable(f"{self.folder / WEIGHTS_FILE}: the weights give no finite vector (they hold "
                                     "values that are not numbers)")

    def _one(self, text: str) -> tuple[Any, Any]:
        """The ids and mask of one text, unpadded."""
        ids = self._np.array([self._tokenizer.encode(text).ids], dtype=self._np.int64)
        return ids, self._np.ones(ids.shape, dtype=self._np.float32)

    def encode_query(self, text: str) -> Any:
        """A query's unit row: as ``encode``, by the 8-bit encoder when there is one."""
        return self._forward(*self._one(text), self._query_encoder)[0]

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer.encode(text).ids)

    def encode(self, texts: list[str], batch_tokens: int | None = None) -> Matrix:
        """One unit-length row a text (float32, ``dim`` wide). Texts are cut at ``max_tokens``
        word pieces; batches of similar lengths are padded together, about ``batch_tokens``
        word pieces a batch (the ``meaning_batch_tokens`` setting when None), so memory stays small
        whatever the number of texts."""
        batch_tokens = self.config.meaning_batch_tokens if batch_tokens is None else batch_tokens
        np = self._np
        out: Matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encoded = self._tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
        start = 0
        while start < len(order):
            longest = max(1, len(encoded[order[start]].ids))
            end = start + 1
            while end < len(order) and (end - start + 1) * max(longest, len(encoded[order[end]].ids)) <= batch_tokens:
                longest = max(longest, len(encoded[order[end]].ids))
                end += 1
            rows = order[start:end]
            ids = np.zeros((len(rows), longest), dtype=np.int64)
            mask = np.zeros((len(rows), longest), dtype=np.float32)
            for r, i in enumerate(rows):
                piece = encoded[i].ids
                ids[r, :len(piece)] = piece
                mask[r, :len(piece)] = 1.0
            out[rows] = self._forward(ids, mask)
            start = end
        return out

    def _forward(self, ids: Any, mask: Any, encoder: Any = None) -> Any:
        """Unit rows of a padded batch: the encoder's last hidden states (by ``encoder`` when given),
        pooled and normalised."""
        np = self._np
        encoder = self._encoder if encoder is None else encoder
        embedded = self._embedded(ids)
        bias = ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)  # what attention adds: padding never counts
        h = encoder.run(embedded, bias) if encoder is not None else self._hidden(embedded, bias)
        if self.pooling == "cls":
            pooled = h[:, 0, :]
        elif self.pooling == "max":
            pooled = np.where(mask[:, :, None] > 0, h, -np.inf).max(axis=1)
        else:
            pooled = (h * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def _embedded(self, ids: Any) -> Any:
        """The embedding layer: each word piece's vector plus its position's, layer-normed."""
        length = ids.shape[1]
        h = self.words[ids] + self.positions[:length][None, :, :] + self.types[0][None, None, :]
        return _layer_norm(self._np, h, self.embed_norm, self.eps)

    def _hidden(self, embedded: Any, bias: Any) -> Any:
        """The encoder's layers run by numpy (meaning/ort.py builds the same computation for
        onnxruntime); ``bias``: what attention adds to each word piece's score (``_forward``)."""
        np = self._np
        h = embedded
        batch, length = embedded.shape[:2]
        heads, size = self.heads, self.dim // self.heads
        scale = np.float32(1.0 / math.sqrt(size))
        for layer in self.layers:
            def split(x: Any) -> Any:
                return x.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)
            q = split(h @ layer.q[0] + layer.q[1])
            k = split(h @ layer.k[0] + layer.k[1])
            v = split(h @ layer.v[0] + layer.v[1])
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, self.dim)
            h = _layer_norm(np, h + context @ layer.out[0] + layer.out[1], layer.norm1, self.eps)
            up = _gelu(np, h @ layer.up[0] + layer.up[1])
            h = _layer_norm(np, h + up @ layer.down[0] + layer.down[1], layer.norm2, self.eps)
        return h


def _layer_norm(np: Any, x: Any, weights: tuple[Any, Any], eps: float) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + eps) * weights[0] + weights[1]


def _gelu(np: Any, x: Any) -> Any:
    """BERT's gelu, ``x * (1 + erf(x / sqrt 2)) / 2``; numpy has no erf, so Abramowitz and Stegun's
    7.1.26 (absolute error under 1.5e-7) stands in for it."""
    z = x * np.float32(0.7071067811865476)
    a = np.abs(z)
    t = 1.0 / (1.0 + np.float32(0.3275911) * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = np.sign(z) * (1.0 - poly * np.exp(-a * a))
    return (0.5 * x * (1.0 + erf)).astype(np.float32)


def _prefix(weights: dict[str, Any]) -> str:
    """``bert.`` when the tensors carry it (a BertModel saved inside a task model), else ''."""
    return "bert." if any(k.startswith("bert.embeddings.") for k in weights) else ""


def _check_sizes(folder: Path, config: dict[str, Any], tokenizer: Any, words: tuple[int, ...]) -> None:
    """MeaningUnavailable unless the word vectors cover every id the tokenizer gives and their
    width is config.json's ``hidden_size`` (when it says one)."""
    vocabulary = int(tokenizer.get_vocab_size(with_added_tokens=True))
    if words[0] < vocabulary:
        raise MeaningUnavailable(f"{folder / WEIGHTS_FILE}: {words[0]:,} word vectors for the {vocabulary:,} word "
                                 "pieces of tokenizer.json; the two files are of different models")
    hidden = config.get("hidden_size")
    if isinstance(hidden, int) and not isinstance(hidden, bool) and hidden != words[1]:
        raise MeaningUnavailable(f"{folder / 'config.json'}: hidden_size is {hidden}, but the word vectors in "
                                 f"{WEIGHTS_FILE} have {words[1]} dimensions")


def _read_json(path: Path, config: Settings) -> tuple[dict[str, Any], bytes]:
    """The JSON object in ``path`` and its bytes (({}, b"") when there is no such file).
    MeaningUnavailable naming the file when it is not a regular file, holds more than
    ``meaning_json_bytes``, is not JSON (nested deeper than Python parses included) or not an object."""
    try:
        data = read_regular(path, config.meaning_json_bytes, chunk=config.read_chunk)
    except FileNotFoundError:
        return {}, b""
    except OSError as exc:
        raise MeaningUnavailable(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        value = json.loads(data)
    except RecursionError:
        raise MeaningUnavailable(f"{path}: nested too deep to be a model's JSON") from None
    except ValueError as exc:  # a UnicodeDecodeError too
        raise MeaningUnavailable(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(value, dict):
        raise MeaningUnavailable(f"{path}: expected a JSON object")
    return value, data


def _positive(config: dict[str, Any], key: str, whole: bool) -> bool:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or (whole and not isinstance(value, int)):
        return False
    return math.isfinite(value) and value > 0


def _identities(folder: Path, config: bytes, limit: int) -> tuple[str, str]:
    """(the model's fingerprint, its weights' own identity), from one read of the weights file's
    ends. The fingerprint hashes ``config`` and the weights file's size and first and last MiB
    (reading all of it would cost a start-up its time; a retrained model changes both); the
    identity is the same hash without the config, which names a model whatever its config's
    layout (``KNOWN_WEIGHTS``). Opened as ``read_regular`` opens: OSError (EINVAL) when it is not
    a regular file, (EFBIG) when it is larger than ``limit`` bytes (``meaning_weights_bytes``)."""
    fingerprint, weights = hashlib.sha256(config), hashlib.sha256()
    fd = os.open(folder / WEIGHTS_FILE, os.O_RDONLY | O_BINARY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, socket or device)", str(folder / WEIGHTS_FILE))
        size = info.st_size
        if size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit:,} bytes, which "
                          "would all be read into memory", str(folder / WEIGHTS_FILE))
        head, tail = _read_at(fd, 0, 1 << 20), _read_at(fd, max(0, size - (1 << 20)), 1 << 20)
    finally:
        os.close(fd)
    for digest in (fingerprint, weights):
        digest.update(str(size).encode())
        digest.update(head)
        digest.update(tail)
    return fingerprint.hexdigest()[:16], weights.hexdigest()[:16]


def _read_at(fd: int, offset: int, count: int) -> bytes:
    """Up to ``count`` bytes of ``fd`` from ``offset`` (fewer at the file's end)."""
    os.lseek(fd, offset, os.SEEK_SET)
    out = bytearray()
    while len(out) < count and (chunk := os.read(fd, count - len(out))):
        out += chunk
    return bytes(out)


def model_name(folder: Path, weights: str, config: Settings) -> str:
    """The model's own name: the one its weights are known by (``KNOWN_WEIGHTS``), else its model
    card's first heading when that is one word (the hub's cards open with ``# <name>``), else the
    ``owner/name`` of a pulled model's folder (``owner--name``), else the folder's name. Of the card
    ``config``'s ``meaning_json_bytes`` are read at most."""
    if weights in KNOWN_WEIGHTS:
        return KNOWN_WEIGHTS[weights]
    try:
        card = read_regular(folder / CARD_FILE, config.meaning_json_bytes, chunk=config.read_chunk).decode(
            "utf-8", "replace")
    except OSError:
        card = ""
    if card.startswith("---"):  # the card's YAML frontmatter, whose comments start with # too
        end = card.find("\n---", 3)
        card = card[end + 4:] if end >= 0 else ""
    heading = re.search(r"^# +(.*?)[ \t]*$", card, flags=re.MULTILINE)
    if heading and re.fullmatch(r"[\w.-][\w./-]{0,99}", heading.group(1)):
        return heading.group(1)
    from vault_mem.meaning.pull import models_dir

    if folder.parent == models_dir():  # a pulled model's folder: owner--name
        return folder.name.replace("--", "/")
    return folder.name


def load_model(folder: Path | str, runtime: str = "auto", *, config: Settings) -> SentenceModel:
    """The model in ``folder`` (see the module docstring), run by ``runtime`` (``use_runtime``), within
    the bounds of ``config`` (and its ``meaning_query_bits``).
    Raises MeaningUnavailable (naming the file and what is accepted) when the packages are missing
    or the folder is not such a model."""
    # One BLAS thread: the embedder runs beside the server's calls and must not take every core
    # (and many threads on small matrices are slower on a busy machine). Only before numpy loads.
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        os.environ.setdefault(name, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer
    except ImportError:
        raise MeaningUnavailable(f"the meaning stage needs numpy, tokenizers and safetensors; {INSTALL_HINT}") from None
    path = Path(folder).expanduser().absolute()  # named so in status, whatever folder status runs in
    if not path.is_dir():
        raise InvalidInput("meaning-model", f"{str(folder)!r} is not a folder; give a folder holding config.json, "
                           "tokenizer.json and model.safetensors (vault-mem meaning pull NAME downloads one)")
    missing = [n for n in ("config.json", "tokenizer.json", WEIGHTS_FILE) if not (path / n).exists()]
    if missing:
        raise MeaningUnavailable(f"{path}: missing {', '.join(missing)}; a sentence-transformers folder holds "
                                 "config.json, tokenizer.json and model.safetensors")
    layout, config_bytes = _read_json(path / "config.json", config)
    for key in ("num_attention_heads", "num_hidden_layers"):
        if not _positive(layout, key, whole=True):
            raise MeaningUnavailable(f"{path / 'config.json'}: {key} must be a positive integer")
    if "layer_norm_eps" in layout and not _positive(layout, "layer_norm_eps", whole=False):
        raise MeaningUnavailable(f"{path / 'config.json'}: layer_norm_eps must be a positive number")
    pooling_config = _read_json(path / "1_Pooling" / "config.json", config)[0]
    pooling = "cls" if pooling_config.get("pooling_mode_cls_token") else \
        "max" if pooling_config.get("pooling_mode_max_tokens") else "mean"
    max_tokens = _read_json(path / "sentence_bert_config.json", config)[0].get("max_seq_length", 256)
    if not isinstance(max_tokens, int) or max_tokens < 2:
        max_tokens = 256
    tokenizer_file = path / "tokenizer.json"
    try:
        fingerprint, weights_id = _identities(path, config_bytes, config.meaning_weights_bytes)
        tokenizer_text = read_regular(tokenizer_file, config.meaning_json_bytes,
                                      chunk=config.read_chunk).decode("utf-8")
    except OSError as exc:
        raise MeaningUnavailable(f"{exc.filename or path}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise MeaningUnavailable(f"{tokenizer_file}: not UTF-8 text") from None
    try:
        tokenizer = Tokenizer.from_str(tokenizer_text)
    except Exception as exc:  # the library raises its own types for a bad file (one nested too deep too)
        raise MeaningUnavailable(f"{tokenizer_file}: not a tokenizer ({exc})") from None
    del tokenizer_text
    try:
        # Checked a regular file just above (``_identities``): the library opens it by its name.
        weights = load_file(str(path / WEIGHTS_FILE))
    except Exception as exc:  # the library raises its own types for a bad file
        raise MeaningUnavailable(f"{path / WEIGHTS_FILE}: the weights could not be read ({exc})") from None
    model = SentenceModel(path, tokenizer, weights, layout, pooling, max_tokens, fingerprint,
                          model_name(path, weights_id, config), config=config)
    del weights
    model.use_runtime(runtime)
    model.probe()
    return model
