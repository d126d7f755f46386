"""What a method sees of the LLM: one chat call and its typed reply.

The harness gives a method with `needs.llm` a `ChatModel` in `ctx.llm` (the client of
`lifebench.llm`, bound to the run's endpoint and cache). A method passes its own
`RoleParams` with each call: sampling settings belong to the method's config, and the
client, which the stream's other users share (the teacher), is never reconfigured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Protocol, Sequence


@dataclass(frozen=True)
class RoleParams:
    """Sampling settings of one role (actor, reflection, teacher, ...)."""

    temperature: float = 0.0
    max_tokens: Optional[int] = 512  # None: no cap (reasoning models' traces are long)
    seed: Optional[int] = None
    top_p: Optional[float] = None


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class LLMReply:
    """A completion: `text` is the answer alone; a reasoning model's reasoning (its own
    field, or `<think>` tags in the content) is in `reasoning`, never in `text`.
    `finish_reason` is the server's: "length" when the reply was cut at `max_tokens`."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    tokens_in: int
    tokens_out: int
    cached: bool
    reasoning: str = ""
    finish_reason: str = ""  # "malformed": the server's reply could not be read (no text)
    refusal: str = ""  # the model's refusal (OpenAI's `refusal` field), where it refused


class ChatModel(Protocol):
    """`ctx.llm`: one chat completion per call, accounted under `role` in the records."""

    def chat(self, messages: Sequence[dict[str, Any]], role: str = "default",
             tools: Optional[Sequence[dict[str, Any]]] = None, sample: int = 0,
             params: Optional[RoleParams] = None) -> LLMReply: ...


def tag_calls(llm: Optional[ChatModel], **tags: Optional[str]) -> None:
    """Tell `llm` what its coming calls are for (lifebench's client sends them as
    `X-Lifebench-*` headers; see `lifebench.api.scripted`); a ChatModel without tags
    ignores them. A method that plays episodes of its own (support instances in `prepare`)
    names each one: `tag_calls(llm, instance=..., split=...)`. None removes a tag."""
    tag = getattr(llm, "tag", None)
    if callable(tag):
        tag(**tags)
