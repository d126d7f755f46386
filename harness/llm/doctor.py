"""`lifebench doctor`: what an endpoint does, measured in seconds before a run.

It lists the served models (`/v1/models`), then sends a few short completions straight to
the endpoint (no cache, no retry): a plain one (does the model reason, and how: a field or
tags?), one with `seed`, one offering a tool, and timed ones for prefill and decode speed.
What it measured goes to a profile (JSON, no key in it) that `lifebench grid --plan` reads.
"""

from __future__ import annotations

import collections
import datetime
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from lifebench.api.errors import UserError
from lifebench.api.untrusted import parse_json
from lifebench.config.run import LLMConfig
from lifebench.llm.completion import completion_problem, in_band_error
from lifebench.llm.models import list_models, props_window, server_counting
from lifebench.llm.reasoning import split_reasoning
from lifebench.llm.server_errors import error_line, rejects_field, rejects_tools
from lifebench.llm.transport import TransportFailure, TransportTimeout, endpoint

PROFILE_FORMAT = "lifebench-endpoint-profile"
_PROBE_TOOL = {"type": "function", "function": {
    "name": "say", "description": "Say a word.",
    "parameters": {"type": "object", "properties": {"word": {"type": "string"}},
                   "required": ["word"]}}}
# a prompt of about 1,000 tokens for the prefill measure: numbered filler lines
_LONG = "\n".join(f"Line {i}: the quick brown fox jumps over the lazy dog." for i in range(80))


@dataclass
class Profile:
    model: str
    base_url: str
    measured_utc: str
    reachable: bool = False
    key_accepted: Optional[bool] = None
    served: Optional[bool] = None
    served_models: list[str] = field(default_factory=list)
    context_window: Optional[int] = None
    context_window_source: Optional[str] = None  # "--context-window", "/v1/models" or "/props"
    token_counter: Optional[str] = None  # the server's tokenizer endpoint (None: estimates)
    answers: Optional[bool] = None  # a plain completion came back
    tools: Optional[bool] = None
    tool_probe: Optional[str] = None  # what the tool probe got, where it was not a call
    faults: dict[str, int] = field(default_factory=dict)  # what its probes met, by kind
    seed: Optional[bool] = None
    reasoning: Optional[str] = None  # "field", "tags" or "none"
    prefill_tokens_per_s: Optional[float] = None
    decode_tokens_per_s: Optional[float] = None
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps({"format": PROFILE_FORMAT, "version": 1, **asdict(self)}, indent=2)


def profile_of(path: str, model: Optional[str], base_url: Optional[str]) -> Optional[dict[str, Any]]:
    """The profile `lifebench doctor` wrote at `path` when it is this model's at this
    endpoint; None when there is none, it is another's, or it cannot be read."""
    try:
        profile = parse_json(Path(path).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(profile, dict) or profile.get("format") != PROFILE_FORMAT:
        return None
    return profile if (profile.get("model"), profile.get("base_url")) == (model, base_url) else None


class _Probe:
    def __init__(self, model: str, config: LLMConfig) -> None:
        self.model = model
        self.config = config
        key = os.environ.get(config.api_key_env) or ""
        self.headers = {"Content-Type": "application/json", "Accept": "application/json",
                        "Authorization": f"Bearer {key or 'no-key'}"}
        self.server = endpoint(config.base_url, min(config.timeout_s, 60.0),
                               int(config.max_response_mb * 2**20))
        self.faults: "collections.Counter[str]" = collections.Counter()  # as a run counts them

    def ask(self, content: str, max_tokens: int, **more: Any) -> tuple[int, Any, float]:
        """(status, the completion or the error line, seconds)."""
        request: dict[str, Any] = json.loads(self.config.extra_body) if self.config.extra_body else {}
        request.update(model=self.model, messages=[{"role": "user", "content": content}],
                       temperature=0, max_tokens=max_tokens, **more)
        started = time.monotonic()
        try:
            answer = self.server.post("/chat/completions", json.dumps(request).encode(), self.headers)
        except TransportTimeout:
            self.faults["timeout"] += 1
            raise
        except TransportFailure:
            self.faults["reset"] += 1
            raise
        seconds = time.monotonic() - started
        if answer.status != 200:
            if answer.status == 429 or answer.status >= 500:
                self.faults["rate_limited" if answer.status == 429 else "server_error"] += 1
            return answer.status, error_line(answer.body), seconds
        try:
            data = parse_json(answer.body)
        except ValueError:
            return 502, "the answer is not JSON", seconds
        problem = completion_problem(data)
        in_band = in_band_error(data)
        if in_band is not None or problem == "no choices":
            self.faults["in_band_error" if in_band is not None else "empty_choices"] += 1
        return (502, in_band or problem, seconds) if problem else (200, data, seconds)


@dataclass(frozen=True)
class ToolProbe:
    """One tiny completion offering a tool: does the endpoint do tool calling?"""

    tools: Optional[bool]  # None: the probe could not tell (no answer, a server error)
    status: Optional[int]
    seconds: float
    tokens_in: int = 0
    tokens_out: int = 0
    answer: str = ""  # the refusal's line, or why there was no answer

    def manifest(self) -> dict[str, Any]:
        return {"tools": self.tools, "status": self.status, "seconds": round(self.seconds, 3),
                "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "answer": self.answer[:200]}


def probe_tools(model: str, config: LLMConfig, probe: Optional["_Probe"] = None) -> ToolProbe:
    """Offer a tool in one completion of at most 16 tokens (the start-up check's, and the
    doctor's): yes only when the reply calls the offered tool (a `tool_calls` entry naming
    it); no when the server refuses tools, or answers without calling it (a server that
    takes the field but parses no calls, as llama-cpp-python's with a chat template that
    has no tool format); anything else (no answer, a server error) cannot tell."""
    started = time.monotonic()
    try:
        status, answer, seconds = (probe or _Probe(model, config)).ask(
            "Call the tool say with the word yes.", 16, tools=[_PROBE_TOOL])
    except (TransportFailure, TransportTimeout) as exc:
        why = "no answer in time" if isinstance(exc, TransportTimeout) else f"no answer ({exc})"
        return ToolProbe(None, None, time.monotonic() - started, answer=why)
    if status == 200:
        usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else {}
        called = _called(answer, _PROBE_TOOL["function"]["name"])
        said = "" if called else f"answered without calling the tool: {_content(answer)!r}"
        return ToolProbe(called, status, seconds, _int(usage.get("prompt_tokens")),
                         _int(usage.get("completion_tokens")), said)
    refused = isinstance(answer, str) and rejects_tools(answer)
    return ToolProbe(False if refused else None, status, seconds, answer=str(answer))


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _message(completion: dict[str, Any]) -> dict[str, Any]:
    choices = completion.get("choices")
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = first.get("message")
    return message if isinstance(message, dict) else {}


def _called(completion: dict[str, Any], name: str) -> bool:
    """Whether the reply holds a tool call naming `name`."""
    calls = _message(completion).get("tool_calls")
    return isinstance(calls, list) and any(
        isinstance(call, dict) and isinstance(call.get("function"), dict)
        and call["function"].get("name") == name for call in calls)


def _content(completion: dict[str, Any]) -> str:
    content = _message(completion).get("content")
    return content[:80] if isinstance(content, str) else ""


def diagnose(model: str, config: LLMConfig) -> Profile:
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    profile = Profile(model, config.base_url, now)
    try:
        served = list_models(config)
    except UserError as exc:  # the key was refused
        profile.reachable, profile.key_accepted = True, False
        profile.problems.append(str(exc))
        return profile
    profile.reachable = served.reachable
    if not served.reachable:
        profile.problems.append(f"{config.base_url}/models: {served.problem}")
        return profile
    profile.key_accepted = True
    profile.served_models = served.names
    if ":" not in model and model not in served.names and f"{model}:latest" in served.names:
        model = f"{model}:latest"  # Ollama's implicit tag, as a run takes it
        profile.problems.append(f"{profile.model!r} is served as {model!r}: runs use that name")
    profile.served = (model in served.names) if served.names else None
    if profile.served is False:
        profile.problems.append(f"model {model!r} is not served; the endpoint serves: "
                                f"{', '.join(served.names[:10])}")
        return profile
    if config.context_window:
        profile.context_window, profile.context_window_source = config.context_window, "--context-window"
    elif served.windows.get(model):
        profile.context_window, profile.context_window_source = served.windows[model], "/v1/models"
    else:
        profile.context_window = props_window(config)
        profile.context_window_source = "/props" if profile.context_window else None
    profile.token_counter = server_counting(model, config)[0] or None
    probe = _Probe(model, config)
    try:
        _probe_completions(probe, profile)
    except TransportFailure as exc:
        profile.problems.append(f"a completion failed: {exc}")
    except TransportTimeout:
        profile.problems.append(f"a completion had no complete answer within "
                                f"{probe.server.timeout_s:g} s")
    profile.faults = dict(sorted(probe.faults.items()))
    return profile


def _probe_completions(probe: _Probe, profile: Profile) -> None:
    status, plain, _ = probe.ask("Answer with one word: what colour is the sky?", 256)
    profile.answers = status == 200
    if status != 200:
        profile.problems.append(f"a plain completion was refused ({status}): {plain}")
        return
    message = plain["choices"][0].get("message") or {}
    reasoning, _ = split_reasoning(message)
    if any(isinstance(message.get(f), str) and message[f] for f in ("reasoning_content", "reasoning")):
        profile.reasoning = "field"
    else:
        profile.reasoning = "tags" if reasoning else "none"
    status, answer, _ = probe.ask("Say yes.", 16, seed=1)
    profile.seed = status == 200 or not (isinstance(answer, str) and rejects_field(answer, "seed"))
    if status != 200 and profile.seed:
        profile.problems.append(f"a completion with seed was refused ({status}): {answer}")
    tools = probe_tools(probe.model, probe.config, probe)
    profile.tools = tools.tools is True
    profile.tool_probe = tools.answer or None
    if tools.tools is None:
        profile.problems.append(f"a completion offering a tool was refused ({tools.status}): "
                                f"{tools.answer}")
    # speeds: prefill from a long prompt with one token out, decode from a short prompt
    status, long_answer, long_s = probe.ask(_LONG + "\nReply with OK.", 1)
    status2, short_answer, short_s = probe.ask("Count from one to fifty in words.", 64)
    if status == 200 and status2 == 200:
        prompt = (long_answer.get("usage") or {}).get("prompt_tokens") or 0
        out = (short_answer.get("usage") or {}).get("completion_tokens") or 0
        # each includes the request's latency (and prefill one decoded token): lower bounds
        if prompt and long_s > 0:
            profile.prefill_tokens_per_s = round(prompt / long_s, 1)
        if out and short_s > 0:
            profile.decode_tokens_per_s = round(out / short_s, 1)


def _yes(value: Optional[bool]) -> str:
    return "unknown" if value is None else ("yes" if value else "no")


def report(profile: Profile) -> list[tuple[str, str]]:
    """The table `lifebench doctor` prints: (check, result)."""
    window = (f"{profile.context_window:,} tokens ({profile.context_window_source})"
              if profile.context_window else "not reported")
    if profile.tools is None:
        tools = "unknown"
    elif profile.tools:
        tools = "yes: methods that offer tools (How²) call them natively"
    else:
        why = profile.tool_probe.split(":")[0] if profile.tool_probe else ""
        tools = (f"no ({why[:60]}): methods that offer tools (How²) describe them in the prompt "
                 f"(--llm-tool-protocol text)" if why else
                 "no: methods that offer tools (How²) use --llm-tool-protocol text")
    counts = (f"the server's ({profile.token_counter})" if profile.token_counter else
              "estimated (no tokenizer endpoint)")
    rows = [("endpoint", profile.base_url),
            ("reachable", _yes(profile.reachable)),
            ("API key accepted", _yes(profile.key_accepted)),
            ("model served", _yes(profile.served) + ("" if profile.served is not False else
                                                     f" (serves: {', '.join(profile.served_models[:5])})")),
            ("context window", window),
            ("token counts", counts),
            ("tool calling", tools),
            ("seed accepted", _yes(profile.seed)),
            ("reasoning output", profile.reasoning or "unknown"),
            ("prefill tokens/s", f"{profile.prefill_tokens_per_s:,.1f}" if profile.prefill_tokens_per_s else "not measured"),
            ("decode tokens/s", f"{profile.decode_tokens_per_s:,.1f}" if profile.decode_tokens_per_s else "not measured"),
            ("endpoint faults", ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in profile.faults.items())
             or "none in its probes")]
    return rows


def advice(profile: Profile) -> list[str]:
    """What to change before a run, one line each."""
    lines = []
    if profile.tools is False:
        lines.append("tool calling is off: serve with it on (vLLM: --enable-auto-tool-choice "
                     "--tool-call-parser NAME), or run How² with --llm-tool-protocol text")
    if profile.seed is False:
        lines.append("the endpoint refuses seed: runs send none (as --no-llm-seed); replies may "
                     "differ between runs")
    if profile.reasoning == "tags":
        lines.append("the model reasons in <think> tags in its answer: lifebench splits them off; "
                     "a reasoning parser on the server (vLLM: --reasoning-parser NAME) does it there")
    if profile.reasoning in ("tags", "field"):
        lines.append("a reasoning model: give --max-tokens large enough for its reasoning and "
                     "answer (replies cut at the cap answer nothing)")
    if profile.served and not profile.context_window:
        lines.append("the context window is not reported: give --context-window N so prompts "
                     "are fitted to it")
    return lines
