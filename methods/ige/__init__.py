"""Intelligent Go-Explore (Lu, Hu, Clune; ICLR 2025): Go-Explore with a foundation model
choosing where to return to and what to try, within one episode of the harness.

An episode alternates Go and Explore, as the authors' TextWorld code does:
- the first iteration explores from the start;
- Go: one LLM call (role `select`) sees the numbered archive (per state: actions from the
  start, score where shown, place, inventory, actions tried from it) and answers
  `Choose > N` and `Remove > [...]`; an answer without a valid choice gets a uniformly
  random state. The chosen state is returned to with `tools.restore` (the env's native
  restore, or a reset and a replay whose actions are steps of the episode);
- Explore: up to `steps_per_iteration` actions, each one LLM call (role `explore`) that sees
  the whole path from the start, the actions already tried from the current state and the
  admissible commands (`tools.valid_actions()`; listed when at most `max_listed_actions`),
  and ends with `> ACTION`; the text is matched to an admissible command (`replies.py`).
  `authors=true` is the authors' explore step instead: no commands shown, the reply
  played as written, the no-op (`look`) when it has no `> ACTION` line (records say which:
  `extra.ige_prompt`).
  Every state reached goes through the archive's update rule (`archive.py`) with its
  snapshot; a step that loses the game ends the branch (never archived) and the iteration.

Winning ends the episode (the harness); so do the step budget (replayed actions count) and
`max_iterations`. Cells are (location, inventory, score) where the env reveals them
(`cells.py`). IGE keeps nothing across episodes: all its memory is the episode's archive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Optional

from lifebench.api import (Benchmark, EndEpisode, EpisodeTools, Method, MethodNeeds, Observation,
                           RoleParams, StreamContext, TaskInfo, episode_rng)

from lifebench.methods.ige import prompts, scripted
from lifebench.methods.ige.archive import KEPT, Archive, Entry, Trace, forced_overwrite
from lifebench.methods.ige.cells import Cell, CellReader, place_in
from lifebench.methods.ige.replies import marked_action, match_action, parse_action, parse_choice

# Explore steps per iteration when the config leaves it to the benchmark (0): the paper's
# TextWorld cooking value, and values for the others (see README.md).
STEPS_PER_ITERATION = {"textworld": 5, "alfworld": 5, "scienceworld": 10, "plancraft": 3}
DEFAULT_STEPS_PER_ITERATION = 5

# Observations worth showing when choosing a state (the authors' cooking prompt shows the
# recipe once read, and whether each state's path has read it): benchmark -> (marker, what).
NOTES = {"textworld": ("Recipe #", "the recipe")}

SELECT, EXPLORE = "select", "explore"


@dataclass(frozen=True)
class IgeConfig:
    # Explore actions per iteration; 0: the benchmark's default (STEPS_PER_ITERATION).
    steps_per_iteration: int = 0
    # Go-Explore iterations per episode; 0: until the step budget ends the episode.
    max_iterations: int = 0
    # Longest path from reset explored from (the authors' in-game horizon); 0: none.
    horizon: int = 0
    # Steps of the path shown when choosing an action; 0: all (the authors).
    history: int = 0
    # Admissible commands are listed in the action prompt when there are at most this many.
    max_listed_actions: int = 200
    # difflib similarity from which free text is taken as a related admissible command.
    match_cutoff: float = 0.5
    # The authors' explore step: no admissible commands shown (nor their count) and the
    # reply played as written (only an exact command is matched); max_listed_actions and
    # match_cutoff are then unused.
    authors: bool = False
    # Characters of a state's place, inventory and last observation shown when choosing.
    entry_chars: int = 400
    # The authors' TextWorld sampling.
    temperature: float = 0.3
    top_p: float = 0.2
    max_tokens: int = 1024
    llm_seed: Optional[int] = None  # mixed with the stream's seed into each request's seed

    def __post_init__(self) -> None:
        if min(self.steps_per_iteration, self.max_iterations, self.horizon, self.history,
               self.max_listed_actions, self.entry_chars) < 0:
            raise ValueError("counts must be >= 0")
        if not 0.0 < self.match_cutoff <= 1.0:
            raise ValueError("match_cutoff must be in (0, 1]")


class IgeMethod(Method):
    name = "ige"
    # bump when a change alters what it does (lifebench.api.Method.version); 2: with
    # `authors`, a reply with no `> ACTION` line plays the no-op, as the authors' `look`
    version = "2"
    Config = IgeConfig
    needs = MethodNeeds(llm=True, restore=True)
    # Nothing is kept across episodes (the archive is the episode's), so streams may be
    # sharded per episode.
    stateless = True
    context_use = "after the manual in the system message of both prompts (state choice and action)"
    # the scripted model's replies to both roles (scripted.py)
    scripted_reply = classmethod(lambda cls, request: scripted.scripted_reply(request))

    @classmethod
    def stream_problem(cls, config: Any, benchmark: Benchmark, split: str) -> Optional[str]:
        if not benchmark.budget_curves:
            return (f"IGE searches for a state that reaches the goal and returns to earlier states; "
                    f"{benchmark.name}'s success is not reaching a goal (Crafter: staying alive for "
                    f"the whole episode, scored by one life's achievements), and returns would "
                    f"undo deaths, so an IGE episode would not be one of its episodes")
        return None

    def setup(self, ctx: StreamContext) -> None:
        super().setup(ctx)
        c = self.config
        self.params = RoleParams(temperature=c.temperature, top_p=c.top_p,
                                 max_tokens=c.max_tokens, seed=c.llm_seed)
        self.steps_per_iteration = c.steps_per_iteration or \
            STEPS_PER_ITERATION.get(ctx.benchmark.name, DEFAULT_STEPS_PER_ITERATION)
        self.note = NOTES.get(ctx.benchmark.name)

    # -- episode
    def begin_episode(self, task: TaskInfo, tools: EpisodeTools) -> None:
        if tools.snapshot is None or tools.restore is None:
            raise RuntimeError("IGE needs the harness's snapshot/restore (needs.restore)")
        self.task = task
        self.tools = tools
        self.system = prompts.system(task.manual())
        self.rng = episode_rng(task.seed, task.benchmark, task.split, task.instance.instance_id,
                               task.trial, "ige")
        self.archive = Archive()
        self.reader: Optional[CellReader] = None
        self.trace: Optional[Trace] = None
        self.key: Optional[Hashable] = None       # the current state's cell
        self.pending: Optional[str] = None        # the action sent, whose result comes next
        self.branch_lost = False
        self.explored = 0                         # actions of this iteration
        self.actions = 0                          # actions chosen in the episode
        self._valid: Optional[list[str]] = None   # admissible commands of the current state
        self.facts: Optional[str] = None          # NOTES' observation, once seen
        self.counts = {"iterations": 0, "returns": 0, "continued": 0, "random_choices": 0,
                       "lost_branches": 0, "return_mismatches": 0, "added": 0, "replaced": 0,
                       "forced": 0, "kept": 0, "unmatched_actions": 0, "close_matches": 0,
                       "unmarked_replies": 0}
        self.llm_calls = {SELECT: 0, EXPLORE: 0}
        self.end_reason: Optional[str] = None     # why IGE ended the episode itself

    def act(self, observation: Observation) -> str:
        self._valid = None
        if self.trace is None:
            self._start(observation)
        else:
            self._observe(observation)
        if self._iteration_over():
            observation = self._go()
        return self._explore(observation)

    # -- states
    def _start(self, observation: Observation) -> None:
        self.reader = CellReader(self.tools.query, self._valid_actions)
        place = place_in(observation.text)
        self.trace = Trace(observation.text, (), place, observation.text if place else None)
        self.counts["iterations"] = 1
        self._store(observation, forced=False)

    def _observe(self, observation: Observation) -> None:
        """The result of the pending action: archive the state, or end a lost branch."""
        assert self.trace is not None and self.pending is not None
        action, self.pending = self.pending, None
        self.trace = self.trace.extended(action, observation.text, place_in(observation.text))
        self._see(observation.text)
        if self.tools.branch_over is not None and self.tools.branch_over():
            self.branch_lost = True
            self.counts["lost_branches"] += 1
            if self.key is not None:
                self.archive.note_lost(self.key, action)
            self.key = None
            return
        self._store(observation, forced_overwrite(self.task.benchmark, action))

    def _store(self, observation: Observation, forced: bool) -> None:
        assert self.reader is not None and self.trace is not None
        cell: Cell = self.reader.read(observation, self.trace.place)
        self.key = cell.key
        outcome = self.archive.wants(cell, len(self.trace), forced)
        self.counts[outcome] += 1
        if outcome != KEPT:
            self.archive.offer(Entry(cell, self.trace, self.tools.snapshot(), self.actions),
                               forced=forced)

    def _see(self, text: str) -> None:
        if self.note and self.facts is None and self.note[0] in text:
            self.facts = text

    def _iteration_over(self) -> bool:
        if self.branch_lost or self.explored >= self.steps_per_iteration:
            return True
        horizon = self.config.horizon
        return bool(horizon) and self.trace is not None and len(self.trace) >= horizon

    def _valid_actions(self) -> list[str]:
        if self._valid is None:
            self._valid = list(self.tools.valid_actions())
        return self._valid

    # -- Go
    def _go(self) -> Observation:
        """Choose an archive state (one LLM call when there is a choice), drop the states
        the model names, and return to the chosen one; the observation there."""
        if self.config.max_iterations and self.counts["iterations"] >= self.config.max_iterations:
            self.end_reason = "max_iterations"
            raise EndEpisode(f"IGE ran its {self.config.max_iterations} iterations")
        horizon = self.config.horizon
        listed = [e for e in self.archive.listed() if not horizon or len(e.trace) < horizon]
        if not listed:
            self.end_reason = "horizon"
            raise EndEpisode("every archive state is at the horizon")
        self.counts["iterations"] += 1
        self.explored = 0
        choice = 0
        if len(listed) > 1:
            reply = self._chat(SELECT, self._select_prompt(listed))
            choice_or_none, removals = parse_choice(reply, len(listed))
            if choice_or_none is None:
                self.counts["random_choices"] += 1
                choice = self.rng.randrange(len(listed))
            else:
                choice = choice_or_none
            self._remove(listed, removals, choice)
        entry = listed[choice]
        assert self.trace is not None
        if not self.branch_lost and entry.trace.steps == self.trace.steps:
            self.counts["continued"] += 1  # already there: no return needed
            observation = Observation(self.trace.observation)
        else:
            self.counts["returns"] += 1
            # a replay whose budget runs out ends the episode inside this call (the harness)
            observation = self.tools.restore(entry.snapshot)
            self._valid = None  # another state's admissible commands
            if observation.text.strip() != entry.trace.observation.strip():
                self.counts["return_mismatches"] += 1
        self.branch_lost = False
        self.trace = entry.trace
        self.key = entry.key
        return observation

    def _remove(self, listed: list[Entry], removals: list[int], choice: int) -> None:
        """Drop the states the model names, but never the chosen one, nor (where states
        have scores) one with the highest score: what the prompt asks."""
        keys = [e.key for e in listed]
        whole = self.archive.listed()
        index = {e.key: i for i, e in enumerate(whole)}
        best = self.archive.best_score()
        keep = {index[keys[choice]]}
        keep |= {i for i, e in enumerate(whole) if best is not None and e.cell.score == best}
        self.archive.remove([index[keys[r]] for r in removals], keep)

    def _select_prompt(self, listed: list[Entry]) -> str:
        blocks = []
        for i, entry in enumerate(listed):
            note = None
            if self.note:
                read = any(self.note[0] in o for _, o in entry.trace.steps) or \
                    self.note[0] in entry.trace.first
                note = f"{self.note[1].capitalize()} was {'read' if read else 'not read'} on its path."
            blocks.append(prompts.entry_block(i, entry, self.archive.tried_at(entry.key),
                                              self.archive.lost.get(entry.key, []), note,
                                              self.config.entry_chars))
        facts = f"{self.note[1].capitalize()}, as read earlier:\n{self.facts}" \
            if self.note and self.facts else None
        assert self.trace is not None
        task = self.ctx.benchmark.task_text(self.trace.first)
        scored = any(e.cell.score is not None for e in listed)
        return prompts.select(task, facts, blocks, scored)

    # -- Explore
    def _explore(self, observation: Observation) -> str:
        assert self.trace is not None
        valid = self._valid_actions()
        authors = self.config.authors
        listed = valid if not authors and len(valid) <= self.config.max_listed_actions else None
        tried = self.archive.tried_at(self.key) if self.key is not None else []
        lost = self.archive.lost.get(self.key, []) if self.key is not None else []
        history = prompts.history(self.trace.first, self.trace.steps, self.config.history)
        reply = self._chat(EXPLORE, prompts.explore(history, tried, lost, listed,
                                                    None if authors else len(valid)))
        # the authors' code plays `look` (here the benchmark's no-op) for a reply with no
        # `> ACTION` line; ours takes its last line
        said = (marked_action(reply) or "") if authors else parse_action(reply)
        action, how = match_action(said, valid, self.ctx.benchmark.guarded_actions,
                                   self.task.noop_action, 1.0 if authors else self.config.match_cutoff)
        if how == "noop" and not said:
            self.counts["unmarked_replies"] += 1
        elif how == "unmatched":
            self.counts["unmatched_actions"] += 1
        elif how == "close":
            self.counts["close_matches"] += 1
        if self.key is not None:
            self.archive.note_tried(self.key, action)
        self.pending = action
        self.explored += 1
        self.actions += 1
        return action

    def _chat(self, role: str, user: str) -> str:
        self.llm_calls[role] += 1
        messages = [{"role": "system", "content": self.system}, {"role": "user", "content": user}]
        return self.ctx.llm.chat(messages, role=role, params=self.params).text

    # -- records
    def episode_extra(self) -> dict[str, Any]:
        archive = getattr(self, "archive", None)
        if archive is None:
            return {}
        extra: dict[str, Any] = {
            "ige_archive_size": len(archive), "ige_archive_largest": archive.largest,
            "ige_removed": archive.removed, "ige_llm_calls": dict(self.llm_calls),
            "ige_steps_per_iteration": self.steps_per_iteration,
            "ige_prompt": "authors" if self.config.authors else "listed",
        }
        extra.update({f"ige_{k}": v for k, v in self.counts.items()})
        best = archive.best_score()
        if best is not None:
            extra["ige_best_score"] = best
        if self.reader is not None:
            extra["ige_cell_sources"] = self.reader.sources()
        if self.end_reason is not None:
            extra["ige_end"] = self.end_reason
        return extra


__all__ = ["IgeConfig", "IgeMethod"]
