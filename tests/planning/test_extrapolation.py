"""The pilot's extrapolation (`lifebench.planning.bootstrap`) and the preparation's pricing
(`lifebench.planning.preparation`), in-process on made-up pilots."""

from __future__ import annotations

import numpy as np
import pytest

from lifebench.api.records import CallTokens
from lifebench.planning.bootstrap import PilotSample, extrapolate
from lifebench.planning.preparation import (MeasuredPreparation, episodes_of, preparation_cost,
                                            prompt_tokens)

METRICS = ("calls", "tokens_in")


def sample(group: str, calls: list[float], remaining: float, long: tuple[bool, ...] = (),
           long_calls: float = 100.0) -> PilotSample:
    return PilotSample(group, tuple({"calls": c, "tokens_in": 1000 * c * c} for c in calls),
                       remaining, long, {"calls": long_calls, "tokens_in": 1000 * long_calls ** 2})


def test_the_same_pilot_gives_the_same_plan_and_the_central_estimate_is_jeffreys():
    samples = {"a": sample("x", [4, 9], 6), "b": sample("x", [5, 7], 6),
               "c": sample("y", [20, 30, 100], 5, (False, False, True))}
    first, again = extrapolate(samples, METRICS), extrapolate(dict(reversed(samples.items())), METRICS)
    assert first.cells == again.cells and first.total == again.total
    assert extrapolate(samples, METRICS, seed=1).cells["a"]["calls"] != first.cells["a"]["calls"]
    # no long instance in 2: a share of (0 + 1/2) / (2 + 1) of the rest runs to the budget
    assert first.cells["a"]["calls"].central == pytest.approx(6 * (5 / 6 * 6.5 + 1 / 6 * 100))
    # one in 3: (1 + 1/2) / 4, at the cost the pilot's long instance had
    assert first.cells["c"]["calls"].central == pytest.approx(5 * (2.5 / 4 * 25 + 1.5 / 4 * 100))
    for cell in first.cells.values():
        e = cell["calls"]
        assert e.low <= e.central <= e.high
    assert first.total["calls"].central == pytest.approx(
        sum(c["calls"].central for c in first.cells.values()))
    assert first.residuals == {"calls": 6, "tokens_in": 6}


def test_nothing_spent_is_nothing_to_spread():
    found = extrapolate({"random": sample("x", [0, 0], 6, long_calls=0.0)}, METRICS)
    assert found.cells["random"]["calls"].low == found.cells["random"]["calls"].high == 0.0


@pytest.mark.parametrize("share_long", [0.0, 0.2])
def test_the_interval_is_rarely_exceeded_under_its_own_assumptions(share_long):
    """Seeded simulation: 4 cells of 8 instances (one benchmark split: an instance's
    difficulty is the same for every method), log-normal costs, each instance running to
    its budget (8 times the cell's level) with probability `share_long`; a pilot of 2. Per
    cell, how often what the remaining 6 cost lies in, above and below the interval. With
    2 instances a pilot cannot rule out that a sixth of the rest run long: the interval
    errs on the side of too much (misses fall below it: 13-19% here), and what the rest
    cost is rarely above its high end."""
    rng = np.random.default_rng(7)
    inside = above = trials = 0
    for _ in range(150):
        difficulty, long = rng.normal(0, 0.6, 8), rng.random(8) < share_long
        samples, truth = {}, {}
        for cell, level in enumerate((2.0, 3.0, 4.0, 5.0)):
            at_budget = float(np.exp(level) * 8)
            costs = np.where(long, at_budget, np.exp(level + difficulty + rng.normal(0, 0.2, 8)))
            samples[cell] = PilotSample("x", tuple({"calls": c} for c in costs[:2]), 6,
                                        tuple(long[:2]), {"calls": at_budget})
            truth[cell] = costs[2:].sum()
        found = extrapolate(samples, ("calls",), replicates=400)
        for cell, actual in truth.items():
            e = found.cells[cell]["calls"]
            inside += e.low <= actual <= e.high
            above += actual > e.high
            trials += 1
    assert inside / trials >= 0.78 and above / trials <= 0.03, (inside / trials, above / trials)


def test_a_preparation_is_split_into_episodes_and_carried_to_full_scale():
    calls = [CallTokens("train", t, 10, False) for t in (100, 120, 140, 100, 120, 140)]
    calls.append(CallTokens("consolidate", 50, 30, False))
    assert episodes_of(calls) == ((100, 120, 140), (100, 120, 140), (50,))
    prep = MeasuredPreparation(7, 820, 90, episodes_of(calls), scale=10.0)
    cost = preparation_cost(prep, episode_calls=5, budget_calls=20, window=None)
    # low: as measured, ten times; central: each stepping episode 5 calls; high: 20
    assert cost["calls"].low == 70 and cost["calls"].central == 10 * (5 + 5 + 1)
    assert cost["calls"].high == 10 * (20 + 20 + 1)
    assert cost["tokens_in"].central == pytest.approx(10 * (2 * (5 * 100 + 20 * 10) + 50))
    at_scale = preparation_cost(MeasuredPreparation(7, 820, 90, prep.episodes, 1.0), 5, 20, None)
    assert at_scale["calls"].low == at_scale["calls"].high == 7


@pytest.mark.parametrize("first,growth,calls,window", [(100, 20, 50, None), (100, 20, 50, 500),
                                                       (600, 20, 10, 500), (100, 0, 7, 50)])
def test_prompts_are_capped_call_by_call(first, growth, calls, window):
    brute = sum(min(first + growth * k, window or float("inf")) for k in range(calls))
    assert prompt_tokens(first, growth, calls, window) == pytest.approx(brute)


def test_a_cost_without_a_budget_never_runs_long():
    """An instance-context build has no step budget: its central estimate is the builds'
    mean times the builds to make."""
    builds = PilotSample("x", ({"calls": 10.0}, {"calls": 14.0}), 5)
    found = extrapolate({"builds": builds}, ("calls",))
    assert found.cells["builds"]["calls"].central == pytest.approx(60.0)
