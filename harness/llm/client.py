"""One client for every OpenAI-compatible endpoint (vLLM, OpenAI, DeepSeek, Ollama,
llama.cpp): the chat completions protocol over pooled keep-alive HTTP
(`lifebench.llm.transport`).

Each call names its role (actor, teacher, reflection, ...) for the accounting and brings
its sampling settings (`RoleParams`: the method's own, so one client serves a stream's
every user without being reconfigured). Plain text or JSON tool calls. Retries with exponential backoff and full jitter on 429, 5xx, timeouts,
dropped connections and malformed bodies; a per-call timeout; a limit on requests in flight
per endpoint (shared by every client of the process); tokens in and out per call and per
role; an optional price table. The API key is read from an environment variable and is
never written anywhere: not in errors, caches, records or logs.
"""

from __future__ import annotations

import json
import os
import random
import threading
from typing import Any, Optional, Sequence

from lifebench.api import cooperative
from lifebench.api.errors import LLMError, UserError
from lifebench.api.llm import LLMReply, RoleParams, ToolCall
from lifebench.api.records import CallTokens, RoleUsage
from lifebench.api.untrusted import parse_json
from lifebench.config.run import LLMConfig
from lifebench.llm.cache import ResponseCache, body_and_key
from lifebench.llm.completion import completion_problem
from lifebench.llm.transport import TransportFailure, TransportTimeout, endpoint

_NO_KEY = "no-key"  # local servers accept any key; some proxies want the header anyway
_COMPLETIONS = "/chat/completions"


_slots_lock = threading.Lock()
_slots: dict[tuple[str, int], threading.BoundedSemaphore] = {}


def _endpoint_slots(base_url: str, limit: int, timeout_s: float) -> Any:
    """The limit on requests in flight to an endpoint: per process, or for the whole
    cluster under `--executor ray`."""
    from lifebench.llm.ray_slots import ClusterSlots, under_ray

    if under_ray():
        # a lease outlives any request with its retries' waits, then expires on its own
        return ClusterSlots(base_url, limit, lease_s=2 * timeout_s + 60)
    with _slots_lock:
        # per limit too: a later run in the same process asking for more gets it
        if (base_url, limit) not in _slots:
            _slots[(base_url, limit)] = threading.BoundedSemaphore(max(1, limit))
        return _slots[(base_url, limit)]


class LLMClient:
    """A `lifebench.api.ChatModel` for one model on one endpoint (`LLMConfig`), with its
    accounting; `prices` are USD per million tokens, (input, output), by model.

    `seed` is the stream's seed: it is sent with every request (unless a role's params name
    their own seed, or the config says the endpoint takes none) and is always part of the
    cache key, so that seeds are independent samples and a re-run of a seed replays."""

    def __init__(self, model: str, config: LLMConfig, cache: Optional[ResponseCache] = None,
                 prices: Optional[dict[str, tuple[float, float]]] = None,
                 seed: Optional[int] = None) -> None:
        if not config.base_url:
            raise UserError("an LLM client needs a base URL: give --base-url")
        self.model = model
        self.config = config
        self.cache = cache
        self.prices = prices or {}
        self.seed = seed
        self._key = os.environ.get(config.api_key_env) or ""
        try:
            self._endpoint = endpoint(config.base_url, config.timeout_s,
                                      int(config.max_response_mb * 2**20))
        except ValueError:
            raise UserError(f"--base-url {config.base_url!r} is not an http(s) URL; give one "
                            f"like http://localhost:8000/v1") from None
        self._headers = {"Content-Type": "application/json", "Accept": "application/json",
                         "Authorization": f"Bearer {self._key or _NO_KEY}"}
        self._slots = _endpoint_slots(config.base_url, config.concurrency, config.timeout_s)
        self._cooperative_slots = isinstance(self._slots, threading.BoundedSemaphore)
        self._jitter = random.Random()
        self._lock = threading.Lock()
        self.usage: dict[str, RoleUsage] = {}
        self.calls: list[CallTokens] = []  # one entry per call, in order
        self._tags: dict[str, str] = {}

    def tag(self, **values: Optional[str]) -> None:
        """What the coming calls are for (method, benchmark, split, instance, step), sent as
        `X-Lifebench-<Name>` headers beside the role: server logs can tell a grid's calls
        apart, and the scripted model (`lifebench.api.scripted`) answers by them. Headers
        never enter a body or a cache key. None removes a tag."""
        for name, value in values.items():
            header = "X-Lifebench-" + name.capitalize()
            if value is None:
                self._tags.pop(header, None)
            else:
                self._tags[header] = _header_text(str(value))

    # -- public
    def chat(self, messages: Sequence[dict[str, Any]], role: str = "default",
             tools: Optional[Sequence[dict[str, Any]]] = None, sample: int = 0,
             params: Optional[RoleParams] = None) -> LLMReply:
        params = params or RoleParams()
        request: dict[str, Any] = {"model": self.model, "messages": list(messages),
                                   "temperature": params.temperature}
        if params.max_tokens is not None:
            request["max_tokens"] = params.max_tokens
        if params.top_p is not None:
            request["top_p"] = params.top_p
        seed = params.seed if params.seed is not None else self.seed
        if seed is not None and self.config.send_seed:
            request["seed"] = seed
        if tools:
            request["tools"] = list(tools)
        body, key = body_and_key(request, self.config.base_url, sample, self.seed)
        response = self.cache.get(key) if self.cache else None
        cached = response is not None
        if response is None:
            if self.cache and self.cache.mode == "replay":
                # deterministic: no retry would find it
                raise UserError(f"cache miss in replay mode: {self.cache.path} has no answer "
                                f"for a request of model {self.model}, role {role}; run with "
                                f"--cache rw to fill the cache")
            headers = {**self._headers, **self._tags, "X-Lifebench-Role": _header_text(role)}
            response, text = self._call_with_retries(body, headers)
            if self.cache:
                self.cache.put(key, self.model, response, text)
        reply = _reply_of(response, cached)
        with self._lock:
            usage = self.usage.setdefault(role, RoleUsage())
            usage.calls += 1
            usage.tokens_in += reply.tokens_in
            usage.tokens_out += reply.tokens_out
            usage.cached += int(cached)
            self.calls.append(CallTokens(role, reply.tokens_in, reply.tokens_out, cached))
        return reply

    def take_usage(self) -> dict[str, RoleUsage]:
        """The usage since the last call, by role (for one episode's record)."""
        with self._lock:
            usage, self.usage = self.usage, {}
        return usage

    def take_calls(self) -> list[CallTokens]:
        """Every call since the last take, in order."""
        with self._lock:
            calls, self.calls = self.calls, []
        return calls

    def cost(self, usage: dict[str, RoleUsage]) -> Optional[float]:
        """USD for `usage`, rounded to a millionth; None without a price for the model."""
        price = self.prices.get(self.model)
        if price is None:
            return None
        tokens_in = sum(u.tokens_in for u in usage.values())
        tokens_out = sum(u.tokens_out for u in usage.values())
        return round((tokens_in * price[0] + tokens_out * price[1]) / 1e6, 6)

    # -- the endpoint
    def _call_with_retries(self, body: bytes, headers: dict[str, str]) -> tuple[dict[str, Any], str]:
        """The completion, parsed and as the server sent it."""
        attempts = self.config.max_retries + 1
        last = ""
        for attempt in range(attempts):
            try:
                if self._cooperative_slots and cooperative.active():
                    answer = self._post_when_a_slot_frees(body, headers)
                else:
                    with self._slots:
                        answer = self._endpoint.post(_COMPLETIONS, body, headers)
            except TransportTimeout:
                last = f"timed out after {self.config.timeout_s:g} s"
            except TransportFailure:
                last = "connection failed or dropped"
            else:
                status = answer.status
                if status in (401, 403):
                    given = "the API key in" if self._key else "no API key: set"
                    raise UserError(f"the endpoint {self.config.base_url} refused the request "
                                    f"({status}) with {given} {self.config.api_key_env}; set "
                                    f"the right key there (or name another variable with "
                                    f"--api-key-env)")
                if status in (400, 404, 422):
                    raise LLMError(self._redact(f"the endpoint rejected the request ({status}): "
                                                f"{_error_message(answer.body)}"))
                if 200 <= status < 300:
                    try:
                        text = answer.body.decode()
                        data = parse_json(text, max_chars=len(text))  # (its size: the transport's)
                        problem = completion_problem(data)
                        if problem:
                            raise ValueError(problem)
                        return data, text
                    except (ValueError, RecursionError) as exc:  # not a completion's JSON
                        last = f"malformed response ({type(exc).__name__})"
                else:  # 429, 5xx and other statuses
                    last = f"HTTP {status}"
            if attempt + 1 < attempts:
                cap = min(self.config.backoff_max_s, self.config.backoff_s * 2 ** attempt)
                cooperative.sleep(self._jitter.uniform(0, cap))
        raise LLMError(self._redact(f"{self.config.base_url} failed {attempts} times, last: "
                                    f"{last}"))

    def _post_when_a_slot_frees(self, body: bytes, headers: dict[str, str]) -> Any:
        """A greenlet stream waits for a place among the endpoint's requests in flight
        through the hub: a blocking wait would stop the thread whose streams free one."""
        while not self._slots.acquire(blocking=False):
            cooperative.sleep(0.002)
        try:
            return self._endpoint.post(_COMPLETIONS, body, headers)
        finally:
            self._slots.release()

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text


def _header_text(value: str) -> str:
    """A header value: one line of printable ASCII, bounded."""
    return "".join(c for c in value[:200] if " " <= c <= "~")


def _error_message(body: bytes) -> str:
    """The first line of an OpenAI-style error body's message (at most 200 characters)."""
    try:
        error = parse_json(body).get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = None
    text = str(message or body.decode("utf-8", "replace") or "no message").strip()
    return (text.splitlines() or ["no message"])[0][:200]


def _reply_of(response: dict[str, Any], cached: bool) -> LLMReply:
    message = response["choices"][0].get("message") or {}
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            arguments = parse_json(function.get("arguments") or "{}")
        except ValueError:  # not JSON, or over the bounds (lifebench.api.untrusted)
            arguments = {"_unparsed": function.get("arguments")}
        calls.append(ToolCall(function.get("name", ""), arguments if isinstance(arguments, dict)
                              else {"_value": arguments}))
    usage = response.get("usage") or {}
    return LLMReply(text=message.get("content") or "", tool_calls=tuple(calls),
                    tokens_in=int(usage.get("prompt_tokens") or 0),
                    tokens_out=int(usage.get("completion_tokens") or 0), cached=cached)
