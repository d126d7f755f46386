"""The ML-Agent's two text encoders (Section 4.4, "Model Architecture"): a question encoder
and a path encoder that share their lower part, each with its own linear head, their output
scaled to unit length. Both read the frozen all-MiniLM-L6-v2 (`lifebench.embeddings`); only
what sits on top of it is trained, by the hand-written gradients here (the tests check them
against finite differences).

- `attention` (the default, the paper's shape): a shared self-attention layer over MiniLM's
  last-layer token states, added back to them (a residual branch, its output projection
  starting at zero so that the untrained encoder is MiniLM's own), mean pooled as MiniLM is.
  The paper's CLIP-style encoders read the activation at [EOS]; MiniLM was trained with mean
  pooling, so its [SEP] state alone is a poor sentence vector (README, deviations).
- `mlp` (the lighter variant): MiniLM's sentence vectors through a shared tanh layer.

An encoder's input for a text (`features`) is what the frozen model gives for it: the token
states (tokens, 384) or the sentence vector (384,)."""

from __future__ import annotations

import random
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from lifebench.methods.instructrag.nn import Params, gaussian, softmax

Features = list[np.ndarray]  # one array per text
SIDES = ("q", "p")           # question encoder, path encoder


class Encoder(Protocol):
    name: str
    width: int  # the size of the vectors it outputs

    def init(self, rng: random.Random) -> Params: ...

    def features(self, texts: Sequence[str]) -> Features: ...

    def forward(self, params: Params, inputs: Features, side: str) -> tuple[np.ndarray, Any]: ...

    def backward(self, params: Params, cache: Any, d_v: np.ndarray, side: str,
                 grads: Params) -> None: ...


def _head(params: Params, h: np.ndarray, side: str) -> tuple[np.ndarray, Any]:
    """The side's linear head on the shared features `h`, then unit length."""
    z = h @ params[f"{side}_w"] + params[f"{side}_b"]
    norm = np.linalg.norm(z, axis=1, keepdims=True) + 1e-12
    return z / norm, (h, norm, z / norm)


def _head_backward(params: Params, cache: Any, d_v: np.ndarray, side: str, grads: Params) -> np.ndarray:
    """The head's gradients into `grads`; returns d loss / d h."""
    h, norm, v = cache
    d_z = (d_v - v * (v * d_v).sum(axis=1, keepdims=True)) / norm
    grads[f"{side}_w"] += h.T @ d_z
    grads[f"{side}_b"] += d_z.sum(axis=0)
    return d_z @ params[f"{side}_w"].T


def _init_heads(rng: random.Random, size: int, scale: float) -> Params:
    """One linear head per side, both starting from the same matrix (+ a little noise to
    break the tie): before training a question is as near a path as their inputs are."""
    base = np.eye(size) if scale == 0 else gaussian(rng, (size, size), scale)
    params = {}
    for side in SIDES:
        params[f"{side}_w"] = base + gaussian(rng, (size, size), 0.01)
        params[f"{side}_b"] = np.zeros(size)
    return params


class MlpEncoder:
    """Sentence vectors -> shared tanh layer (256) -> a linear head per side -> unit length."""

    name = "mlp"
    width = 256

    def __init__(self, embed: Callable[[Sequence[str]], np.ndarray], dim: int) -> None:
        self.embed, self.dim = embed, dim

    def init(self, rng: random.Random) -> Params:
        return {"shared_w": gaussian(rng, (self.dim, self.width), 1.0 / np.sqrt(self.dim)),
                "shared_b": np.zeros(self.width), **_init_heads(rng, self.width, 0.0)}

    def features(self, texts: Sequence[str]) -> Features:
        return list(self.embed(list(texts)).astype(np.float64))

    def forward(self, params: Params, inputs: Features, side: str) -> tuple[np.ndarray, Any]:
        x = np.vstack(inputs)
        hidden = np.tanh(x @ params["shared_w"] + params["shared_b"])
        v, head = _head(params, hidden, side)
        return v, (x, hidden, head)

    def backward(self, params: Params, cache: Any, d_v: np.ndarray, side: str, grads: Params) -> None:
        x, hidden, head = cache
        d_pre = _head_backward(params, head, d_v, side, grads) * (1.0 - hidden ** 2)
        grads["shared_w"] += x.T @ d_pre
        grads["shared_b"] += d_pre.sum(axis=0)


class AttentionEncoder:
    """Token states X (tokens, 384) -> H = X + softmax(X Wq (X Wk)^T / sqrt(a)) X Wv Wo, one
    head of size `a` shared by both sides -> mean over tokens -> a linear head per side
    (384 -> 384, starting at the identity) -> unit length."""

    name = "attention"
    head_size = 32  # one head of MiniLM's own head size

    def __init__(self, token_states: Callable[[Sequence[str]], list[np.ndarray]], dim: int) -> None:
        self.token_states, self.dim = token_states, dim
        self.width = dim

    def init(self, rng: random.Random) -> Params:
        scale = 1.0 / np.sqrt(self.dim)
        return {"attn_q": gaussian(rng, (self.dim, self.head_size), scale),
                "attn_k": gaussian(rng, (self.dim, self.head_size), scale),
                "attn_v": gaussian(rng, (self.dim, self.head_size), scale),
                # zero: the untrained encoder is MiniLM's mean-pooled vector
                "attn_o": np.zeros((self.head_size, self.dim)),
                **_init_heads(rng, self.dim, 0.0)}

    def features(self, texts: Sequence[str]) -> Features:
        return [states.astype(np.float64) for states in self.token_states(list(texts))]

    def forward(self, params: Params, inputs: Features, side: str) -> tuple[np.ndarray, Any]:
        root = np.sqrt(self.head_size)
        pooled, caches = [], []
        for x in inputs:
            q, k, v = x @ params["attn_q"], x @ params["attn_k"], x @ params["attn_v"]
            p = softmax(q @ k.T / root)
            c = p @ v
            pooled.append(x.mean(axis=0) + c.mean(axis=0) @ params["attn_o"])
            caches.append((x, q, k, v, p, c))
        out, head = _head(params, np.vstack(pooled), side)
        return out, (caches, head)

    def backward(self, params: Params, cache: Any, d_v: np.ndarray, side: str, grads: Params) -> None:
        caches, head = cache
        d_e = _head_backward(params, head, d_v, side, grads)
        root = np.sqrt(self.head_size)
        for (x, q, k, v, p, c), d_pooled in zip(caches, d_e):
            n = len(x)
            # the mean over tokens: every token's output gets d_pooled / n
            grads["attn_o"] += np.outer(c.mean(axis=0), d_pooled)
            d_c = np.broadcast_to(params["attn_o"] @ d_pooled / n, c.shape)
            d_p = d_c @ v.T
            d_v_tokens = p.T @ d_c
            d_s = p * (d_p - (d_p * p).sum(axis=1, keepdims=True)) / root
            grads["attn_q"] += x.T @ (d_s @ k)
            grads["attn_k"] += x.T @ (d_s.T @ q)
            grads["attn_v"] += x.T @ d_v_tokens


ENCODERS = ("attention", "mlp")


def make_encoder(name: str, embedder: Any) -> Encoder:
    """The encoder `name` on `embedder` (a `lifebench.embeddings.Embedder`)."""
    if name == "attention":
        return AttentionEncoder(embedder.token_states, embedder.dim)
    if name == "mlp":
        return MlpEncoder(embedder.embed, embedder.dim)
    raise ValueError(f"encoder must be one of {', '.join(ENCODERS)}, got {name!r}")
