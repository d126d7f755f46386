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

import collections
import json
import math
import os
import random
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from lifebench.api import cooperative
from lifebench.api.errors import ContextOverflow, EndpointUnusable, LLMError, ReplayMiss, UserError
from lifebench.api.llm import LLMReply, RoleParams, ToolCall
from lifebench.api.records import CallTokens, RoleUsage
from lifebench.api.untrusted import encodable, encodable_value, parse_json
from lifebench.config.run import LLMConfig
from lifebench.llm.answers import (COMPLETION, MALFORMED, REFUSED, Answer, RunAnswers, count_key,
                                   keep_count, kept_count)
from lifebench.llm.cache import ResponseCache, body_and_key
from lifebench.llm.completion import (completion_problem, in_band_error, read_message,
                                      strip_end_tokens)
from lifebench.llm.reasoning import closes_only, split_reasoning
from lifebench.llm.server_errors import (error_line, is_context_overflow, rejects_field,
                                         rejects_tools, wants_max_completion_tokens)
from lifebench.llm.text_tools import as_text_messages, read_tool_call
from lifebench.llm.transport import TransportFailure, TransportTimeout, endpoint, retry_after_s
from lifebench.llm.server_tokens import Framing, ServerTokenizer
from lifebench.llm.window import TokenCounter, fit_messages

_NO_KEY = "no-key"  # local servers accept any key; some proxies want the header anyway
MAX_RETRY_AFTER_S = 120.0  # a longer Retry-After ends the call (its retries exhausted)
_COMPLETIONS = "/chat/completions"


_slots_lock = threading.Lock()
_slots: dict[tuple[str, int], threading.BoundedSemaphore] = {}


@dataclass
class EndpointQuirks:
    """What an endpoint was found not to take, learned from its refusals once per process
    and kept for every later request to it (each said in one line when learned)."""

    send_seed: bool = True  # False: it refused `seed` (the same switch as --no-llm-seed)
    cap_field: str = "max_tokens"  # or max_completion_tokens, for endpoints refusing max_tokens
    # its chat template opens the reasoning tag (R1's): replies hold only the closing tag,
    # and one cut before it is all reasoning
    opens_reasoning: bool = False

    def adaptations(self) -> list[str]:
        """What is sent otherwise than asked, for the run's manifest."""
        return (([SEED_DROPPED] if not self.send_seed else [])
                + ([f"{self.cap_field}{CAP_RENAMED}"] if self.cap_field != "max_tokens" else []))


SEED_DROPPED = "seed not sent (the endpoint refused it)"
CAP_RENAMED = " sent for max_tokens"


def adapted_settings(adapted: Sequence[str]) -> dict[str, Any]:
    """The LLMConfig settings that send from the first request what a run's manifest says
    its endpoint was found to need (`llm_endpoint.adapted`): a replay sends (and keys)
    every request as the run did after it adapted."""
    settings: dict[str, Any] = {}
    for line in adapted:
        if line == SEED_DROPPED:
            settings["send_seed"] = False
        elif line.endswith(CAP_RENAMED) and line[:-len(CAP_RENAMED)] == "max_completion_tokens":
            settings["max_tokens_field"] = "max_completion_tokens"
    return settings


_quirks: dict[str, EndpointQuirks] = {}


def endpoint_quirks(base_url: str) -> EndpointQuirks:
    with _slots_lock:
        return _quirks.setdefault(base_url, EndpointQuirks())


_counters: dict[tuple[str, str, str, str, bool], TokenCounter] = {}

FIRST_CALLS = 5  # a run stops when each of its first calls to an endpoint is malformed alike
_first_calls: dict[str, list[Optional[str]]] = {}  # base URL -> each call's problem (None: read)


def _watch_first_calls(base_url: str, problem: Optional[str], arrived: str) -> None:
    """Raise EndpointUnusable when the process's first FIRST_CALLS calls to `base_url` all
    ended malformed the same way: the endpoint answers nothing lifebench can read."""
    with _slots_lock:
        seen = _first_calls.setdefault(base_url, [])
        if len(seen) >= FIRST_CALLS:
            return
        seen.append(problem)
        unusable = len(seen) == FIRST_CALLS and problem is not None and len(set(seen)) == 1
    if unusable:
        raise EndpointUnusable(
            f"the endpoint {base_url} answered each of the first {FIRST_CALLS} calls of this run "
            f"with a reply that cannot be read ({problem}); what arrived: {_excerpt(arrived)}; "
            f"check the server (or the proxy before it), then rerun to resume")


def _excerpt(text: str, limit: int = 200) -> str:
    """The start of what a server sent, on one printable line."""
    shown = text[:limit].encode("unicode_escape", "replace").decode("ascii", "replace")
    return shown + (" ..." if len(text) > limit else "")


class _Malformed(Exception):
    """A reply that cannot be read as a chat completion, after its one more try."""

    def __init__(self, problem: str, arrived: str) -> None:
        super().__init__(problem)
        self.problem, self.arrived = problem, arrived


def token_counter(base_url: str, model: str, timeout_s: float, key: str = "",
                  answers: Optional[str] = None, replayed: Optional[str] = None,
                  replay: bool = False) -> TokenCounter:
    """The process's token counter for `model` at `base_url`: the server's tokenizer
    (`lifebench.llm.server_tokens`: vLLM's, SGLang's, llama.cpp's) where it answers, else
    the estimate. With a run's `answers` file, a
    count kept there (in a replay: in the `replayed` run's) is used, and one the server
    gives is kept; in `replay` the server is never asked (a text without a kept count is
    estimated, as the run did without a tokenizer)."""
    where = (base_url, model, answers or "", replayed or "", replay)  # one per run
    with _slots_lock:
        if where not in _counters:
            server = None if replay else ServerTokenizer(base_url, model, timeout_s, key)
            _counters[where] = TokenCounter(_kept_counts(base_url, model, server, answers, replayed)
                                            if answers or replayed else server)
        return _counters[where]


def _kept_counts(base_url: str, model: str, server: Optional[Callable[[str], Optional[int]]],
                 answers: Optional[str], replayed: Optional[str]) -> Callable[[str], Optional[int]]:
    def tokenize(text: str) -> Optional[int]:
        key = count_key(base_url, model, text)
        kept = kept_count(answers, replayed, key)
        if kept is not None or server is None:
            return kept
        counted = server(text)
        if counted is not None:
            keep_count(answers, key, counted)
        return counted
    return tokenize


class _Adapted(Exception):
    """The endpoint refused a field that a switch of its quirks leaves out: ask again."""


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



def request_seed(role_seed: Optional[int], stream_seed: Optional[int]) -> Optional[int]:
    """The seed a request is sent with: the stream's; a role's own seed (a method's
    `llm_seed`) mixed with it, so the streams of several seeds stay independent samples."""
    if role_seed is None or stream_seed is None:
        return role_seed if role_seed is not None else stream_seed
    return (role_seed * 1_000_003 + stream_seed) % 2**31

class LLMClient:
    """A `lifebench.api.ChatModel` for one model on one endpoint (`LLMConfig`), with its
    accounting; `prices` are USD per million tokens, (input, output), by model.

    `seed` is the stream's seed: it is sent with every request (mixed with a role's own
    seed where its params name one: `request_seed`; none where the config says the endpoint
    takes none) and is always part of the cache key, so that seeds are independent samples
    and a re-run of a seed replays.

    `answers`: the results directory's (`lifebench.llm.answers`): every answer a call uses
    is kept there, under the scope the runner names (`scope`: the episode's). In a replay,
    a call finds there the answer the replayed run's call got; else in the cache; else
    (unless the cache replays) at the endpoint."""

    def __init__(self, model: str, config: LLMConfig, cache: Optional[ResponseCache] = None,
                 prices: Optional[dict[str, tuple[float, float]]] = None,
                 seed: Optional[int] = None, answers: Optional[RunAnswers] = None) -> None:
        if not config.base_url:
            raise UserError("an LLM client needs a base URL: give --base-url")
        self.model = model
        self.config = config
        self.cache = cache
        self.answers = answers
        self.replay = cache is not None and cache.mode == "replay"
        self._scope = ""
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
        self._reasoning: list[str] = []  # of the calls since the last take_reasoning
        self._notes = ReplyNotes()  # since the last take_notes
        self._faults: "collections.Counter[str]" = collections.Counter()  # since take_faults
        self._tags: dict[str, str] = {}
        self._quirks = endpoint_quirks(config.base_url)
        if config.max_tokens_field != "max_tokens":  # said by the user, or by a replayed run
            self._quirks.cap_field = config.max_tokens_field
        self._count = token_counter(config.base_url, model, config.timeout_s, self._key,
                                    config.answers_path, config.replay_answers, self.replay) \
            if config.context_window and config.trim else None
        self._framing = Framing.decoded(config.prompt_framing)

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

    def tag_state(self) -> dict[str, str]:
        """The tags as they are now (headers by name), for a client that continues them."""
        return dict(self._tags)

    def set_tag_state(self, tags: dict[str, str]) -> None:
        """Take the tags of `tag_state()` (of this client or another)."""
        self._tags = dict(tags)

    def apply_tag_changes(self, changes: dict[str, Optional[str]]) -> None:
        """Set (or, for None, remove) the tags of `changes`, by header."""
        for header, value in changes.items():
            if value is None:
                self._tags.pop(header, None)
            else:
                self._tags[header] = value

    def take_spend(self) -> "Spend":
        """Everything this client has counted since the last takes, taken (usage, calls,
        reply notes, reasoning, the answers not yet written), for another client to
        `absorb`."""
        with self._lock:
            spend = Spend(self.usage, self.calls, self._notes, self._reasoning,
                          self.answers.take_pending() if self.answers else [], dict(self._faults))
            self.usage, self.calls, self._notes, self._reasoning = {}, [], ReplyNotes(), []
            self._faults = collections.Counter()
        return spend

    @property
    def reads_cache(self) -> bool:
        """Whether a request answered before is answered from the cache (`--cache rw`)."""
        return self.cache is not None and self.cache.mode == "rw"

    @property
    def replays_answers(self) -> bool:
        """Whether answers come from a replayed run's answers file (`lifebench verify`),
        found by their occurrence in order."""
        return self.answers is not None and self.answers.replays

    def absorb(self, spend: "Spend") -> None:
        """Count `spend` (another client's calls: a preparation job's) as if its calls had
        been made here now, after the calls counted so far; its answers are kept after
        these."""
        if self.answers:
            self.answers.add_pending(spend.answers)
        with self._lock:
            for role, usage in spend.usage.items():
                mine = self.usage.setdefault(role, RoleUsage())
                mine.calls += usage.calls
                mine.tokens_in += usage.tokens_in
                mine.tokens_out += usage.tokens_out
                mine.cached += usage.cached
            self.calls.extend(spend.calls)
            self._notes.absorb(spend.notes)
            self._faults.update(spend.faults)
            self._reasoning.extend(spend.reasoning)

    # -- public
    def chat(self, messages: Sequence[dict[str, Any]], role: str = "default",
             tools: Optional[Sequence[dict[str, Any]]] = None, sample: int = 0,
             params: Optional[RoleParams] = None) -> LLMReply:
        params = params or RoleParams()
        text_tools = bool(tools) and self.config.tool_protocol == "text"
        cap = self.config.max_tokens if self.config.max_tokens is not None else params.max_tokens
        window = self.config.context_window if self.config.trim else None
        fitted = fit_messages(messages, window, cap, self._count, self._framing)
        messages = fitted.messages
        for _ in range(3):  # each quirk is learned once: seed, then the cap's field
            request = self._request(messages, tools, params, cap, text_tools)
            try:
                body, key = body_and_key(request, self.config.base_url, sample, self.seed)
            except UnicodeEncodeError:  # a lone surrogate from a reply or an observation
                messages, replaced = encodable_value(list(messages))
                self._note(replaced_characters=replaced)
                request = self._request(messages, tools, params, cap, text_tools)
                body, key = body_and_key(request, self.config.base_url, sample, self.seed)
            native = bool(tools) and not text_tools
            known = self._known(key)
            if known is not None:
                self._keep(key, known)
                response, cached = self._answered(known, native), True
                break
            if self.replay:
                # deterministic: no retry would find it
                raise ReplayMiss(f"cache miss in replay mode: {self._where()} has no answer for "
                                 f"{REQUEST_OF}{self.model}, role {role}{self._tagged()} (key "
                                 f"{key[:16]}){REPLAY_HINT}")
            headers = {**self._headers, **self._tags, "X-Lifebench-Role": _header_text(role)}
            try:
                response, text = self._call_with_retries(body, headers, native, key)
            except _Adapted:
                continue
            except _Malformed as malformed:
                # not the infrastructure's fault, and no retry mends it: the method gets an
                # unreadable (empty) reply, its own failed step
                self._note(malformed=1)
                _watch_first_calls(self.config.base_url, malformed.problem, malformed.arrived)
                self._keep(key, Answer(MALFORMED, malformed.problem))
                response, cached = None, False
                break
            _watch_first_calls(self.config.base_url, None, "")
            if self.cache:
                self.cache.put(key, self.model, response, text)
            self._keep(key, Answer(COMPLETION, text))
            cached = False
            break
        reply = _reply_of(response, cached, text_tools, self._quirks, self._note) \
            if response is not None else _UNREADABLE
        with self._lock:
            usage = self.usage.setdefault(role, RoleUsage())
            usage.calls += 1
            usage.tokens_in += reply.tokens_in
            usage.tokens_out += reply.tokens_out
            usage.cached += int(cached)
            self.calls.append(CallTokens(role, reply.tokens_in, reply.tokens_out, cached,
                                         reply.finish_reason, cap,
                                         _reasoning_tokens(response or {}, reply), fitted.left_out,
                                         key, fitted.tokens if window else None))
            if reply.reasoning:
                self._reasoning.append(reply.reasoning)
        return reply

    def scope(self, name: str) -> None:
        """Where the coming calls' answers are kept: the episode they are charged to."""
        self._scope = name

    @property
    def scope_name(self) -> str:
        return self._scope

    def _known(self, key: str) -> Optional[Answer]:
        """The answer a call has without asking: in a replay, the replayed run's; else the
        cache's."""
        known = self.answers.find(self._scope, key) if self.answers else None
        if known is None and self.cache:
            hit = self.cache.get(key)
            if hit is not None:
                known = Answer(COMPLETION, json.dumps(hit))
        return known

    def _keep(self, key: str, answer: Answer) -> None:
        if self.answers:
            self.answers.keep(self._scope, key, self.model, answer)

    def _answered(self, answer: Answer, native_tools: bool) -> Optional[dict[str, Any]]:
        """What a kept answer gives the call, as the endpoint's own did: the completion (None
        for one that cannot be read, the method's failed step), or the refusal raised."""
        if answer.kind == REFUSED:
            self._refused(answer.status, answer.text, native_tools)
        if answer.kind == COMPLETION:
            data, problem = _completion(answer.text)
            if problem is None:
                return data
        self._note(malformed=1)
        return None

    def _where(self) -> str:
        return str(self.cache.path) if self.cache else "the answers"

    def _tagged(self) -> str:
        """What the call was for, from its tags (method, benchmark, split, instance, step)."""
        tags = [f"{name[len('X-Lifebench-'):].lower()} {value}" for name, value in self._tags.items()]
        return f" ({', '.join(tags)})" if tags else ""

    def flush_answers(self) -> None:
        """Write the answers kept so far (before the record of the episode that used them)."""
        if self.answers:
            self.answers.flush()

    def drop_answers(self) -> None:
        """Forget the answers of a failed attempt (its retry asks again)."""
        if self.answers:
            self.answers.drop()

    def _request(self, messages: Sequence[dict[str, Any]], tools: Optional[Sequence[dict[str, Any]]],
                 params: RoleParams, cap: Optional[int], text_tools: bool) -> dict[str, Any]:
        request: dict[str, Any] = json.loads(self.config.extra_body) if self.config.extra_body else {}
        request.update(model=self.model, temperature=params.temperature,
                       messages=as_text_messages(messages, tools or ()) if text_tools else list(messages))
        if cap is not None:
            request[self._quirks.cap_field] = cap
        if params.top_p is not None:
            request["top_p"] = params.top_p
        seed = request_seed(params.seed, self.seed)
        if seed is not None and self.config.send_seed and self._quirks.send_seed:
            request["seed"] = seed
        if tools and not text_tools:
            request["tools"] = list(tools)
        return request

    def adaptations(self) -> list[str]:
        """What this endpoint was found not to take, and what is sent instead."""
        return self._quirks.adaptations()

    def take_reasoning(self) -> str:
        """The reasoning of the calls since the last take (for the trajectory's step)."""
        with self._lock:
            reasoning, self._reasoning = self._reasoning, []
        return "\n\n".join(reasoning)

    def take_usage(self) -> dict[str, RoleUsage]:
        """The usage since the last call, by role (for one episode's record)."""
        with self._lock:
            usage, self.usage = self.usage, {}
        return usage

    def pending_usage(self) -> dict[str, RoleUsage]:
        """The usage since the last `take_usage`, left in place."""
        with self._lock:
            return dict(self.usage)

    def take_notes(self) -> dict[str, Any]:
        """What the replies since the last take held that a record should say (refusals,
        several choices, malformed replies, characters replaced), as `extra.llm_replies`."""
        with self._lock:
            notes, self._notes = self._notes, ReplyNotes()
        return notes.as_extra()

    def _note(self, refusal: str = "", **counts: int) -> None:
        with self._lock:
            self._notes.add(refusal, **counts)

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
    def _call_with_retries(self, body: bytes, headers: dict[str, str],
                           native_tools: bool = False, key: str = "") -> tuple[dict[str, Any], str]:
        """The completion, parsed and as the server sent it. Each failed attempt is counted
        by its kind (`take_faults`); a Retry-After is honoured (never asked again sooner),
        up to MAX_RETRY_AFTER_S."""
        attempts = self.config.max_retries + 1
        last = ""
        malformed = 0
        attempt = 0
        while attempt < attempts:
            wait: Optional[float] = None
            try:
                if self._cooperative_slots and cooperative.active():
                    answer = self._post_when_a_slot_frees(body, headers)
                else:
                    with self._slots:
                        answer = self._endpoint.post(_COMPLETIONS, body, headers)
            except TransportTimeout:
                last = f"timed out after {self.config.timeout_s:g} s"
                self._fault("timeout")
            except TransportFailure as exc:
                last = f"connection failed or dropped ({exc})"
                self._fault("reset")
            else:
                status = answer.status
                if status in (401, 403):
                    given = "the API key in" if self._key else "no API key: set"
                    raise UserError(f"the endpoint {self.config.base_url} refused the request "
                                    f"({status}) with {given} {self.config.api_key_env}; set "
                                    f"the right key there (or name another variable with "
                                    f"--api-key-env)")
                if status in (400, 404, 413, 422):
                    self._refused(status, self._redact(error_line(answer.body)), native_tools, key)
                if 200 <= status < 300:
                    text = answer.body.decode("utf-8", "replace")
                    data, problem = _completion(text)
                    if problem is None:
                        return data, text
                    in_band = in_band_error(data)
                    if in_band is None:
                        if problem == "no choices":
                            self._fault("empty_choices")
                        malformed += 1
                        if malformed > 1:  # asked once more: the same answer is no outage
                            raise _Malformed(problem, text)
                        continue  # asked once more at once, not counted as a failed attempt
                    in_band = self._redact(in_band)
                    if is_context_overflow(in_band):  # LM Studio says so in a 200
                        self._refused(status, in_band, native_tools, key)
                    last = f"an error in a {status} answer: {in_band}"
                    self._fault("in_band_error")
                else:
                    said = error_line(answer.body)
                    if status >= 500 and is_context_overflow(said):  # llama.cpp's 500
                        self._refused(status, self._redact(said), native_tools, key)
                    last = f"HTTP {status}"  # 429, 5xx and other statuses
                    self._fault("rate_limited" if status == 429 else
                                "server_error" if status >= 500 else "other_status")
                    wait = retry_after_s(answer.headers)
                    if wait is not None and wait > MAX_RETRY_AFTER_S:
                        raise LLMError(self._redact(
                            f"{self.config.base_url} answered {status} and asked to be asked "
                            f"again in {wait:.0f} s (Retry-After); lifebench waits at most "
                            f"{MAX_RETRY_AFTER_S:g} s, so the call ends here"))
            attempt += 1
            if attempt < attempts:
                if wait is not None:  # the server's time, not sooner
                    self._fault("retry_after_waits")
                    cooperative.sleep(wait)
                else:
                    cap = min(self.config.backoff_max_s, self.config.backoff_s * 2 ** (attempt - 1))
                    cooperative.sleep(self._jitter.uniform(0, cap))
        raise LLMError(self._redact(f"{self.config.base_url} failed {attempts} times, last: "
                                    f"{last}"))

    def _fault(self, kind: str) -> None:
        with self._lock:
            self._faults[kind] += 1

    def take_faults(self) -> dict[str, int]:
        """What the endpoint did wrong since the last take, by kind (each attempt retried,
        or waited for): `extra.endpoint_faults`."""
        with self._lock:
            faults, self._faults = dict(self._faults), collections.Counter()
        return faults

    def _refused(self, status: int, message: str, native_tools: bool, key: str = "") -> None:
        """A refusal no retry would change: what it is about decides what follows (one over
        the context window is kept as the key's answer: it ends an episode)."""
        where = self.config.base_url
        if is_context_overflow(message):
            if key:  # it ends an episode: a replay meets it again
                self._keep(key, Answer(REFUSED, message, status))
            raise ContextOverflow(f"the prompt is over the model's context window ({status}): "
                                  f"{message}")
        quirks = self._quirks
        if quirks.send_seed and self.config.send_seed and rejects_field(message, "seed"):
            quirks.send_seed = False
            print(f"note: {where} does not take `seed`: sending none from now on (as "
                  f"--no-llm-seed would; the seed still keys the cache)", file=sys.stderr)
            raise _Adapted()
        if quirks.cap_field == "max_tokens" and wants_max_completion_tokens(message):
            quirks.cap_field = "max_completion_tokens"
            print(f"note: {where} takes max_completion_tokens, not max_tokens: sending that "
                  f"from now on", file=sys.stderr)
            raise _Adapted()
        if native_tools and rejects_tools(message):
            raise UserError(f"the endpoint {where} does not do tool calling ({message}); serve "
                            f"the model with it on (vLLM: --enable-auto-tool-choice "
                            f"--tool-call-parser NAME; see docs/serving.md), or give "
                            f"--llm-tool-protocol text to offer the tools in the prompt")
        raise LLMError(f"the endpoint rejected the request ({status}): {message}")

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


REQUEST_OF, REPLAY_HINT = "the request of model ", "; run with --cache rw to fill the cache"


def missed_request(message: str) -> str:
    """The request a replay miss's message names (what `lifebench verify` reports)."""
    start = message.find(REQUEST_OF)
    return message[start + len("the "):].replace(REPLAY_HINT, "") if start >= 0 else message


def _header_text(value: str) -> str:
    """A header value: one line of printable ASCII, bounded."""
    return "".join(c for c in value[:200] if " " <= c <= "~")


def _completion(text: str) -> tuple[Any, Optional[str]]:
    """A 2xx answer's body as a completion, or what makes it unreadable."""
    try:
        data = parse_json(text, max_chars=len(text))  # (its size: the transport's bound)
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON ({type(exc).__name__})"
    return data, completion_problem(data)


# What a method gets for a reply that could not be read: no text, no call (its own failed
# step); its call is accounted with finish reason "malformed".
_UNREADABLE = LLMReply(text="", tool_calls=(), tokens_in=0, tokens_out=0, cached=False,
                       finish_reason="malformed")


@dataclass
class Spend:
    """What a client's calls spent, taken from it (`LLMClient.take_spend`) to be counted
    by another (`absorb`): a preparation job's calls, counted to its stream."""

    usage: dict[str, RoleUsage]
    calls: list[CallTokens]
    notes: "ReplyNotes"
    reasoning: list[str]
    answers: list[Any]  # lifebench.llm.answers.Used, in the order the calls were made
    faults: dict[str, int] = field(default_factory=dict)  # the endpoint's, by kind


class ReplyNotes:
    """What replies held that a record should say."""

    REFUSALS_KEPT, REFUSAL_CHARS = 5, 500

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.refusals: list[str] = []

    def absorb(self, other: "ReplyNotes") -> None:
        """`other`'s notes after these, as if its replies had come after theirs."""
        for name, count in other.counts.items():
            self.counts[name] = self.counts.get(name, 0) + count
        self.refusals.extend(other.refusals[:self.REFUSALS_KEPT - len(self.refusals)])

    def add(self, refusal: str = "", **counts: int) -> None:
        for name, count in counts.items():
            if count:
                self.counts[name] = self.counts.get(name, 0) + count
        if refusal:
            self.counts["refusals"] = self.counts.get("refusals", 0) + 1
            if len(self.refusals) < self.REFUSALS_KEPT:
                self.refusals.append(refusal[:self.REFUSAL_CHARS])

    def as_extra(self) -> dict[str, Any]:
        return {**self.counts, **({"refusal_texts": self.refusals} if self.refusals else {})}


def _reply_of(response: dict[str, Any], cached: bool, text_tools: bool = False,
              quirks: Optional[EndpointQuirks] = None,
              note: Optional[Callable[..., None]] = None) -> LLMReply:
    note = note or (lambda *_, **__: None)
    read = read_message(response)
    message, replaced = encodable_value(read.message)  # "\ud800" in the JSON: replaced
    part_reasoning, more = encodable(read.part_reasoning)
    refusal, most = encodable(read.refusal)
    note(refusal=refusal, replaced_characters=replaced + more + most,
         several_choices=int(read.choices > 1))
    choice = response["choices"][0]
    finish = choice.get("finish_reason")
    content = message.get("content")
    if quirks is not None and isinstance(content, str) and closes_only(content):
        quirks.opens_reasoning = True
    reasoning, answer = split_reasoning(message, quirks is not None and quirks.opens_reasoning,
                                        cut=finish == "length")
    reasoning = "\n\n".join(r for r in (part_reasoning, reasoning) if r)
    answer, stripped = strip_end_tokens(answer)  # a server's stop list that missed them
    note(end_tokens_stripped=stripped)
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        if not isinstance(arguments, dict):  # a JSON string (an object: Ollama's own format)
            try:
                arguments = parse_json(arguments or "{}")
            except ValueError:  # not JSON, or over the bounds (lifebench.api.untrusted)
                arguments = {"_unparsed": function.get("arguments")}
        calls.append(ToolCall(function.get("name", ""), arguments if isinstance(arguments, dict)
                              else {"_value": arguments}))
    if text_tools and not calls:
        found = read_tool_call(answer)
        calls = [found] if found is not None else []
    usage = response.get("usage") or {}
    return LLMReply(text=answer, tool_calls=tuple(calls),
                    tokens_in=int(usage.get("prompt_tokens") or 0),
                    tokens_out=int(usage.get("completion_tokens") or 0), cached=cached,
                    reasoning=reasoning, finish_reason=finish if isinstance(finish, str) else "",
                    refusal=refusal)


def _reasoning_tokens(response: dict[str, Any], reply: LLMReply) -> int:
    """The completion tokens spent reasoning: the server's count where it gives one, else
    the reasoning's characters / 4 (the common estimate), within the completion's count."""
    details = (response.get("usage") or {}).get("completion_tokens_details")
    counted = details.get("reasoning_tokens") if isinstance(details, dict) else None
    if isinstance(counted, int) and not isinstance(counted, bool) and counted >= 0:
        return counted
    estimate = math.ceil(len(reply.reasoning) / 4)
    return min(estimate, reply.tokens_out) if reply.tokens_out else estimate
