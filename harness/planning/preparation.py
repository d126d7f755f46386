"""A method's preparation priced at the scale the run uses, from one measured preparation.

A preparation (`Method.prepare`) is mostly episodes: support rollouts, training episodes,
a manual's building tasks. Its calls, in order, show them: a run of calls of one role whose
prompts grow is one episode (a call whose prompt is shorter than the one before starts the
next). Measured at smoke scale, two things are smaller than at full scale:
- the number of episodes: the method declares the ratio (`EvaluationProtocol.smoke_scale`,
  read as full-scale episodes per smoke one);
- their length: a smoke config may cut its episodes short (InstructRAG's train_steps=5).
  At full scale an episode runs as long as the cell's own test episodes do (central), or
  to the benchmark's budget (high); as measured (low).
Prompts grow along an episode by what the measured episodes grew per call, capped at the
context window when one is known.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from lifebench.api.records import CallTokens, EpisodeRecord
from lifebench.planning.bootstrap import Estimate


@dataclass(frozen=True)
class MeasuredPreparation:
    """One preparation as it was played: its calls split into episodes."""

    calls: int
    tokens_in: int
    tokens_out: int
    episodes: tuple[tuple[int, ...], ...]  # each episode's prompts, in tokens
    scale: float  # episodes at the run's scale per measured one

    @property
    def growth(self) -> float:
        """Prompt tokens added per call along an episode (the episodes of 2+ calls)."""
        grown = sum(max(e[-1] - e[0], 0) for e in self.episodes if len(e) >= 2)
        spans = sum(len(e) - 1 for e in self.episodes if len(e) >= 2)
        return grown / spans if spans else 0.0


def measured(record: EpisodeRecord, scale: float) -> Optional[MeasuredPreparation]:
    """The preparation the record's episode carried (its first calls), or None."""
    note = record.extra.get("prepared")
    if not isinstance(note, dict) or note.get("reused") is not False or "llm_calls" not in note:
        return None
    calls = int(note.get("llm_calls") or 0)
    return MeasuredPreparation(calls, int(note.get("tokens_in") or 0),
                               int(note.get("tokens_out") or 0),
                               episodes_of(record.llm_call_tokens[:calls]), scale)


def episodes_of(calls: list[CallTokens]) -> tuple[tuple[int, ...], ...]:
    episodes: list[list[int]] = []
    previous: Optional[CallTokens] = None
    for call in calls:
        if previous is None or call.role != previous.role or call.tokens_in < previous.tokens_in:
            episodes.append([])
        episodes[-1].append(call.tokens_in)
        previous = call
    return tuple(tuple(e) for e in episodes)


def preparation_cost(prep: MeasuredPreparation, episode_calls: float, budget_calls: float,
                     window: Optional[int]) -> dict[str, Estimate]:
    """Calls and tokens of one preparation at the run's scale: low as measured (times the
    scale), central with its episodes as long as the cell's test episodes (`episode_calls`
    calls), high with them at the budget (`budget_calls`)."""
    if prep.scale == 1.0 or not prep.calls:
        return {"calls": Estimate.exact(prep.calls), "tokens_in": Estimate.exact(prep.tokens_in),
                "tokens_out": Estimate.exact(prep.tokens_out)}
    growth = prep.growth
    out_per_call = prep.tokens_out / prep.calls

    def played(length: float) -> tuple[float, float]:
        """(calls, prompt tokens) of the measured episodes stretched to `length` calls."""
        calls = prompts = 0.0
        for episode in prep.episodes:
            n = max(len(episode), length) if len(episode) >= 2 else 1
            calls += n
            prompts += prompt_tokens(episode[0], growth, n, window) if n > len(episode) else sum(episode)
        return calls, prompts

    low, central, high = played(0), played(episode_calls), played(max(budget_calls, episode_calls))
    return {"calls": Estimate(central[0], low[0], high[0]).scaled(prep.scale),
            "tokens_in": Estimate(central[1], low[1], high[1]).scaled(prep.scale),
            "tokens_out": Estimate(central[0], low[0], high[0]).scaled(prep.scale * out_per_call)}


def prompt_tokens(first: float, growth: float, calls: float, window: Optional[int]) -> float:
    """Prompt tokens of `calls` calls starting at `first` and growing by `growth` a call,
    each capped at `window`."""
    if window is None or first + growth * (calls - 1) <= window:
        return calls * first + growth * calls * (calls - 1) / 2
    if first >= window or growth <= 0:
        return calls * min(first, window)
    below = int((window - first) // growth) + 1  # the calls still under the window
    return below * first + growth * below * (below - 1) / 2 + (calls - below) * window
