"""The ML-Agent (Section 4.4): a question encoder and a path encoder (`encoders.py`: a shared
lower part, a head per side) trained so that a question's vector is closest to the path that
serves it; the path written into the prompt is the candidate most similar (cosine) to the
question, so the model does not depend on K.

Losses: QPA (Eq. 6-7, symmetric InfoNCE over a batch), QPM (Eq. 8, a match classifier on
the product of the two vectors), their sum for pre-training (Eq. 9), and fine-tuning
(Eq. 10) with the RL-Agent's candidates as hard negatives. Inputs are the encoder's
features of the texts (`Encoder.features`).
"""

from __future__ import annotations

import random
from typing import Sequence

import numpy as np

from lifebench.methods.instructrag.encoders import Encoder, Features
from lifebench.methods.instructrag.nn import Params, log_softmax, softmax, zeros_like

TEMPERATURE = 0.1


def init_matcher(rng: random.Random, encoder: Encoder) -> Params:
    return {**encoder.init(rng), "match_w": np.zeros(encoder.width), "match_b": np.zeros(1)}


def encode(encoder: Encoder, params: Params, inputs: Features, side: str) -> np.ndarray:
    return encoder.forward(params, inputs, side)[0]


def choose(encoder: Encoder, params: Params, question: Features, paths: Features) -> int:
    """The index of the candidate path whose vector is nearest the question's."""
    q = encode(encoder, params, question, "q")[0]
    return int(np.argmax(encode(encoder, params, paths, "p") @ q))


def _cross_entropy(logits: np.ndarray, targets: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean cross-entropy of rows and the gradient on the logits."""
    n = len(targets)
    loss = float(-log_softmax(logits)[np.arange(n), targets].mean())
    d = softmax(logits)
    d[np.arange(n), targets] -= 1.0
    return loss, d / n


def qpa_loss(encoder: Encoder, params: Params, questions: Features,
             paths: Features) -> tuple[float, Params]:
    """Question-path alignment: row i's question and path are a pair, the batch's other
    paths (questions) its negatives, in both directions (Eq. 6-7)."""
    grads = zeros_like(params)
    vq, cache_q = encoder.forward(params, questions, "q")
    vp, cache_p = encoder.forward(params, paths, "p")
    logits = vq @ vp.T / TEMPERATURE
    targets = np.arange(len(vq))
    loss_qp, d_qp = _cross_entropy(logits, targets)
    loss_pq, d_pq = _cross_entropy(logits.T, targets)
    d_logits = (d_qp + d_pq.T) / 2.0 / TEMPERATURE
    encoder.backward(params, cache_q, d_logits @ vp, "q", grads)
    encoder.backward(params, cache_p, d_logits.T @ vq, "p", grads)
    return (loss_qp + loss_pq) / 2.0, grads


def qpm_loss(encoder: Encoder, params: Params, questions: Features, paths: Features,
             labels: np.ndarray) -> tuple[float, Params]:
    """Question-path matching: binary cross-entropy of match (1) or mismatch (0) (Eq. 8)."""
    grads = zeros_like(params)
    vq, cache_q = encoder.forward(params, questions, "q")
    vp, cache_p = encoder.forward(params, paths, "p")
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
    encoder.backward(params, cache_q, d_product * vp, "q", grads)
    encoder.backward(params, cache_p, d_product * vq, "p", grads)
    return loss, grads


def pretraining_loss(encoder: Encoder, params: Params, questions: Features, paths: Features,
                     rng: random.Random) -> tuple[float, Params]:
    """L_PT = L_QPA + L_QPM (Eq. 9); QPM's mismatches pair each question with another
    row's path."""
    loss_a, grads = qpa_loss(encoder, params, questions, paths)
    n = len(questions)
    if n < 2:
        return loss_a, grads
    shift = [(i + 1 + rng.randrange(n - 1)) % n for i in range(n)]
    labels = np.concatenate([np.ones(n), np.zeros(n)])
    loss_m, grads_m = qpm_loss(encoder, params, list(questions) + list(questions),
                               list(paths) + [paths[i] for i in shift], labels)
    return loss_a + loss_m, {name: grads[name] + grads_m[name] for name in grads}


def finetuning_loss(encoder: Encoder, params: Params, questions: Features,
                    pools: Sequence[Features], best: Sequence[int]) -> tuple[float, Params]:
    """L_FT (Eq. 10): each question against its pool (the RL-Agent's candidates and paths
    of other questions), the best-scoring path the positive; and symmetrically each best
    path against the batch's questions (which needs two questions or more to teach
    anything: with one, its only candidate question is its own)."""
    grads = zeros_like(params)
    vq, cache_q = encoder.forward(params, questions, "q")
    d_vq = np.zeros_like(vq)
    total = 0.0
    positives = []
    for i, (pool, positive) in enumerate(zip(pools, best)):
        vp, cache_p = encoder.forward(params, pool, "p")
        logits = (vp @ vq[i])[None, :] / TEMPERATURE
        loss, d_logits = _cross_entropy(logits, np.array([positive]))
        total += loss / (2 * len(best))
        d = d_logits[0] / TEMPERATURE / (2 * len(best))
        d_vq[i] += d @ vp
        encoder.backward(params, cache_p, np.outer(d, vq[i]), "p", grads)
        positives.append(pool[positive])
    vp_best, cache_best = encoder.forward(params, positives, "p")
    logits = vp_best @ vq.T / TEMPERATURE
    loss_pq, d_pq = _cross_entropy(logits, np.arange(len(best)))
    total += loss_pq / 2
    d_pq = d_pq / TEMPERATURE / 2
    d_vq += d_pq.T @ vp_best
    encoder.backward(params, cache_best, d_pq @ vq, "p", grads)
    encoder.backward(params, cache_q, d_vq, "q", grads)
    return total, grads
