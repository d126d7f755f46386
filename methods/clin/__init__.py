"""CLIN (Majumder et al. 2023), the ADAPT setting: an executor that acts from the task, its
learnings about this instance and the recent turns, and a summariser that rewrites the
learnings after every trial. STEP (`methods/step`) builds on it.

Per step the executor sees the benchmark's manual, the task with the instance's
learnings, the last `history` turns (its own replies as the assistant's turns, each
followed by the action played and the world's answer) and what the env tells for free
(`look`, `inventory`, where it answers them), and writes the learnings it used, a
rationale and one action (read tolerantly, `replies.py`; replies not in the form asked
are counted in the record). The action is mapped to a valid action (`matching.py`): exact,
or the nearest by sentence-embedding similarity at or above `match_threshold`; below it
the model is told the action matches nothing and asked again, and on the last of
`match_tries` the nearest is played. The episode ends early (the record's `extra.stopped`)
after `repeat_stop` identical actions in a row, and, only with the privileged `gold_stop`
(the papers' spec turns it on), at 1.5x the instance's gold path. After each trial the
summariser writes the new learnings from the trial's trace, its evaluation report and the
learnings of the instance's last `memory_trials` trials. Memory is per instance (trials
of one instance share it; another instance starts empty): CLIN ADAPT.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

from lifebench.api import (EndEpisode, EpisodeOutcome, EvaluationProtocol, EpisodeTools, Method, MethodNeeds,
                           Observation, RoleParams, StreamContext, TaskInfo, mark_history)
from lifebench.embeddings import DEFAULT_MODEL, get_embedder

from lifebench.methods.clin import prompts, scripted
from lifebench.methods.clin.matching import ActionMatcher
from lifebench.methods.clin.memory import InstanceMemory, Trial, report, summary_prompt, trace
from lifebench.methods.clin.replies import Field, FormatCounts, last_line, read_field

# CLIN's and STEP's length stop: 1.5 times the gold path.
GOLD_STOP_FACTOR = 1.5
GOLD_STOP_REASON = f"{GOLD_STOP_FACTOR:g}x the gold path"
TASK_COMPLETE = re.compile(r"\btask[ _]?complete\b", re.I)
# the code's hint on the one form whose OBJ is not what it acts on
MIX_FORM = ("mix OBJ", "mix OBJ (OBJ: the container holding what is to be mixed)")


@dataclass(frozen=True)
class ClinConfig:
    history: int = 5              # recent turns in the executor's prompt (CLIN's code: 5)
    history_tokens: int = 2500    # ... within this many tokens, about 4 characters each (CLIN's)
    memory_trials: int = 3        # earlier trials whose learnings the summariser reads
    # A match's cosine. Not CLIN's operating point carried over (its 0.9 is for its BERT
    # model, and how it was set is not published): our heuristic for MiniLM, the highest
    # recall at precision 0.95 on template paraphrases and near-misses of valid actions
    # (README: the calibration), not on what models actually write.
    match_threshold: float = 0.88
    match_tries: int = 3          # executor replies per step; the last is played as matched
    match_shortlist: int = 2000   # valid actions embedded per match, by shared words (README: calibration)
    repeat_stop: int = 5          # end after this many identical actions in a row (0: never)
    complete_stop: bool = True    # end when the executor's action says the task is complete (code)
    gold_stop: bool = False       # end at 1.5x the gold path's length (privileged)
    embedding_model: str = DEFAULT_MODEL
    temperature: float = 0.0
    max_tokens: Optional[int] = 256
    summary_max_tokens: Optional[int] = 1000
    llm_seed: Optional[int] = None

    def __post_init__(self) -> None:
        if self.history < 1 or self.history_tokens < 1 or self.memory_trials < 0 or self.match_tries < 1:
            raise ValueError("history, history_tokens and match_tries must be >= 1, memory_trials >= 0")
        if not 0 <= self.match_threshold <= 1:
            raise ValueError("match_threshold must be between 0 and 1")
        if self.repeat_stop < 0 or self.match_shortlist < 1:
            raise ValueError("repeat_stop must be >= 0 and match_shortlist >= 1")


def read_action(reply: str) -> tuple[str, Field]:
    """The reply's action: its last `Action:` field (read tolerantly: `replies.py`), else
    its last non-empty line; and the field as read, for the format counts."""
    found = read_field(reply, "Action")
    return (found.value if found.found else last_line(reply)), found


def parse_action(reply: str) -> str:
    """The reply's action (`read_action`)."""
    return read_action(reply)[0]


def with_feedback(messages: list[dict[str, Any]], feedback: str) -> list[dict[str, Any]]:
    """The same request with `feedback` after its last message, as CLIN's code asks again
    (the reply that is retried is not kept; only the latest feedback is shown)."""
    last = messages[-1]
    return [*messages[:-1], {**last, "content": f"{last['content']}\n\n{feedback}"}]


def gold_cap(benchmark: Any, instance: Any) -> Optional[int]:
    """1.5x the instance's gold path, where the benchmark knows it (privileged)."""
    gold = benchmark.gold_length(instance)
    return int(GOLD_STOP_FACTOR * gold) if gold else None


def within_tokens(turns: list[tuple[str, str, str]], budget: int) -> list[tuple[str, str, str]]:
    """The newest turns whose text fits `budget` tokens (estimated at 4 characters each),
    newest first in the count; as CLIN's code, the turn that crosses the budget is kept,
    and so is always the newest."""
    kept, used = 0, 0
    for reply, _, observation in reversed(turns):
        kept += 1
        used += (len(reply) + len(observation)) // 4
        if used >= budget:
            break
    return turns[len(turns) - kept:]


def stop_note(stopped: Optional[str]) -> str:
    """What the memory writer's report says of an early stop: the reason, except for the
    gold-path stop, whose reason would tell the writer the privileged gold length."""
    if not stopped or stopped == GOLD_STOP_REASON:
        return ""
    return f" (Stopped early: {stopped}.)"


def stop_reason(played: list[str], repeat_stop: int, step_cap: Optional[int]) -> Optional[str]:
    """CLIN's early stops: the last `repeat_stop` actions identical (0: never), or the
    actions played reaching `step_cap` (1.5x the gold path, when asked for)."""
    if repeat_stop and len(played) >= repeat_stop and len(set(played[-repeat_stop:])) == 1:
        return f"{repeat_stop} identical actions"
    if step_cap is not None and len(played) >= step_cap:
        return GOLD_STOP_REASON
    return None


def free_state(tools: EpisodeTools, observation: str) -> str:
    """What the env tells for free about the current state (`look`, `inventory`), in the
    executor's words; nothing the observation already says in full."""
    parts = []
    for name, template in (("look", prompts.STATE), ("inventory", prompts.INVENTORY)):
        try:
            text = tools.query(name).strip()
        except ValueError:
            continue
        if text and text not in observation:
            parts.append(template.format(**{name: text}))
    return "".join(parts)


# The vocabulary block's bound: a crowded room names hundreds of objects.
VOCABULARY_CHARS = 4000


def world_vocabulary(tools: EpisodeTools) -> str:
    """The objects an action may name here and the forms an action may take, where the env
    tells them (ScienceWorld's `objects` and `action_templates`), as both CLIN's and
    STEP's code show their executors. As there, the focus form is left out (a wrong focus
    ends the task: the manual says when to focus) and so is resetting the task."""
    try:
        objects = tools.query("objects").strip()
        templates = [t.strip() for t in tools.query("action_templates").splitlines()]
    except ValueError:
        return ""
    forms = [MIX_FORM[1] if t == MIX_FORM[0] else t
             for t in templates if t and "focus" not in t and "reset" not in t]
    if not objects or not forms:
        return ""
    if len(objects) > VOCABULARY_CHARS:
        objects = objects[:VOCABULARY_CHARS].rsplit("\n", 1)[0] + "\n(and more)"
    return prompts.VOCABULARY.format(objects=objects, forms="\n".join(forms))


class ClinMethod(Method):
    name = "clin"
    version = "3"  # bump when a change alters what it does (lifebench.api.Method.version)
    Config = ClinConfig
    needs = MethodNeeds(llm=True)
    context_use = "after the manual in the executor's system message"

    @classmethod
    def protocol(cls, benchmark: Any) -> EvaluationProtocol:
        return EvaluationProtocol(
            trials=5, scored_trial="max",
            source="STEP §4.1 (CLIN ADAPT, 5 episodes per task, the highest score "
                   "taken); the same elsewhere, as CLIN ADAPT learns only across trials")
    # The scripted model's reply for each of CLIN's roles (`scripted.py`).
    scripted_reply = classmethod(lambda cls, request: scripted.scripted_reply(request))

    def setup(self, ctx: StreamContext) -> None:
        super().setup(ctx)
        self.params = RoleParams(temperature=self.config.temperature,
                                 max_tokens=self.config.max_tokens, seed=self.config.llm_seed)
        self.summary_params = RoleParams(temperature=self.config.temperature,
                                         max_tokens=self.config.summary_max_tokens,
                                         seed=self.config.llm_seed)
        self.matcher = ActionMatcher(get_embedder(self.config.embedding_model),
                                     self.config.match_threshold, ctx.benchmark.guarded_actions,
                                     self.config.match_shortlist)
        self.memory = InstanceMemory()

    # -- an episode

    def begin_episode(self, task: TaskInfo, tools: EpisodeTools) -> None:
        self.task, self.tools = task, tools
        self.first: Optional[str] = None
        self.turns: list[tuple[str, str, str]] = []  # (reply, action played, observation)
        self.feedback = 0  # replies that matched no valid action
        self.formats = FormatCounts()
        self.stopped: Optional[str] = None
        self.step_cap = gold_cap(self.ctx.benchmark, task.instance) if self.config.gold_stop else None

    def act(self, observation: Observation) -> str:
        if self.first is None:
            self.first = observation.text
        elif self.turns:
            reply, action, _ = self.turns[-1]
            self.turns[-1] = (reply, action, observation.text)
        self._check_stops()
        messages = asked = self.executor_messages(observation.text)
        valid = self.tools.valid_actions()
        for attempt in range(self.config.match_tries):
            reply = self.ctx.llm.chat(asked, role="actor", params=self.params).text
            text, found = read_action(reply)
            self.formats.note("actor", found)
            if self.config.complete_stop and TASK_COMPLETE.search(text):
                self.stopped = "the executor said the task is complete"
                raise EndEpisode(self.stopped)
            match = self.matcher.match(text, valid)
            if match.accepted or attempt == self.config.match_tries - 1:
                action = match.action or text or self.task.noop_action
                self.turns.append((reply, action, ""))
                return action
            self.feedback += 1
            asked = with_feedback(messages, prompts.NO_MATCH.format(action=text))
        raise AssertionError("unreachable: the last try returns")

    def _check_stops(self) -> None:
        self.stopped = stop_reason([action for _, action, _ in self.turns],
                                   self.config.repeat_stop, self.step_cap)
        if self.stopped:
            raise EndEpisode(self.stopped)

    def executor_messages(self, observation: str) -> list[dict[str, Any]]:
        """As CLIN's code lays them out: the task (the first observation states it, and it
        stays in view however long the episode) with the learnings in one message, then
        each recent turn as the model's whole reply and the action played with what the
        world answered, then the current state and the request."""
        messages = [{"role": "system",
                     "content": prompts.EXECUTOR_SYSTEM.format(instructions=self.task.manual().strip())}]
        first = prompts.TURN.format(observation=self.first)
        learnings = self.memory.learnings(self.task.instance.instance_id)
        if learnings:
            first += "\n\n" + prompts.LEARNINGS.format(learnings=learnings)
        messages.append({"role": "user", "content": first})
        recent = within_tokens(self.turns[-self.config.history:], self.config.history_tokens)
        if len(recent) < len(self.turns):
            messages[-1]["content"] += "\n\n" + prompts.OMITTED.format(n=len(self.turns) - len(recent))
        turns = []
        for reply, played, seen in recent:
            turns.append({"role": "assistant", "content": reply})
            turns.append({"role": "user", "content": prompts.PLAYED.format(action=played, observation=seen)})
        messages += mark_history(turns, keep_last=2)  # the task and the latest turn stay
        state = free_state(self.tools, observation) + world_vocabulary(self.tools)
        messages[-1] = {"role": "user",
                        "content": f"{messages[-1]['content']}\n\n{prompts.NEXT.format(state=state, complete=prompts.COMPLETE if self.config.complete_stop else '')}"}
        return messages

    def end_episode(self, outcome: EpisodeOutcome) -> None:
        instance_id = outcome.task.instance.instance_id
        report_text = report(outcome, self.ctx.benchmark.score_range) + stop_note(self.stopped)
        prompt = summary_prompt(trace(self.first or "", outcome.transitions), report_text,
                                self.memory.last(instance_id, self.config.memory_trials))
        reply = self.ctx.llm.chat([{"role": "system", "content": prompts.SUMMARY_SYSTEM},
                                   {"role": "user", "content": prompt}],
                                  role="summary", params=self.summary_params)
        self.memory.add(instance_id, Trial(reply.text.strip(), report_text))

    def episode_extra(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"match_feedback": self.feedback, **self.formats.extra()}
        if self.stopped:
            extra["stopped"] = self.stopped
        return extra

    def state(self) -> Any:
        return {"trials": self.memory.state()}

    def load_state(self, state: Any) -> None:
        self.memory.load((state or {}).get("trials"))
