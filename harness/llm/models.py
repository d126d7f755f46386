"""What an endpoint serves, from its `/v1/models` (no completion is asked): the model names,
and each model's context window where the server reports one (vLLM and SGLang:
`max_model_len`; some proxies: `context_length` or `context_window`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional

from lifebench.api.errors import UserError
from lifebench.api.untrusted import parse_json
from lifebench.config.run import LLMConfig
from lifebench.llm.transport import TransportFailure, TransportTimeout, endpoint

MAX_LIST_BYTES = 4 << 20
_WINDOW_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")


@dataclass
class ServedModels:
    reachable: bool
    names: list[str] = field(default_factory=list)
    windows: dict[str, int] = field(default_factory=dict)
    problem: str = ""  # why the list could not be read


@dataclass(frozen=True)
class ModelCheck:
    """The start-of-run check of one model at one endpoint."""

    served: Optional[bool]  # None: not known (no list)
    window: Optional[int]  # the context window the prompts are fitted to
    window_source: str  # "--context-window", "/v1/models", or "" when none is known
    line: str  # what the run prints ("" when there is nothing to say)

    def manifest(self, model: str) -> dict[str, Any]:
        return {"model": model, "served": self.served, "context_window": self.window,
                "context_window_source": self.window_source or None}


def _window(entry: dict[str, Any]) -> Optional[int]:
    for name in _WINDOW_FIELDS:
        value = entry.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def list_models(config: LLMConfig, timeout_s: float = 10.0) -> ServedModels:
    """GET {base_url}/models through the bounded transport: one deadline of `timeout_s`
    (at most --llm-timeout) from connect to last byte, and MAX_LIST_BYTES. A refused key is
    a UserError (as it would be for every call)."""
    key = os.environ.get(config.api_key_env) or ""
    deadline = min(timeout_s, config.timeout_s)
    try:
        server = endpoint(config.base_url, deadline, MAX_LIST_BYTES)
    except ValueError:
        raise UserError(f"--base-url {config.base_url!r} is not an http(s) URL; give one "
                        f"like http://localhost:8000/v1") from None
    try:
        answer = server.get("/models", {"Accept": "application/json",
                                        "Authorization": f"Bearer {key or 'no-key'}"})
    except TransportTimeout:
        return ServedModels(False, problem=f"no complete answer within {deadline:g} s")
    except TransportFailure as exc:
        return ServedModels(False, problem=f"no usable answer ({exc})")
    if answer.status in (401, 403):
        given = "the API key in" if key else "no API key: set"
        raise UserError(f"the endpoint {config.base_url} refused the request ({answer.status}) "
                        f"with {given} {config.api_key_env}; set the right key there (or "
                        f"name another variable with --api-key-env)")
    if answer.status != 200:
        return ServedModels(True, problem=f"GET /models answered {answer.status}")
    body = answer.body
    try:
        data = parse_json(body)
        entries = [e for e in data.get("data") if isinstance(e, dict)]
    except (ValueError, AttributeError, TypeError):
        return ServedModels(True, problem="its model list is not JSON of the OpenAI shape")
    names = [str(e.get("id")) for e in entries if e.get("id")]
    windows = {str(e["id"]): w for e in entries if e.get("id") and (w := _window(e))}
    return ServedModels(True, names, windows)


def check_model(model: str, config: LLMConfig) -> ModelCheck:
    """Whether `model` is served and its window; a UserError when the endpoint lists its
    models and this is not one of them."""
    served = list_models(config)
    where = f"{model} at {config.base_url}"
    if served.names and model not in served.names:
        shown = ", ".join(served.names[:10]) + (" ..." if len(served.names) > 10 else "")
        raise UserError(f"the endpoint {config.base_url} does not serve model {model!r}; it "
                        f"serves: {shown}; give --model with one of those")
    if config.context_window:
        window, source = config.context_window, "--context-window"
    else:
        window = served.windows.get(model)
        source = "/v1/models" if window else ""
    if not served.reachable:
        return ModelCheck(None, window, source, f"note: {config.base_url}/models gave "
                          f"{served.problem}: the model and its context window are not checked")
    if not served.names and not config.context_window:
        return ModelCheck(None, None, "", "")  # it lists nothing: nothing to say
    known = served.names and model in served.names
    if not config.trim:
        fit = "prompts are sent as built (--no-trim)"
    elif window:
        fit = "prompts are fitted to it"
    else:
        fit = "prompts are sent as built (give --context-window N to fit them to the window)"
    size = f"context window {window:,} tokens ({source})" if window else "context window not reported"
    return ModelCheck(True if known else None, window, source,
                      f"lifebench: {where}: {'served, ' if known else ''}{size}; {fit}")
