"""The RL-Agent's policy network (Section 4.3, Implementation Details): a state of 3 cosine
similarities -> 20 tanh units -> 2 outputs (exclude, include), softmax. One loss serves both
training phases: the warm start's binary cross-entropy is the policy's log-likelihood of the
labelled action (Eq. 4), REINFORCE's loss is the log-likelihood weighted by the return (Eq. 5)."""

from __future__ import annotations

import random

import numpy as np

from lifebench.methods.instructrag.nn import Params, gaussian, log_softmax, softmax

STATE_SIZE = 3
HIDDEN = 20
EXCLUDE, INCLUDE = 0, 1


def init_policy(rng: random.Random) -> Params:
    return {"w1": gaussian(rng, (STATE_SIZE, HIDDEN), 1.0 / np.sqrt(STATE_SIZE)),
            "b1": np.zeros(HIDDEN),
            "w2": gaussian(rng, (HIDDEN, 2), 1.0 / np.sqrt(HIDDEN)),
            "b2": np.zeros(2)}


def action_probs(params: Params, states: np.ndarray) -> np.ndarray:
    """(n, 2) probabilities of exclude/include for (n, 3) states."""
    hidden = np.tanh(np.atleast_2d(states) @ params["w1"] + params["b1"])
    return softmax(hidden @ params["w2"] + params["b2"])


def weighted_nll(params: Params, states: np.ndarray, actions: np.ndarray,
                 weights: np.ndarray) -> tuple[float, Params]:
    """mean_i -w_i log pi(a_i | s_i) and its gradient. Warm start: w = 1, a = the label;
    policy gradient: w = the return G_t of the decision."""
    states = np.atleast_2d(np.asarray(states, dtype=np.float64))
    actions = np.asarray(actions, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    n = len(actions)
    hidden = np.tanh(states @ params["w1"] + params["b1"])
    logits = hidden @ params["w2"] + params["b2"]
    log_probs = log_softmax(logits)
    loss = float(-(weights * log_probs[np.arange(n), actions]).sum() / n)
    d_logits = softmax(logits)
    d_logits[np.arange(n), actions] -= 1.0
    d_logits *= (weights / n)[:, None]
    d_hidden = (d_logits @ params["w2"].T) * (1.0 - hidden ** 2)
    grads = {"w2": hidden.T @ d_logits, "b2": d_logits.sum(axis=0),
             "w1": states.T @ d_hidden, "b1": d_hidden.sum(axis=0)}
    return loss, grads


def discounted_returns(decisions: int, reward: float, discount: float) -> np.ndarray:
    """The return of each of `decisions` steps when the only reward comes at the end."""
    return np.array([reward * discount ** (decisions - 1 - t) for t in range(decisions)])
