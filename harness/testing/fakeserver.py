"""A local OpenAI-compatible server for tests and perf scripts: a real HTTP server.

    python -m lifebench.testing.fakeserver --port P [--script replies.json] [--policy plancraft]
        [--latency-ms 100] [--fault-rate 0.2 --faults timeout,429,500,malformed,drop] [--seed 0]
        [-- COMMAND ... {url} ...]   (serve while COMMAND runs, then stop)

It answers `POST /v1/chat/completions` (and `GET /v1/models`) with:
- scripted replies, in request order (`--script`: a JSON list; an item is a string, or
  `{"content": ...}`, or `{"tool_call": {"name": ..., "arguments": {...}}}`); when the
  list is used up, the last reply repeats. Without a script it echoes the last user
  message. A routed item `{"match": REGEX, "replies": [...]}` answers every request whose
  first or last message matches REGEX (its replies in order, the last repeating) and takes
  no place in the sequence: one script can play several roles of a method; the
  harness's start-up tool probe (one tool, `say`) is answered with a call of it and takes
  no place either, unless a routed item matches it;
- or, with `--policy plancraft`, the next correct Plancraft action: it reads the last
  Plancraft observation in the prompt ("Craft an item of type: ..." and the inventory by
  slot), runs the package's planner on it and answers with the plan's first action, as
  text, or as a tool call (`move`/`smelt` with `slot_from`, `slot_to`, `quantity`, or
  `impossible`) when the request offers tools;
- or, with `--policy scripted`, the scripted model (`lifebench.testing.scripted`): each
  method's well-formed reply for the role the request is for, acting as the benchmark's
  oracle did where the prompt shows the state (from the client's `X-Lifebench-*` headers);
- injected latency per request, and injected faults at a given rate, drawn from a seeded
  generator: `timeout` (answers after `--hang-s`), `429` and `500` (error bodies),
  `malformed` (a 200 whose body is not JSON), `drop` (the connection closes unanswered).
It also behaves as real servers do, when asked (`ServerConfig`, and the flags of the same
names): `--models` listed by `/v1/models`, with `--max-model-len` as vLLM's `max_model_len`,
and a context-length 400 for a request whose prompt and cap do not fit it; `--flavour`
shapes its error bodies as OpenAI's, vLLM's (top-level `message`, and a `/tokenize`),
Ollama's (a string) or llama.cpp's `llama-server`'s (whose window is not in `/v1/models` but
in `GET /props`, whose `POST /tokenize` takes `content` and answers the token ids, whose `POST
/apply-template` renders its chat template, ChatML with a default system prompt, and whose
prompt tokens are those of the rendered template); `--no-tool-calls` takes `tools` but
answers in text, as a server with no tool-call parser for its model does; `--reasoning` answers as a reasoning model (`<think>`
tags, a template-opened tag, or a `reasoning_content`/`reasoning` field) whose reply is cut
at the request's `max_tokens` (`finish_reason: "length"`); `--rejects` refuses the named
request fields (`seed`, `tools`, `max_tokens`) with a 400 in that server's words.
`GET /stats` returns the number of requests served, faults injected and the most requests
in flight at once, so tests can check, for example, that a replayed run made no request;
`GET /last` the last request answered and `GET /requests` the last 1000. With `api_key` set
(`--api-key`), a request carrying another key gets 401. The server never logs or returns
the API key it is sent.

It is one asyncio event loop (in a background thread for `serve()`, in the main thread from
the command line) with a small HTTP/1.1 parser (keep-alive, Content-Length and chunked
bodies, `Connection: close` and HTTP/1.0 answered then closed): a request's latency is a
timer, not a sleeping thread, so hundreds of requests wait at once for little CPU each. A
connection answers its requests in order, one at a time, as before.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import gzip
import hashlib
import json
import math
import random
import re
import socket
import sys
import threading
import time
import traceback
import urllib.request
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from typing import Any, Callable, Optional

FAULT_KINDS = ("timeout", "429", "500", "malformed", "drop", "in-band", "empty-choices")
FLAVOURS = ("openai", "vllm", "ollama", "llamacpp")
REASONING_STYLES = ("", "tags", "closing-tag", "reasoning_content", "reasoning")
REJECTABLE = ("seed", "tools", "max_tokens")
SHAPES = ("parts", "object-arguments", "choices", "gzip", "br", "end-tokens")


POLICIES = ("script", "plancraft", "scripted")
_TAG_PREFIX = "x-lifebench-"
_PLANCRAFT_TARGET = re.compile(r"Craft an item of type: (\S+)")
_PLANCRAFT_LITERAL = "Craft an item of type: "  # where a match of _PLANCRAFT_TARGET starts
_PLANCRAFT_ITEM = re.compile(r"^ - (\S+) \[?(\w+)\]? quantity (\d+)$", re.M)  # [I12] or I12
_PLANCRAFT_ACTION = re.compile(r"^(move|smelt): from (\[\w+\]) to (\[\w+\]) with quantity (\d+)$")


def _last_target(text: str) -> Optional["re.Match[str]"]:
    """The last match of _PLANCRAFT_TARGET in `text` (matches cannot overlap: the literal
    holds spaces, the item name none), found from the end."""
    end = len(text)
    while True:
        start = text.rfind(_PLANCRAFT_LITERAL, 0, end)
        if start < 0:
            return None
        match = _PLANCRAFT_TARGET.match(text, start)
        if match:
            return match
        end = start + len(_PLANCRAFT_LITERAL) - 1


def is_tool_probe(request: dict[str, Any]) -> bool:
    """The start-up tool probe (`lifebench.llm.doctor.probe_tools`): one tool, `say`."""
    tools = request.get("tools")
    return isinstance(tools, list) and len(tools) == 1 and isinstance(tools[0], dict) \
        and (tools[0].get("function") or {}).get("name") == "say"


def plancraft_next_action(prompt: str) -> Optional[str]:
    """The planner's next action for the last Plancraft observation in `prompt`."""
    match = _last_target(prompt)
    if match is None:
        return None
    # The observation's first paragraph: the target line and the inventory by slot.
    end = prompt.find("\n\n", match.start())
    first = prompt[match.start():end if end >= 0 else len(prompt)]
    return _planned_action(match.group(1), tuple(_PLANCRAFT_ITEM.findall(first)))


@functools.lru_cache(maxsize=1 << 16)
def _planned_action(target: str, items: tuple[tuple[str, str, str], ...]) -> str:
    """The plan's first action for a target and an inventory; memoized, as the planner
    is slow and the same observation recurs across streams and seeds."""
    from plancraft.environment.actions import convert_to_slot_index
    from plancraft.environment.planner import get_subplans

    inventory = {convert_to_slot_index(f"[{slot}]"): {"type": item, "quantity": int(qty)}
                 for item, slot, qty in items}
    try:
        subplans, _ = get_subplans({"inventory": inventory, "target": target})
    except Exception:  # the planner finds no way: the task is impossible
        subplans = []
    actions = [a for sub in subplans for a in sub]
    return actions[0] if actions else "impossible: the target cannot be crafted from this inventory"


def as_tool_call(action: str) -> dict[str, Any]:
    match = _PLANCRAFT_ACTION.match(action)
    if match:
        kind, source, target, quantity = match.groups()
        return {"name": kind, "arguments": {"slot_from": source, "slot_to": target,
                                            "quantity": int(quantity)}}
    name, _, rest = action.partition(":")
    return {"name": name.strip(), "arguments": {"reason": rest.strip()}}


# What str.split() splits on, among ASCII characters; a translation to " " (those) or "x".
_SPACE_TABLE = bytes(0x20 if chr(i).isspace() else 0x78 for i in range(256))
_WORD_COUNTS: dict[str, int] = {}  # of long texts: a system prompt, a history, recur


def _words(text: str) -> int:
    """len(text.split()), without making the words (a prompt is thousands of them)."""
    if len(text) < 256:
        return len(text.split())
    count = _WORD_COUNTS.get(text)
    if count is None:
        if text.isascii():
            marks = text.encode("ascii").translate(_SPACE_TABLE)
            count = marks.count(b" x") + (marks[:1] == b"x")
        else:
            count = len(text.split())
        if len(_WORD_COUNTS) >= 4096:
            _WORD_COUNTS.clear()
        _WORD_COUNTS[text] = count
    return count


def _chars_tokens(message: Any) -> int:
    """A message's tokens at 4 characters a token (its tool calls' JSON included), plus 4
    for the message's framing."""
    if not isinstance(message, dict):
        return 0
    chars = len(str(message.get("content") or ""))
    for call in message.get("tool_calls") or ():  # what the model wrote: the function
        if isinstance(call, dict):
            chars += len(json.dumps(call.get("function"), sort_keys=True))
    return 4 + -(-chars // 4)


@dataclass
class ServerConfig:
    script: list[Any] = field(default_factory=list)
    policy: str = "script"
    latency_s: float = 0.0
    fault_rate: float = 0.0
    faults: tuple[str, ...] = FAULT_KINDS
    hang_s: float = 30.0
    seed: int = 0
    # When set, a request whose bearer token is not this key gets 401, as a real endpoint.
    api_key: Optional[str] = None
    # -- what real servers do (lifebench.testing.fakeserver's `--serve-as`, `--reasoning`, ...)
    # The model names /v1/models lists; empty: any name is answered and none is listed.
    models: tuple[str, ...] = ()
    # Error bodies shaped as this server's: openai, vllm (top-level message), ollama (a
    # string), llamacpp (its exceed_context_size_error).
    flavour: str = "openai"
    # A reasoning model's reasoning (`reasoning_words` words of it) before each answer: in
    # `<think>` tags in the content ("tags"), after a template that opened the tag in the
    # prompt ("closing-tag"), or in its own field ("reasoning_content" or "reasoning").
    reasoning: str = ""
    reasoning_words: int = 40
    # The model's window: listed in /v1/models as max_model_len; a request whose prompt
    # and completion cap do not fit gets the flavour's context-length 400.
    max_model_len: Optional[int] = None
    # Request fields this server refuses with a 400 when present: seed, tools, max_tokens.
    rejects: tuple[str, ...] = ()
    # How replies are shaped, as some servers and proxies send them (SHAPES): content as a
    # list of parts ("parts"), tool-call arguments as a JSON object ("object-arguments"),
    # a second choice after the first ("choices"). A script item {"message": {...}} is sent
    # as that message, whatever its shape (a refusal, a lone surrogate, ...).
    shapes: tuple[str, ...] = ()
    # False: `tools` are taken but no call is ever parsed from the model's text (a tool call
    # in the script, the probe's included, is answered as its text)
    tool_calls: bool = True
    # A 429 fault carries Retry-After: "" none, "N" seconds, "date:N" an HTTP-date N seconds
    # ahead (with the Date header); a request that comes sooner is counted (`/stats` early)
    retry_after: str = ""
    # The context refusal to answer a prompt over `max_model_len` with, as that server words
    # it (a `server` of lifebench.llm.server_errors.CONTEXT_REFUSALS, its first status and
    # its example; a 200 carries it as an in-band error); "" the flavour's own
    overflow: str = ""
    # A barrier: chat answers are held until this many requests are in flight at once (then
    # every held one is answered), or `hold_s` after each arrived; `/stats` says whether it
    # opened. 0: none. For tests of overlap that hold however slowly the clients start.
    hold_until: int = 0
    hold_s: float = 30.0
    # One request at a time: the next chat request is not begun until the last is answered
    # (a server without concurrency; the overlap test's own test).
    serial: bool = False


class FakeOpenAI:
    """The server's state: the script position, the fault generator, counters."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._rng = random.Random(config.seed)
        self.position = 0
        self.routed: dict[int, int] = {}  # replies used by each routed script item
        self.requests = 0
        self.tokenized = 0  # texts counted at /tokenize
        self.not_before = 0.0  # the time a Retry-After told clients to wait for (time.time())
        self.early = 0  # requests that came before it
        self.faults_injected = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.barrier = "closed" if config.hold_until else "off"
        self.held: list[Any] = []  # connections whose answers wait for the barrier
        self.queued: "collections.deque[Callable[[], None]]" = collections.deque()  # serial
        self.last_request: dict[str, Any] = {}
        self.history: "collections.deque[dict[str, Any]]" = collections.deque(maxlen=1000)
        # each of those requests' X-Lifebench-* headers (tags), by lower-case name without prefix
        self.history_tags: "collections.deque[dict[str, str]]" = collections.deque(maxlen=1000)
        self._scripted: Any = None  # the scripted model, made at its first request

    def enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def next_fault(self) -> Optional[str]:
        with self._lock:
            self.requests += 1
            if time.time() < self.not_before:
                self.early += 1
            if self.config.fault_rate and self._rng.random() < self.config.fault_rate:
                self.faults_injected += 1
                return self._rng.choice(self.config.faults)
        return None

    def retry_after_header(self) -> bytes:
        """A 429's Retry-After, as configured; the time it names is remembered."""
        form, _, seconds = self.config.retry_after.rpartition(":")
        wait = float(seconds)
        with self._lock:
            self.not_before = max(self.not_before, time.time() + wait)
        if form == "date":  # whole seconds: the date is the first second not before it
            until = formatdate(math.ceil(self.not_before), usegmt=True)
            return f"Retry-After: {until}\r\n".encode("latin-1")
        return f"Retry-After: {math.ceil(wait)}\r\n".encode("latin-1")

    def next_reply(self, request: dict[str, Any], tags: Optional[dict[str, str]] = None) -> Any:
        self.last_request = request
        self.history.append(request)
        self.history_tags.append(dict(tags or {}))
        with self._lock:
            script = self.config.script
            if any(isinstance(item, dict) and "match" in item for item in script):
                messages = request.get("messages") or [{}]
                ends = "\n".join(str(m.get("content") or "") for m in (messages[0], messages[-1]))
                for index, item in enumerate(script):
                    if isinstance(item, dict) and "match" in item and re.search(item["match"], ends):
                        used = self.routed.get(index, 0)
                        self.routed[index] = used + 1
                        return item["replies"][min(used, len(item["replies"]) - 1)]
        if is_tool_probe(request):
            # the harness's own check, not the method's conversation: answered as a model
            # that calls tools would, taking no scripted reply
            return {"tool_call": {"name": "say", "arguments": {"word": "yes"}}}
        if self.config.policy == "scripted":
            if self._scripted is None:
                from lifebench.testing.scripted import ScriptedModel

                self._scripted = ScriptedModel()
            return self._scripted.reply(request, tags or {})
        if self.config.policy == "plancraft":
            # Only the messages from the last one holding an observation on: the prompt's
            # last observation is there (a match lies within one message).
            contents = [str(m.get("content") or "") for m in request.get("messages", [])]
            last = next((i for i in range(len(contents) - 1, -1, -1)
                         if _PLANCRAFT_LITERAL in contents[i] and _last_target(contents[i])), None)
            action = None if last is None else plancraft_next_action("\n".join(contents[last:]))
            action = action or "think: I see no Plancraft observation"
            return {"tool_call": as_tool_call(action)} if request.get("tools") else action
        with self._lock:
            sequence = [item for item in self.config.script
                        if not (isinstance(item, dict) and "match" in item)]
            if not sequence:
                users = [m for m in request.get("messages", []) if m.get("role") == "user"]
                return str(users[-1].get("content", "")) if users else ""
            reply = sequence[min(self.position, len(sequence) - 1)]
            self.position += 1
            return reply

    def _call_id(self, request: dict[str, Any]) -> str:
        """A tool call's id: the request count, or for the scripted model (deterministic
        whatever else the server answers meanwhile) a digest of the request's messages."""
        if self.config.policy != "scripted":
            return f"call_{self.requests}"
        digest = hashlib.sha256(json.dumps(request.get("messages"), sort_keys=True).encode())
        return f"call_{digest.hexdigest()[:12]}"

    def _tokens(self, text: str) -> int:
        """`text`'s tokens as this server counts them (words, or characters / 4 for the
        scripted model)."""
        return -(-len(text) // 4) if self.config.policy == "scripted" else _words(text)

    def prompt_tokens(self, request: dict[str, Any]) -> int:
        if self.config.policy == "scripted":  # tokens as characters / 4, the common estimate
            return sum(_chars_tokens(m) for m in request.get("messages", []))
        if self.config.flavour == "llamacpp":  # its template's tokens too
            return _words(render_chatml(request.get("messages") or []))
        return sum(_words(str(m.get("content") or "")) for m in request.get("messages", []))

    def refusal(self, request: dict[str, Any]) -> Optional[tuple[int, bytes]]:
        """The 400 a real server of this flavour would answer `request` with, if any: a
        refused field, or a prompt over the window."""
        config = self.config
        for name in config.rejects:
            if name in request:
                return 400, self._error_body(self._rejection(name), "invalid_request_error")
        window = config.max_model_len
        if window is not None:
            prompt = self.prompt_tokens(request)
            cap = request.get("max_tokens") or request.get("max_completion_tokens") or 0
            if prompt + cap > window:
                if config.overflow:
                    from lifebench.llm.server_errors import CONTEXT_REFUSALS

                    row = next(r for r in CONTEXT_REFUSALS if r.server == config.overflow)
                    return row.statuses[0], json.dumps({"error": {"message": row.example}}).encode()
                return 400, self._error_body(self._overflow(prompt, cap, window),
                                             "exceed_context_size_error")
        return None

    def _rejection(self, name: str) -> str:
        if name == "tools":
            return ('"auto" tool choice requires --enable-auto-tool-choice and '
                    '--tool-call-parser to be set')
        if name == "max_tokens":
            return ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                    "Use 'max_completion_tokens' instead.")
        return f"Unrecognized request argument supplied: {name}"

    def _overflow(self, prompt: int, cap: int, window: int) -> str:
        flavour = self.config.flavour
        if flavour == "llamacpp":
            return "the request exceeds the available context size, try increasing it"
        if flavour == "ollama":
            return f"prompt too long; exceeded max context length by {prompt + cap - window} tokens"
        return (f"This model's maximum context length is {window} tokens. However, you "
                f"requested {prompt + cap} tokens ({prompt} in the messages, {cap} in the "
                f"completion). Please reduce the length of the messages or completion.")

    def _error_body(self, message: str, kind: str) -> bytes:
        flavour = self.config.flavour
        if flavour == "vllm":  # its top-level shape
            body: Any = {"object": "error", "message": message, "type": "BadRequestError",
                         "param": None, "code": 400}
        elif flavour == "ollama":
            body = {"error": message}
        elif flavour == "llamacpp":
            body = {"error": {"code": 400, "message": message, "type": kind}}
        else:
            body = {"error": {"message": message, "type": "invalid_request_error",
                              "param": None, "code": None}}
        return json.dumps(body).encode()

    def models_list(self) -> bytes:
        entry: dict[str, Any] = {"object": "model", "owned_by": "lifebench-fake"}
        if self.config.max_model_len is not None and self.config.flavour != "llamacpp":
            entry["max_model_len"] = self.config.max_model_len
        return json.dumps({"object": "list", "data": [
            {"id": name, **entry} for name in self.config.models]}).encode()

    def completion(self, request: dict[str, Any], tags: Optional[dict[str, str]] = None) -> dict[str, Any]:
        reply = self.next_reply(request, tags)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        if isinstance(reply, dict) and isinstance(reply.get("message"), dict):
            message = {"role": "assistant", **reply["message"]}  # sent as the script says
            finish = "tool_calls" if message.get("tool_calls") else "stop"
        elif isinstance(reply, dict) and "tool_call" in reply and not self.config.tool_calls:
            call = reply["tool_call"]  # no parser: the model's call stays text
            message["content"] = json.dumps({"name": call["name"], "arguments": call.get("arguments", {})})
        elif isinstance(reply, dict) and "tool_call" in reply:
            call = reply["tool_call"]
            message["tool_calls"] = [{"id": self._call_id(request), "type": "function",
                                      "function": {"name": call["name"],
                                                   "arguments": json.dumps(call.get("arguments", {}))}}]
            finish = "tool_calls"
        else:
            message["content"] = reply["content"] if isinstance(reply, dict) else str(reply)
        prompt = self.prompt_tokens(request)
        if self.config.policy == "scripted":
            completion = _chars_tokens(message)
        else:
            completion = _words(str(message["content"] or "")) + (5 if finish == "tool_calls" else 0)
        usage: dict[str, Any] = {}
        if self.config.reasoning:
            finish, completion, usage = self._reason(message, request, finish, completion)
        choices = [{"index": 0, "message": _shaped(message, self.config.shapes),
                    "finish_reason": finish}]
        if "choices" in self.config.shapes:
            choices.append({"index": 1, "message": {"role": "assistant", "content": "second"},
                            "finish_reason": "stop"})
        return {"id": f"chatcmpl-{self.requests}", "object": "chat.completion",
                "created": int(time.time()), "model": request.get("model", "fake"),
                "choices": choices,
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + completion, **usage}}

    def _reason(self, message: dict[str, Any], request: dict[str, Any], finish: str,
                completion: int) -> tuple[str, int, dict[str, Any]]:
        """Put a reasoning model's reasoning before the answer in `message`, in the configured
        style, and cut both at the request's cap as a server does ("length")."""
        words = ("Let me think step by step about what the observation shows and which "
                 "action moves toward the goal.").split()
        thought = " ".join(words[i % len(words)] for i in range(self.config.reasoning_words))
        spent = self._tokens(thought)
        cap = request.get("max_tokens") or request.get("max_completion_tokens")
        cut = cap is not None and spent + completion > cap
        if cut:
            finish = "length"
            kept = thought.split()[:max(0, cap)] if self.config.policy != "scripted" \
                else thought[:4 * cap].split()
            thought = " ".join(kept)
            message.pop("tool_calls", None)
            answer = None  # the cap fell inside the reasoning: no answer at all
            completion = cap
        else:
            answer = message.get("content")
            completion += spent
        style = self.config.reasoning
        if style in ("reasoning_content", "reasoning"):
            message[style] = thought
            message["content"] = answer
        elif style == "tags":  # no reasoning parser: the tags in the content
            message["content"] = f"<think>\n{thought}\n" + ("" if cut else f"</think>\n\n{answer or ''}")
        else:  # closing-tag: the template opened <think> in the prompt
            message["content"] = f"{thought}\n" + ("" if cut else f"</think>\n\n{answer or ''}")
        return finish, completion, {"completion_tokens_details": {"reasoning_tokens": min(spent, completion)}}


DEFAULT_SYSTEM = "You are a helpful assistant."  # what the llamacpp flavour's template adds


def render_chatml(messages: list[Any]) -> str:
    """The llamacpp flavour's chat template: ChatML, a default system message first when the
    conversation has none, and the assistant's turn opened."""
    turns = [m for m in messages if isinstance(m, dict)]
    if not turns or turns[0].get("role") != "system":
        turns = [{"role": "system", "content": DEFAULT_SYSTEM}, *turns]
    return "".join(f"<|im_start|>{m.get('role')}\n{m.get('content') or ''}<|im_end|>\n"
                   for m in turns) + "<|im_start|>assistant\n"


def _shaped(message: dict[str, Any], shapes: tuple[str, ...]) -> dict[str, Any]:
    """`message` as a server of these shapes sends it."""
    message = dict(message)
    if "end-tokens" in shapes and isinstance(message.get("content"), str):  # a stop list that
        message["content"] += "<|im_end|>\n</s>"  # missed the model's end-of-turn tokens
    if "parts" in shapes and isinstance(message.get("content"), str):
        parts = [{"type": "text", "text": message["content"]}]
        for field in ("reasoning_content", "reasoning"):  # reasoning as a part of its own
            if isinstance(message.get(field), str):
                parts.insert(0, {"type": "reasoning", "text": message.pop(field)})
        message["content"] = parts
    if "object-arguments" in shapes and message.get("tool_calls"):
        message["tool_calls"] = [
            {**call, "function": {**call["function"],
                                  "arguments": json.loads(call["function"]["arguments"] or "{}")}}
            for call in message["tool_calls"]]
    return message


# --- HTTP/1.1 on asyncio ---------------------------------------------------------------

_MAX_HEAD = 65536  # bytes of request line and headers, as http.server allows
_MAX_HEADERS = 100
_MAX_BUFFERED = 1 << 22  # read no further ahead than this while a request is answered
_READ_ROOM = 32768  # a connection's buffer to begin with; at least half of it is offered to a read
_ERRORS = {
    429: json.dumps({"error": {"message": "rate limited", "type": "rate_limit"}}).encode(),
    500: json.dumps({"error": {"message": "internal error", "type": "server_error"}}).encode(),
}
_MALFORMED = b'{"choices": [ this is not json'
_UNAUTHORIZED = json.dumps({"error": {"message": "Incorrect API key provided",
                                      "type": "invalid_request_error",
                                      "code": "invalid_api_key"}}).encode()


def _status_line(status: int) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    return f"HTTP/1.1 {status} {phrase}\r\n".encode("latin-1")


_STATUS_LINES = {status.value: _status_line(status.value) for status in HTTPStatus}
_date: tuple[int, bytes] = (0, b"")  # a second, and the Date header line for it


def _date_line() -> bytes:
    global _date
    now = int(time.time())
    if now != _date[0]:
        _date = (now, f"Date: {formatdate(now, usegmt=True)}\r\n".encode("latin-1"))
    return _date[1]


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class _Head:
    method: str
    path: str
    keep_alive: bool
    headers: dict[str, str]
    length: int  # of the body; -1 when chunked
    expects_continue: bool = False  # `Expect: 100-continue`


# The headers a request's handling reads (a line's first such header counts, as with
# http.server); the others are not looked at.
_HEADERS = re.compile(rb"\r\n(content-length|connection|transfer-encoding|authorization|expect"
                      rb"|x-lifebench-(?:role|method|benchmark|split|instance|step))"
                      rb"[ \t]*:[ \t]*([^\r\n]*)", re.I)


def _parse_head(block: bytes | bytearray) -> _Head:
    """The request line and headers (`block` without its final blank line)."""
    line_end = block.find(b"\r\n")
    request_line = block[:line_end if line_end >= 0 else len(block)].decode("latin-1")
    words = request_line.split()
    if len(words) != 3 or not words[2].startswith("HTTP/"):
        raise _BadRequest(400, f"bad request line {request_line[:100]!r}")
    method, path, version = words
    try:
        major, minor = (int(n) for n in version[5:].split("."))
    except ValueError:
        raise _BadRequest(400, f"bad request version {version[:20]!r}") from None
    if major != 1:
        raise _BadRequest(505, f"HTTP version {version[:20]} is not supported")
    if block.count(b"\r\n") > _MAX_HEADERS:
        raise _BadRequest(431, "too many headers")
    headers: dict[str, str] = {}
    for name, value in _HEADERS.findall(block):
        headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    connection = headers.get("connection", "").lower()
    keep_alive = minor >= 1
    if "close" in connection:
        keep_alive = False
    elif "keep-alive" in connection:
        keep_alive = True
    if "chunked" in headers.get("transfer-encoding", "").lower():
        length = -1
    else:
        try:
            length = int(headers.get("content-length") or 0)
        except ValueError:
            raise _BadRequest(400, "bad Content-Length") from None
        if length < 0:
            raise _BadRequest(400, "bad Content-Length")
    expects_continue = minor >= 1 and headers.get("expect", "").lower() == "100-continue"
    return _Head(method, path, keep_alive, headers, length, expects_continue)


def _dechunk(buffer: bytes) -> Optional[tuple[bytes, int]]:
    """A chunked body at the start of `buffer` and the bytes it takes, or None if it has
    not all arrived."""
    parts, at = [], 0
    while True:
        eol = buffer.find(b"\r\n", at)
        if eol < 0:
            return None
        try:
            size = int(bytes(buffer[at:eol]).split(b";")[0].strip(), 16)
        except ValueError:
            raise _BadRequest(400, "bad chunk size") from None
        if size == 0:
            while True:  # trailers, up to a blank line
                end = buffer.find(b"\r\n", eol + 2)
                if end < 0:
                    return None
                if end == eol + 2:
                    return b"".join(parts), end + 2
                eol = end
        if len(buffer) < eol + 2 + size + 2:
            return None
        parts.append(bytes(buffer[eol + 2:eol + 2 + size]))
        at = eol + 2 + size + 2


class _Connection(asyncio.BufferedProtocol):
    """One client connection: its requests parsed from a buffer and answered in order,
    one at a time; a request's latency is a timer on the loop. The socket is read into
    the connection's own buffer (no new buffer per read)."""

    def __init__(self, server: "LocalServer") -> None:
        self.server = server
        self.fake = server.fake
        self.transport: Any = None
        self.buffer = bytearray(_READ_ROOM)
        self.start = 0  # the bytes received and not yet parsed are buffer[start:end]
        self.end = 0
        self.scanned = 0  # of those, how many were searched for the end of the headers
        self.head: Optional[_Head] = None  # of the request whose body is awaited
        self.busy = False  # a request is being answered
        self.keep_alive = True
        self.closed = False
        self.eof = False
        self.paused = False
        self.timer: Optional[asyncio.TimerHandle] = None

    # asyncio callbacks

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.server._connections.add(self)

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.closed = True
        self.server._connections.discard(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        buffer, start, end = self.buffer, self.start, self.end
        if start == end:  # everything parsed: start again at the front
            start = end = self.start = self.end = 0
            if len(buffer) > 4 * _READ_ROOM:  # after a big body
                buffer = self.buffer = bytearray(_READ_ROOM)
        if len(buffer) - end < _READ_ROOM // 2:
            pending = end - start
            if pending + _READ_ROOM // 2 <= len(buffer):  # move the unparsed to the front
                buffer[:pending] = buffer[start:end]  # same size: a view may still exist
            else:  # a bigger buffer
                grown = bytearray(2 * len(buffer) + pending)
                grown[:pending] = buffer[start:end]
                buffer = self.buffer = grown
            self.start, self.end = 0, pending
            end = pending
        return memoryview(buffer)[end:]

    def buffer_updated(self, nbytes: int) -> None:
        if self.closed:
            return
        self.end += nbytes
        if not self.busy:
            self._next()
        elif self.end - self.start > _MAX_BUFFERED and not self.paused:
            self.paused = True
            self.transport.pause_reading()

    def eof_received(self) -> bool:
        self.eof = True
        if not self.busy:
            self._close()
        return True  # a request being answered still gets its answer

    # requests

    def _next(self) -> None:
        """Start answering the buffered requests, up to one that waits (its latency)."""
        buffer = self.buffer
        try:
            while not self.busy and not self.closed:
                if self.head is None:
                    start, end = self.start, self.end
                    while buffer.startswith(b"\r\n", start, end):  # blank lines before a request
                        start += 2
                    self.start = start
                    eoh = buffer.find(b"\r\n\r\n", start + max(0, self.scanned - 3), end)
                    if eoh < 0:
                        self.scanned = end - start
                        if end - start > _MAX_HEAD:
                            raise _BadRequest(431, "request headers too large")
                        break
                    if eoh - start > _MAX_HEAD:
                        raise _BadRequest(431, "request headers too large")
                    self.head = _parse_head(buffer[start:eoh])
                    self.start, self.scanned = eoh + 4, 0
                    if self.head.expects_continue:
                        self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                head = self.head
                if head.length < 0:
                    chunked = _dechunk(bytes(buffer[self.start:self.end]))
                    if chunked is None:
                        break
                    body, used = chunked
                elif self.end - self.start >= head.length:
                    body, used = buffer[self.start:self.start + head.length], head.length
                else:
                    break
                self.start += used
                self.head = None
                self._request(head, body)
        except _BadRequest as error:
            self.keep_alive = False
            self._json(error.status, {"error": {"message": str(error)}})
            return
        except Exception:  # a broken script, say: said on stderr, the connection closed
            self._fail()
            return
        if self.paused and not self.busy:
            self.paused = False
            self.transport.resume_reading()
        if self.eof and not self.busy:
            self._close()

    def _request(self, head: _Head, body: bytes | bytearray) -> None:
        self.keep_alive = head.keep_alive
        fake = self.fake
        path = head.path.rstrip("/")
        if head.method == "GET":
            if path == "/stats":
                self._json(200, {"requests": fake.requests, "faults": fake.faults_injected,
                                 "max_in_flight": fake.max_in_flight, "tokenized": fake.tokenized,
                                 "early": fake.early, "barrier": fake.barrier})
            elif path == "/last":  # the last request answered (for tests)
                self._json(200, fake.last_request)
            elif path == "/requests":  # the last 1000 requests answered
                self._json(200, list(fake.history))
            elif path == "/requests/tags":  # their tags (method, instance, ...), in that order
                self._json(200, list(fake.history_tags))
            elif path.endswith("/models"):
                self._send(200, fake.models_list())
            elif path == "/props" and fake.config.flavour == "llamacpp":  # llama-server's
                self._json(200, {"default_generation_settings": {"n_ctx": fake.config.max_model_len
                                                                 or 4096},
                                 "total_slots": 1})
            else:
                self._json(404, {"error": {"message": "not found"}})
            return
        if head.method != "POST":
            self.keep_alive = False
            self._json(501, {"error": {"message": f"unsupported method {head.method[:20]!r}"}})
            return
        if path in ("/tokenize", "/apply-template") and fake.config.flavour == "llamacpp":
            self._llama_server(path, body)
            return
        if path == "/tokenize" and fake.config.flavour == "vllm":  # vLLM's tokenizer endpoint
            try:
                asked = json.loads(body)
                text = str(asked.get("prompt") or "")
            except (ValueError, AttributeError):
                self._json(400, {"object": "error", "message": "body is not a JSON object"})
                return
            with fake._lock:
                fake.tokenized += 1
            self._json(200, {"count": fake._tokens(text), "max_model_len": fake.config.max_model_len,
                             "tokens": []})
            return
        if not path.endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {head.path}"}})
            return
        try:
            request = json.loads(body)
        except ValueError:
            self._json(400, {"error": {"message": "body is not JSON"}})
            return
        if not isinstance(request, dict):
            self._json(400, {"error": {"message": "body is not a JSON object"}})
            return
        expected = fake.config.api_key
        if expected is not None and head.headers.get("authorization") != f"Bearer {expected}":
            self._send(401, _UNAUTHORIZED)
            return
        tags = {name[len(_TAG_PREFIX):]: value for name, value in head.headers.items()
                if name.startswith(_TAG_PREFIX)}
        refused = fake.refusal(request)
        if refused is not None:
            fake.history.append(request)
            fake.history_tags.append(tags)
            with fake._lock:
                fake.requests += 1
            self._send(*refused)
            return
        if fake.config.serial and fake.in_flight:
            self.busy = True
            fake.queued.append(lambda: self._begin(request, tags, later=True))
            return
        self._begin(request, tags)

    def _begin(self, request: dict[str, Any], tags: dict[str, str], later: bool = False) -> None:
        """A chat request taken: its fault drawn, its answer sent at once, after its latency,
        or when the barrier opens (`later`: taken from the serial queue, so answered by a
        timer as a delayed one is)."""
        fake = self.fake
        fake.enter()
        try:
            fault = fake.next_fault()
        except BaseException:
            fake.leave()
            raise
        delay = fake.config.latency_s + (fake.config.hang_s if fault == "timeout" else 0.0)
        if fake.config.hold_until and fake.barrier != "opened":
            self.busy = True
            loop = self.server._loop
            self.timer = loop.call_later(max(delay, fake.config.hold_s), self._answer, request, fault, tags)
            fake.held.append((self, request, fault, tags))
            if fake.in_flight >= fake.config.hold_until:
                fake.barrier = "opened"
                for connection, *held in fake.held:
                    connection.timer.cancel()
                    connection.timer = loop.call_later(delay, connection._answer, *held)
                fake.held.clear()
            return
        if delay > 0 or later:
            self.busy = True
            self.timer = self.server._loop.call_later(delay, self._answer, request, fault, tags)
        else:
            self._answer(request, fault, tags, at_once=True)

    def _llama_server(self, path: str, body: bytes | bytearray) -> None:
        """llama-server's /tokenize (`content` -> the token ids: a word a token here) and
        /apply-template (`messages` -> the rendered `prompt`)."""
        fake = self.fake
        try:
            asked = json.loads(body)
            if path == "/apply-template":
                self._json(200, {"prompt": render_chatml(list(asked["messages"]))})
                return
            text = str(asked["content"])  # (llama-server reads `content`; no field: no tokens)
        except (ValueError, KeyError, TypeError):
            self._json(200, {"tokens": []}) if path == "/tokenize" else \
                self._json(500, {"error": {"code": 500, "message": "bad request body"}})
            return
        with fake._lock:
            fake.tokenized += 1
        self._json(200, {"tokens": list(range(_words(text)))})

    def _answer(self, request: dict[str, Any], fault: Optional[str], tags: dict[str, str],
                at_once: bool = False) -> None:
        """The answer to a chat request, after its latency (and hang)."""
        self.timer = None
        fake = self.fake
        try:
            if fault == "429" and fake.config.retry_after:
                self._send(429, _ERRORS[429], extra=fake.retry_after_header())
            elif fault in ("429", "500"):
                self._send(int(fault), _ERRORS[int(fault)])  # type: ignore[arg-type]
            elif fault == "in-band":  # LM Studio's and some gateways' errors: in a 200
                self._send(200, json.dumps({"error": {"message": "the model crashed while "
                                                      "generating", "type": "server_error"}}).encode())
            elif fault == "empty-choices":
                self._send(200, json.dumps({"id": "x", "object": "chat.completion",
                                            "choices": [], "usage": {}}).encode())
            elif fault == "malformed":
                self._send(200, _MALFORMED)
            elif fault == "drop":
                self.keep_alive = False
                self._close()
            else:  # no fault, or a timeout that has hung: the answer
                self._send(200, json.dumps(fake.completion(request, tags)).encode())
        except Exception:
            if at_once:
                raise  # to _next, which says it
            self._fail()
        finally:
            fake.leave()
            fake.held = [held for held in fake.held if held[0] is not self]
            if fake.queued:
                self.server._loop.call_soon(fake.queued.popleft())
        self.busy = False
        if not at_once:
            self._next()

    def _fail(self) -> None:
        """An error of the server's own (a broken script, say): said on stderr, as
        http.server did, and the connection closed unanswered."""
        print(f"fakeserver: error answering a request:\n{traceback.format_exc()}",
              file=sys.stderr, flush=True)
        self.keep_alive = False
        self.busy = False
        self._close()

    # answers

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode())

    def _send(self, status: int, body: bytes, content_type: bytes = b"application/json",
              extra: bytes = b"") -> None:
        if self.closed or self.transport.is_closing():
            return  # the client went away while its request waited
        shapes = self.fake.config.shapes
        if "gzip" in shapes and body:  # a gateway that encodes every answer
            body, extra = gzip.compress(body), extra + b"Content-Encoding: gzip\r\n"
        elif "br" in shapes and body:  # an encoding lifebench does not decode
            body, extra = b"\x8b\x02\x80" + body[:16], extra + b"Content-Encoding: br\r\n"
        status_line = _STATUS_LINES.get(status) or _status_line(status)
        close = b"" if self.keep_alive else b"Connection: close\r\n"
        self.transport.write(b"".join((
            status_line, _date_line(), b"Content-Type: ", content_type,
            b"\r\nContent-Length: ", str(len(body)).encode(), b"\r\n", extra, close, b"\r\n", body)))
        if not self.keep_alive:
            self._close()

    def _close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class LocalServer:
    """The server on `address` (bound at once): `serve_forever()` runs its event loop in
    the calling thread, `shutdown()` (from another thread) stops it, `server_close()`
    releases the port; as `socketserver`'s servers."""

    def __init__(self, address: tuple[str, int], fake: FakeOpenAI) -> None:
        self.fake = fake
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind(address)
            self.socket.listen(1024)  # hundreds of clients may connect at once
        except BaseException:
            self.socket.close()
            raise
        self.server_address: tuple[str, int] = self.socket.getsockname()[:2]
        self._connections: set[_Connection] = set()
        self._lock = threading.Lock()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop: Optional[asyncio.Future[None]] = None
        self._shutdown_requested = False
        self._stopped = threading.Event()

    @property
    def url(self) -> str:
        """The base URL to give a client or `--base-url`."""
        return f"http://{self.server_address[0]}:{self.server_address[1]}/v1"

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url.replace("/v1", path)) as response:
            return json.loads(response.read())

    def stats(self) -> dict[str, Any]:
        """Requests served, faults injected, the most requests in flight at once."""
        return self._get("/stats")

    def requests(self) -> list[dict[str, Any]]:
        """The last 1000 requests answered, oldest first."""
        return self._get("/requests")

    def request_tags(self) -> list[dict[str, str]]:
        """The tags (`X-Lifebench-<Name>` headers: method, instance, ...) of those requests,
        in the same order, by lower-case name."""
        return self._get("/requests/tags")

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Answer requests until `shutdown()`."""
        loop = asyncio.new_event_loop()
        stop: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._shutdown_requested:
                loop.close()
                return
            self._loop, self._stop = loop, stop
            self._stopped.clear()
        task = loop.create_task(self._serve(stop))
        try:
            loop.run_until_complete(task)
        finally:
            if not task.done():  # interrupted (Ctrl-C): close the connections all the same
                task.cancel()
                try:
                    loop.run_until_complete(task)
                except BaseException:
                    pass
            with self._lock:
                self._loop = self._stop = None
            loop.close()
            self._stopped.set()

    async def _serve(self, stop: "asyncio.Future[None]") -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Connection(self), sock=self.socket, backlog=1024)
        try:
            await stop
        finally:
            # Accept no more; let the connections accepted a moment ago be made (asyncio
            # makes them in tasks), then close the socket and every connection.
            loop.remove_reader(self.socket.fileno())
            accepting = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            if accepting:
                await asyncio.wait(accepting, timeout=1.0)
            server.close()  # closes the socket: connections not yet accepted are reset
            for connection in list(self._connections):
                if connection.timer is not None:
                    connection.timer.cancel()
                connection.closed = True
                connection.transport.abort()
            await asyncio.sleep(0)  # the transports' own closing callbacks

    def shutdown(self) -> None:
        """Stop `serve_forever()` and wait until it has (not from the server's thread)."""
        with self._lock:
            self._shutdown_requested = True
            loop, stop = self._loop, self._stop
        if loop is None or stop is None:
            return
        try:
            loop.call_soon_threadsafe(lambda: stop.done() or stop.set_result(None))
        except RuntimeError:  # the loop has just closed
            return
        self._stopped.wait()

    def server_close(self) -> None:
        self.socket.close()

    def close(self) -> None:
        self.shutdown()
        self.server_close()

    def __enter__(self) -> "LocalServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server_close()


def serve(config: ServerConfig, port: int = 0, host: str = "127.0.0.1") -> LocalServer:
    """Start the server in a background thread; returns it (`server.url`, `server.close()`)."""
    server = LocalServer((host, port), FakeOpenAI(config))
    threading.Thread(target=server.serve_forever, name="fakeserver", daemon=True).start()
    return server


def load_script(path: Optional[str]) -> list[Any]:
    if not path:
        return []
    with open(path) as f:
        script = json.load(f)
    if not isinstance(script, list):
        raise SystemExit(f"{path}: the script must be a JSON list of replies")
    return script


def _run_beside(config: ServerConfig, host: str, port: int, command: list[str]) -> int:
    """Run `command` while the server answers in a thread of this process."""
    import os
    import subprocess

    server = LocalServer((host, port), FakeOpenAI(config))
    threading.Thread(target=server.serve_forever, name="fakeserver", daemon=True).start()
    try:
        from lifebench.llm.embedded import command_argv

        argv = command_argv(command, {"url": server.url})
        try:
            return subprocess.call(argv, env={**os.environ, "LIFEBENCH_BASE_URL": server.url})
        except OSError as exc:
            print(f"fakeserver: cannot run {command[0]!r}: {exc.strerror}", file=sys.stderr)
            return 127
        except KeyboardInterrupt:
            return 130
    finally:
        server.close()


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lifebench.testing.fakeserver")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--script")
    parser.add_argument("--policy", default="script", choices=POLICIES)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--faults", default=",".join(FAULT_KINDS))
    parser.add_argument("--hang-s", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--api-key", help="answer 401 to requests with another key")
    parser.add_argument("--models", default="", help="comma-separated names /v1/models lists")
    parser.add_argument("--flavour", default="openai", choices=FLAVOURS,
                        help="whose error bodies to answer with")
    parser.add_argument("--reasoning", default="", choices=REASONING_STYLES,
                        help="answer as a reasoning model: tags, closing-tag, "
                             "reasoning_content or reasoning")
    parser.add_argument("--reasoning-words", type=int, default=40)
    parser.add_argument("--max-model-len", type=int, help="the model's context window")
    parser.add_argument("--rejects", default="", help="comma-separated request fields to "
                        "refuse with a 400: " + ", ".join(REJECTABLE))
    parser.add_argument("--shapes", default="", help="comma-separated reply shapes, as some "
                        "servers send them: " + ", ".join(SHAPES))
    parser.add_argument("--no-tool-calls", action="store_true", help="take tools but answer "
                        "in text, as a server with no tool-call parser for its model")
    parser.add_argument("--retry-after", default="", help="a 429's Retry-After: N seconds, "
                        "or date:N (an HTTP-date N seconds ahead)")
    parser.add_argument("--overflow", default="", help="the context refusal to send, by its "
                        "server's name in lifebench.llm.server_errors.CONTEXT_REFUSALS")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="after `--`: a command to run while the server answers (its "
                             "`{url}` arguments become the server's base URL, also in "
                             "LIFEBENCH_BASE_URL); the server stops when it ends, and its exit "
                             "code is the server's")
    args = parser.parse_args(argv)
    faults = tuple(f for f in args.faults.split(",") if f)
    unknown = [f for f in faults if f not in FAULT_KINDS]
    if unknown:
        raise SystemExit(f"unknown fault {unknown[0]!r}; choose from {', '.join(FAULT_KINDS)}")
    config = ServerConfig(script=load_script(args.script), policy=args.policy,
                          latency_s=args.latency_ms / 1000,
                          fault_rate=args.fault_rate, faults=faults, hang_s=args.hang_s,
                          seed=args.seed, api_key=args.api_key,
                          models=tuple(m for m in args.models.split(",") if m),
                          flavour=args.flavour, reasoning=args.reasoning,
                          reasoning_words=args.reasoning_words, max_model_len=args.max_model_len,
                          rejects=tuple(r for r in args.rejects.split(",") if r),
                          shapes=tuple(r for r in args.shapes.split(",") if r),
                          tool_calls=not args.no_tool_calls, retry_after=args.retry_after,
                          overflow=args.overflow)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if command:
        raise SystemExit(_run_beside(config, args.host, args.port, command))
    server = LocalServer((args.host, args.port), FakeOpenAI(config))
    print(f"listening on http://{args.host}:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
