"""What an endpoint serves, before a run (no completion is asked): the model names from its
`/v1/models`, and the model's context window where the server reports one (vLLM and SGLang:
`max_model_len` there; some proxies: `context_length` or `context_window`; llama.cpp's
`llama-server` and lifebench's embedded server: `GET /props`,
`default_generation_settings.n_ctx`); where prompts are fitted to that window, how the server
counts tokens (`lifebench.llm.server_tokens`: its tokenizer endpoint and its chat template's
framing)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional

from lifebench.api.errors import UserError
from lifebench.api.untrusted import parse_json
from lifebench.config.run import LLMConfig
from lifebench.llm.server_tokens import Framing, ServerTokenizer, learn_framing, server_root
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
    window_source: str  # "--context-window", "/v1/models", "/props", or "" when none is known
    line: str  # what the run prints ("" when there is nothing to say)
    token_counter: str = ""  # the server's tokenizer endpoint ("": none, or not asked)
    framing: Optional[Framing] = None  # the template's, learned from the server

    def manifest(self, model: str) -> dict[str, Any]:
        found: dict[str, Any] = {"model": model, "served": self.served,
                                 "context_window": self.window,
                                 "context_window_source": self.window_source or None}
        if self.token_counter:
            found["token_counter"] = self.token_counter
        if self.framing is not None:
            found["prompt_framing"] = {**self.framing.manifest(), "source": "/apply-template"}
        return found


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


def props_window(config: LLMConfig, timeout_s: float = 10.0) -> Optional[int]:
    """The context window at GET {root}/props (llama-server's `default_generation_settings
    .n_ctx`, a slot's window), through the bounded transport; None where there is none."""
    key = os.environ.get(config.api_key_env) or ""
    try:
        server = endpoint(server_root(config.base_url), min(timeout_s, config.timeout_s), MAX_LIST_BYTES)
        answer = server.get("/props", {"Accept": "application/json",
                                       "Authorization": f"Bearer {key or 'no-key'}"})
        settings = parse_json(answer.body).get("default_generation_settings") \
            if answer.status == 200 else None
    except (ValueError, AttributeError, TransportFailure, TransportTimeout):
        return None
    window = settings.get("n_ctx") if isinstance(settings, dict) else None
    return window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None


def server_counting(model: str, config: LLMConfig) -> tuple[str, Optional[Framing]]:
    """How the server counts a prompt's tokens: its tokenizer endpoint ("" for none) and its
    template's framing (None where it does not render its template)."""
    tokenizer = ServerTokenizer(config.base_url, model, config.timeout_s,
                                os.environ.get(config.api_key_env) or "")
    if tokenizer("Alpha.") is None:
        return "", None
    return tokenizer.source, learn_framing(tokenizer)


def served_name(model: str, config: LLMConfig) -> tuple[str, str]:
    """The name `model` is served under, and a line saying so where it differs: Ollama lists
    a model as `name:latest`, and a bare `name` means that one alone. Any other name is
    itself (`check_model` refuses a name not served)."""
    if ":" in model:
        return model, ""
    served = list_models(config)
    tagged = f"{model}:latest"
    if served.names and model not in served.names and tagged in served.names:
        return tagged, (f"note: {config.base_url} serves {model!r} as {tagged!r} (Ollama's "
                        f"implicit tag): requests, records and the manifest name {tagged}")
    return model, ""


def check_model(model: str, config: LLMConfig) -> ModelCheck:
    """Whether `model` is served, its window and, where prompts are fitted to it, how the
    server counts them; a UserError when the endpoint lists its models and this is not one
    of them."""
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
        if not window and served.reachable:
            window = props_window(config)
            source = "/props" if window else ""
    if not served.reachable:
        return ModelCheck(None, window, source, f"note: {config.base_url}/models gave "
                          f"{served.problem}: the model and its context window are not checked")
    if not served.names and not window:
        return ModelCheck(None, None, "", "")  # it lists nothing: nothing to say
    known = served.names and model in served.names
    if not config.trim:
        fit = "prompts are sent as built (--no-trim)"
    elif window:
        fit = "prompts are fitted to it"
    else:
        fit = "prompts are sent as built (give --context-window N to fit them to the window)"
    size = f"context window {window:,} tokens ({source})" if window else "context window not reported"
    counter, framing = server_counting(model, config) if window and config.trim else ("", None)
    counted = (f"; tokens counted by its {counter}" if counter else
               "; tokens estimated (no tokenizer endpoint)" if window and config.trim else "")
    return ModelCheck(True if known else None, window, source,
                      f"lifebench: {where}: {'served, ' if known else ''}{size}; {fit}{counted}",
                      counter, framing)
