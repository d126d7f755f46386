"""The small networks InstructRAG trains, in numpy: parameters as named arrays, gradients
written by hand (checked against finite differences in the tests) and Adam. CPU-sized on
purpose: the RL-Agent has 3 inputs and 20 hidden units, the ML-Agent's heads sit on frozen
sentence vectors, so no deep-learning framework is needed."""

from __future__ import annotations

import base64
import random
from typing import Any

import numpy as np

Params = dict[str, np.ndarray]


def gaussian(rng: random.Random, shape: tuple[int, ...], scale: float) -> np.ndarray:
    """Normal draws from a seeded `random.Random` (the stream's), not numpy's global RNG."""
    generator = np.random.default_rng(rng.getrandbits(64))
    return generator.normal(0.0, scale, size=shape)


def copy_params(params: Params) -> Params:
    return {name: value.copy() for name, value in params.items()}


def add_scaled(params: Params, grads: Params, scale: float) -> Params:
    """params + scale * grads, as new arrays (an inner-loop step: scale = -alpha)."""
    return {name: params[name] + scale * grads[name] for name in params}


def zeros_like(params: Params) -> Params:
    return {name: np.zeros_like(value) for name, value in params.items()}


# A stored array: its shape and its float64 bytes in base64 (exact, and 2.5x smaller than
# the numbers as JSON text); older states stored nested lists, which still load.
MAX_STORED_VALUES = 1 << 24


def params_to_json(params: Params) -> dict[str, Any]:
    return {name: {"shape": list(value.shape),
                   "float64": base64.b64encode(np.ascontiguousarray(value, dtype="<f8").tobytes()).decode("ascii")}
            for name, value in params.items()}


def params_from_json(data: dict[str, Any]) -> Params:
    """Stored parameters, checked: a file from outside the process (a prepared artifact) is
    bounded and must hold finite numbers of the stated shape."""
    if not isinstance(data, dict):
        raise ValueError("stored parameters are not a mapping")
    out = {}
    for name, value in data.items():
        if isinstance(value, dict):
            shape = tuple(int(n) for n in value["shape"])
            if any(n < 0 for n in shape) or int(np.prod(shape)) > MAX_STORED_VALUES:
                raise ValueError(f"stored parameter {name!r} has a bad shape {shape}")
            raw = base64.b64decode(value["float64"], validate=True)
            if len(raw) != 8 * int(np.prod(shape)):
                raise ValueError(f"stored parameter {name!r} does not hold {shape} numbers")
            array = np.frombuffer(raw, dtype="<f8").astype(np.float64).reshape(shape)
        else:
            array = np.asarray(value, dtype=np.float64)
            if array.size > MAX_STORED_VALUES:
                raise ValueError(f"stored parameter {name!r} is too large")
        if not np.isfinite(array).all():
            raise ValueError(f"stored parameter {name!r} holds non-finite numbers")
        out[str(name)] = array
    return out


def softmax(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    shifted = logits - logits.max(axis=axis, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=axis, keepdims=True)


def log_softmax(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    shifted = logits - logits.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


class Adam:
    """Adam (Kingma & Ba) over a dict of parameters, updated in place."""

    def __init__(self, lr: float, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8) -> None:
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.t = 0
        self.m: Params = {}
        self.v: Params = {}

    def step(self, params: Params, grads: Params) -> None:
        self.t += 1
        for name, grad in grads.items():
            m = self.m.setdefault(name, np.zeros_like(grad))
            v = self.v.setdefault(name, np.zeros_like(grad))
            m *= self.beta1
            m += (1 - self.beta1) * grad
            v *= self.beta2
            v += (1 - self.beta2) * grad * grad
            m_hat = m / (1 - self.beta1 ** self.t)
            v_hat = v / (1 - self.beta2 ** self.t)
            params[name] -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)

    def to_json(self) -> dict[str, Any]:
        return {"t": self.t, "m": params_to_json(self.m), "v": params_to_json(self.v)}

    def load_json(self, data: dict[str, Any]) -> None:
        self.t = int(data["t"])
        self.m, self.v = params_from_json(data["m"]), params_from_json(data["v"])
