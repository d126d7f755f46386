"""A context build is blind to how its test task is scored: on every benchmark, no request
of an AutoContext build holds what the benchmark declares reveals reward or the episode's
end (`Benchmark.outcome_signals`). One run builds a context on the first instance of each
benchmark that declares some, against the scripted model, with the Planner's first TODO
routed where the signals are: TextWorld's winning path (its points, "*** The End ***",
"You scored ..."), Plancraft's `impossible` (the package's termination line); Crafter's
achievements line is in every observation. ALFWorld and ScienceWorld declare none (no
build of theirs can hold one)."""

from __future__ import annotations

import functools
import json
import re

import pytest

from lifebench import registry
from lifebench.testing import llm_server as local_server, read_records, run_cli

# the built-in benchmarks, and the split of those that declare signals
BENCHMARKS = ("alfworld", "scienceworld", "plancraft", "textworld", "crafter")
SIGNALLED = {"plancraft": "val", "textworld": "ige-cooking", "crafter": "seeds-100"}
PLAN_OBSERVATIONS = r"(?s)^# AutoContext planner: propose one TODO for the Observations.*"
IMPOSSIBLE = "impossible: nothing here can be crafted"
SPEC = """
benchmarks = {benchmarks}
methods = ["react"]
contexts = ["autocontext"]
seeds = [0]
trials = 1
limit = 1
budget = [1]
cache = "off"
workers = 0
[splits]
{splits}
[benchmark_args.crafter]
length = 30
[context_args.autocontext]
explore_steps = 80
max_iterations = 1
max_length = 60
plan_retries = 0
subagent_steps = 2
loop_control = false
"""


@functools.lru_cache(maxsize=None)
def winning_path(benchmark: str, split: str) -> tuple[str, ...]:
    """The first instance's winning policy, from its start (the context's seed, 0)."""
    bench = registry.get_benchmark(benchmark)
    env = bench.make_env(bench.instances(split)[0], 0)
    try:
        env.reset()
        return tuple(env.policy())
    finally:
        env.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Per benchmark: its build's requests and its saved context (document, forest)."""
    walk = winning_path("textworld", SIGNALLED["textworld"])
    routed = [("a TextWorld cooking game", " -> ".join(["init_state", *walk])),
              ("Craft an item of type", f"init_state -> {IMPOSSIBLE}")]
    script = [{"match": PLAN_OBSERVATIONS + re.escape(marker), "replies": [f"<todo>\n{todo}\n</todo>"]}
              for marker, todo in routed]
    out = tmp_path_factory.mktemp("blind") / "out"
    spec = out.parent / "spec.toml"
    spec.write_text(SPEC.format(benchmarks=json.dumps(list(SIGNALLED)),
                                splits="\n".join(f'{b} = ["{s}"]' for b, s in SIGNALLED.items())))
    with local_server(policy="scripted", script=script) as server:
        result = run_cli("run", str(spec), "--no-progress", "--model", "m", "--base-url",
                         server.url, "--out", str(out), timeout=600)
        assert result.returncode == 0, result.stderr
        requests = server.requests()
    builds = [json.loads(line) for line in (out / "contexts.jsonl").read_text().splitlines()]
    assert [b["status"] for b in builds] == ["ok"] * len(SIGNALLED)
    assert len(read_records(out)) == len(SIGNALLED)
    by_benchmark, start = {}, 0
    for build in builds:  # built one after the other, before any episode
        asked = requests[start:start + build["llm_calls"]]
        assert asked and all(r["messages"][0]["content"].startswith("# AutoContext") for r in asked)
        saved = json.loads((out / "contexts" / f"{build['key']}.json").read_text())
        by_benchmark[build["benchmark"]] = (asked, saved)
        start += build["llm_calls"]
    return by_benchmark


def texts(requests: list[dict]) -> list[str]:
    return [str(m.get("content") or "") for r in requests for m in r["messages"]]


def forest_actions(saved: dict) -> set[str]:
    def walk(nodes):
        for node in nodes:
            yield node["action"]
            yield from walk(node.get("children", []))
    return {a for state in saved["artefacts"]["forest"]["states"] for a in walk(state["tree"])}


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_no_build_request_holds_what_the_benchmark_declares_reveals_the_outcome(benchmark, request):
    cls = registry.benchmark_class(benchmark)
    assert "outcome_signals" in vars(cls) and cls.outcome_signals is not None  # declared
    assert bool(cls.outcome_signals) == (benchmark in SIGNALLED)
    if benchmark not in SIGNALLED:
        return
    asked, saved = request.getfixturevalue("built")[benchmark]
    leaks = [(p, t) for p in cls.outcome_signals for t in texts(asked) if re.search(p, t, re.M)]
    assert not leaks, leaks[:1]
    if benchmark == "textworld":  # the build played the winning path to the game's end
        assert winning_path(benchmark, SIGNALLED[benchmark])[-1] in forest_actions(saved)
        for said in ("Your score has just gone up", "*** The End ***", "You scored"):
            assert not any(said in t for t in texts(asked)) and said not in saved["document"]
    if benchmark == "plancraft":  # the build declared the task impossible: the episode ended
        assert IMPOSSIBLE in forest_actions(saved)
    if benchmark == "crafter":  # observations reached the build, their last line cut
        assert any("Your view" in t for t in texts(asked))
        assert not any("Achievements so far" in t for t in texts(asked))
