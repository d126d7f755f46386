"""The scripted model behind `fakeserver --policy scripted` (see `lifebench.api.scripted`).

Its player knows each instance's oracle walk: the first time a request names an instance
(the client's `X-Lifebench-*` headers), the benchmark's oracle plays it once, and the
book of (observation, action) pairs it leaves is how the player acts: it finds the book's
observation shown last in the prompt and answers that step's action (the k-th action for
an observation shown k times, or the one of the step the client says it is at). Where no
book observation is in the prompt, or the
benchmark has no oracle, it answers the benchmark's no-op. Each method's own
`scripted_reply` turns that action into the reply its role's prompt asks for.

Everything here is deterministic: the same requests get the same replies.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any, Optional

from lifebench import registry
from lifebench.api.llm import ToolCall
from lifebench.api.scripted import ScriptedRequest, generic_reply

_KEY_CHARS = 400  # an observation is matched on its first characters (prompts may cut it)
_MAX_BOOK_STEPS = 400


@dataclass(frozen=True)
class Book:
    """An instance's oracle walk, observation by observation."""

    pages: tuple[tuple[str, str], ...]  # (observation key, the oracle's action there)
    noop: str
    # The first observation's key without the task's statement (`Benchmark.without_task`):
    # how a prompt kept from the task (STEP's Executor) shows the episode's start.
    start_without_task: str = ""
    # Each page's observation as an instance-context build reads it (without the task's
    # statement and what reveals reward or the end: `Benchmark.without_outcome`), where it
    # differs: a build's prompts show these.
    blind: tuple[str, ...] = ()

    def act(self, prompt: str, step: Optional[int] = None) -> str:
        """The action for the prompt's last oracle observation; `step` (the steps the
        episode has played) picks among an observation's visits when it is that step's."""
        if not self.pages:
            return self.noop
        first = self.pages[0][0]
        if self.start_without_task and first not in prompt and self.start_without_task in prompt:
            prompt = prompt.replace(self.start_without_task, first, 1)
        # The episode starts where its first observation is shown last (examples of other
        # episodes before it may show the same observations).
        start = max(prompt.rfind(first), 0)
        best, best_text, best_at = None, "", -1
        for text, key in self._texts().items():
            at = prompt.rfind(text, start)
            if at > best_at or (at == best_at and best is not None and len(text) > len(best_text)):
                best, best_text, best_at = key, text, at
        if best is None:
            return self.noop
        if step is not None and 0 <= step < len(self.pages) and self.pages[step][0] == best:
            return self.pages[step][1]  # the oracle's walk so far: its next action
        actions = [action for key, action in self.pages if key == best]
        shown = prompt.count(best_text, start)
        return actions[min(shown, len(actions)) - 1]

    def _texts(self) -> dict[str, str]:
        """Each text a prompt may show a page by (its key, and its blind form), and the key."""
        texts = {key: key for key, _ in self.pages}
        for (key, _), blind in zip(self.pages, self.blind):
            if blind and blind not in texts:
                texts[blind] = key
        return texts


def _key(observation: str) -> str:
    return observation.strip()[:_KEY_CHARS]


def oracle_book(benchmark_name: str, split: str, instance_id: str) -> Book:
    """The book of one instance: its oracle played once, from a fresh env (seed 0)."""
    benchmark = registry.get_benchmark(benchmark_name)
    noop = benchmark.noop_action
    if not benchmark.has_oracle or not split or not instance_id:
        return Book((), noop)
    instance = benchmark.instance(split, instance_id)
    env: Any = benchmark.make_env(instance, 0)
    pages: list[tuple[str, str]] = []
    blind: list[str] = []
    try:
        oracle = benchmark.oracle(env)  # before reset, as the runner: an oracle may set the env up
        observation = env.reset()
        first = observation.text
        start = _key(benchmark.without_task(first, first))
        for _ in range(min(benchmark.budget(instance), _MAX_BOOK_STEPS)):
            action = oracle.next_action(observation)
            key = _key(observation.text)
            if key:
                pages.append((key, action))
                blind.append(_key(benchmark.without_outcome(
                    benchmark.without_task(observation.text, first))))
            step = env.step(action)
            observation = step.observation
            if step.done:
                break
    finally:
        env.close()
    return Book(tuple(pages), noop, start if pages and start != pages[0][0] else "",
                tuple(b if b != key else "" for b, (key, _) in zip(blind, pages)))


class ScriptedModel:
    """The replies of the scripted model, books kept per instance."""

    def __init__(self) -> None:
        self._books: dict[tuple[str, str, str], Book] = {}
        self._warned: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def _warn_once(self, benchmark: str, split: str, error: Exception) -> None:
        # Silent no-op books look like a model that cannot play: say why, once per split.
        with self._lock:
            if (benchmark, split) in self._warned:
                return
            self._warned.add((benchmark, split))
        first_line = (str(error).splitlines() or [type(error).__name__])[0]
        print(f"scripted model: no oracle book for {benchmark or '?'} {split or '?'} "
              f"(it answers {_noop(benchmark)!r}): {first_line}", file=sys.stderr, flush=True)

    def book(self, benchmark: str, split: str, instance: str) -> Book:
        key = (benchmark, split, instance)
        with self._lock:
            book = self._books.get(key)
        if book is None:
            try:
                book = oracle_book(benchmark, split, instance)
            except Exception as error:  # an unknown name, missing data: a book without pages
                book = Book((), _noop(benchmark))
                self._warn_once(benchmark, split, error)
            with self._lock:
                self._books[key] = book
        return book

    def reply(self, request: dict[str, Any], tags: dict[str, str]) -> Any:
        """The reply to a chat request: text, or `{"tool_call": {...}}`."""
        benchmark = tags.get("benchmark", "")
        book = self.book(benchmark, tags.get("split", ""), tags.get("instance", ""))
        step = int(tags["step"]) if tags.get("step", "").isdigit() else None
        messages = request.get("messages")
        tools = request.get("tools")
        scripted = ScriptedRequest(
            role=tags.get("role", "default"),
            messages=tuple(m for m in messages if isinstance(m, dict)) if isinstance(messages, list) else (),
            tools=tuple(t for t in tools if isinstance(t, dict)) if isinstance(tools, list) else (),
            benchmark=benchmark, act=lambda text: book.act(text, step))
        replier = _replier(tags.get("method", ""))
        answer = replier(scripted) if replier is not None else None
        if answer is None:
            answer = generic_reply(scripted)
        if isinstance(answer, ToolCall):
            return {"tool_call": {"name": answer.name, "arguments": dict(answer.arguments)}}
        return str(answer)


def _replier(name: str) -> Any:
    """The `scripted_reply` of the method or context provider `name`, if there is one."""
    for names, load in ((registry.method_names, registry.method_class),
                        (registry.context_names, registry.context_class)):
        try:
            if name in names():
                return load(name).scripted_reply
        except Exception:  # a plugin that fails to load: the generic reply
            return None
    return None


def _noop(benchmark: str) -> str:
    try:
        return registry.benchmark_class(benchmark).noop_action
    except Exception:
        return "look"
