"""The ML-Agent (Section 4.4): a question encoder and a path encoder that share their first
layer, each with its own head, trained so that a question's vector is closest to the path
that serves it; the path written into the prompt is the candidate most similar (cosine) to
the question, so the model does not depend on K.

The paper's encoders are CLIP-style text transformers. Here both encoders start from the
frozen sentence vectors of `lifebench.embeddings` (all-MiniLM-L6-v2) and train what sits on
top: a shared tanh layer (the shared part) and a linear head per side, then unit length.
Losses: QPA (Eq. 6-7, symmetric InfoNCE over a batch), QPM (Eq. 8, a match classifier on
the product of the two vectors), their sum for pre-training (Eq. 9), and fine-tuning
(Eq. 10) with the RL-Agent's candidates as hard negatives.
"""

from __future__ import annotations

import random
from typing import Sequence

import numpy as np

from lifebench.methods.instructrag.nn import Params, gaussian, log_softmax, softmax, zeros_like

WIDTH = 256
TEMPERATURE = 0.1


def init_matcher(rng: random.Random, input_size: int) -> Params:
    params = {"shared_w": gaussian(rng, (input_size, WIDTH), 1.0 / np.sqrt(input_size)),
              "shared_b": np.zeros(WIDTH), "match_w": np.zeros(WIDTH), "match_b": np.zeros(1)}
    for side in ("q", "p"):
        # heads start as the identity: before training, similarity is the shared features'
        params[f"{side}_w"] = np.eye(WIDTH) + gaussian(rng, (WIDTH, WIDTH), 0.01)
        params[f"{side}_b"] = np.zeros(WIDTH)
    return params


def _forward(params: Params, x: np.ndarray, side: str) -> tuple[np.ndarray, tuple]:
    pre = x @ params["shared_w"] + params["shared_b"]
    hidden = np.tanh(pre)
    z = hidden @ params[f"{side}_w"] + params[f"{side}_b"]
    norm = np.linalg.norm(z, axis=1, keepdims=True) + 1e-12
    v = z / norm
    return v, (x, hidden, norm, v)


def _backward(params: Params, cache: tuple, d_v: np.ndarray, side: str, grads: Params) -> None:
    x, hidden, norm, v = cache
    d_z = (d_v - v * (v * d_v).sum(axis=1, keepdims=True)) / norm
    grads[f"{side}_w"] += hidden.T @ d_z
    grads[f"{side}_b"] += d_z.sum(axis=0)
    d_pre = (d_z @ params[f"{side}_w"].T) * (1.0 - hidden ** 2)
    grads["shared_w"] += x.T @ d_pre
    grads["shared_b"] += d_pre.sum(axis=0)


def encode(params: Params, x: np.ndarray, side: str) -> np.ndarray:
    return _forward(params, np.atleast_2d(x), side)[0]


def choose(params: Params, question: np.ndarray, paths: np.ndarray) -> int:
    """The index of the candidate path whose vector is nearest the question's."""
    q = encode(params, question, "q")[0]
    return int(np.argmax(encode(params, paths, "p") @ q))


def _cross_entropy(logits: np.ndarray, targets: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean cross-entropy of rows and the gradient on the logits."""
    n = len(targets)
    loss = float(-log_softmax(logits)[np.arange(n), targets].mean())
    d = softmax(logits)
    d[np.arange(n), targets] -= 1.0
    return loss, d / n


def qpa_loss(params: Params, questions: np.ndarray, paths: np.ndarray) -> tuple[float, Params]:
    """Question-path alignment: row i's question and path are a pair, the batch's other
    paths (questions) its negatives, in both directions (Eq. 6-7)."""
    grads = zeros_like(params)
    vq, cache_q = _forward(params, questions, "q")
    vp, cache_p = _forward(params, paths, "p")
    logits = vq @ vp.T / TEMPERATURE
    targets = np.arange(len(vq))
    loss_qp, d_qp = _cross_entropy(logits, targets)
    loss_pq, d_pq = _cross_entropy(logits.T, targets)
    d_logits = (d_qp + d_pq.T) / 2.0 / TEMPERATURE
    _backward(params, cache_q, d_logits @ vp, "q", grads)
    _backward(params, cache_p, d_logits.T @ vq, "p", grads)
    return (loss_qp + loss_pq) / 2.0, grads


def qpm_loss(params: Params, questions: np.ndarray, paths: np.ndarray,
             labels: np.ndarray) -> tuple[float, Params]:
    """Question-path matching: binary cross-entropy of match (1) or mismatch (0) (Eq. 8)."""
    grads = zeros_like(params)
    vq, cache_q = _forward(params, questions, "q")
    vp, cache_p = _forward(params, paths, "p")
    product = vq * vp
    logit = product @ params["match_w"] + params["match_b"][0]
    p = 1.0 / (1.0 + np.exp(-logit))
    labels = np.asarray(labels, dtype=np.float64)
    eps = 1e-12
    loss = float(-(labels * np.log(p + eps) + (1 - labels) * np.log(1 - p + eps)).mean())
    d_logit = (p - labels) / len(labels)
    grads["match_w"] += product.T @ d_logit
    grads["match_b"] += d_logit.sum(keepdims=True)
    d_product = d_logit[:, None] * params["match_w"][None, :]
    _backward(params, cache_q, d_product * vp, "q", grads)
    _backward(params, cache_p, d_product * vq, "p", grads)
    return loss, grads


def pretraining_loss(params: Params, questions: np.ndarray, paths: np.ndarray,
                     rng: random.Random) -> tuple[float, Params]:
    """L_PT = L_QPA + L_QPM (Eq. 9); QPM's mismatches pair each question with another
    row's path."""
    loss_a, grads = qpa_loss(params, questions, paths)
    n = len(questions)
    if n < 2:
        return loss_a, grads
    shift = [(i + 1 + rng.randrange(n - 1)) % n for i in range(n)]
    q_rows = np.vstack([questions, questions])
    p_rows = np.vstack([paths, paths[shift]])
    labels = np.concatenate([np.ones(n), np.zeros(n)])
    loss_m, grads_m = qpm_loss(params, q_rows, p_rows, labels)
    return loss_a + loss_m, {name: grads[name] + grads_m[name] for name in grads}


def finetuning_loss(params: Params, questions: np.ndarray, pools: Sequence[np.ndarray],
                    best: Sequence[int]) -> tuple[float, Params]:
    """L_FT (Eq. 10): each question against its pool (the RL-Agent's candidates and paths
    of other questions), the best-scoring path the positive; and symmetrically each best
    path against the batch's questions."""
    grads = zeros_like(params)
    vq, cache_q = _forward(params, questions, "q")
    d_vq = np.zeros_like(vq)
    total = 0.0
    positives = []
    for i, (pool, positive) in enumerate(zip(pools, best)):
        vp, cache_p = _forward(params, pool, "p")
        logits = (vp @ vq[i])[None, :] / TEMPERATURE
        loss, d_logits = _cross_entropy(logits, np.array([positive]))
        total += loss / (2 * len(best))
        d = d_logits[0] / TEMPERATURE / (2 * len(best))
        d_vq[i] += d @ vp
        _backward(params, cache_p, np.outer(d, vq[i]), "p", grads)
        positives.append(pool[positive])
    vp_best, cache_best = _forward(params, np.vstack(positives), "p")
    logits = vp_best @ vq.T / TEMPERATURE
    loss_pq, d_pq = _cross_entropy(logits, np.arange(len(best)))
    total += loss_pq / 2
    d_pq = d_pq / TEMPERATURE / 2
    d_vq += d_pq.T @ vp_best
    _backward(params, cache_best, d_pq @ vq, "p", grads)
    _backward(params, cache_q, d_vq, "q", grads)
    return total, grads
