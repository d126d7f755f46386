"""RAP and InstructRAG on each of the five benchmarks (2 instances, the real environments,
the local OpenAI-compatible server): each learns from its benchmark's support split before
the scored episodes, and what it learned is in the records."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from conftest import read_records
from lifebench.registry import get_benchmark

# Small enough for a smoke run: few support instances, one meta-training iteration of one
# question, one candidate path, two-step training episodes, no ReAct example rollouts.
INSTRUCTRAG_SMALL = ("support_limit=4", "few_shot_limit=1", "iterations=1", "tasks_per_batch=1",
                     "questions_per_task=1", "k_paths=1", "pool_extra=0", "train_steps=2",
                     "examples=0")


@dataclass(frozen=True)
class Case:
    benchmark: str
    split: str
    # winning rollouts of the support split fill RAP's memory (the oracle's, or ReAct's)
    rap_memory: int
    extra_args: tuple[str, ...] = ()


CASES = [
    Case("alfworld", "valid_unseen.query", 4),
    # InstructRAG refuses to train and adapt on ScienceWorld's own tasks: it transfers
    Case("scienceworld", "step18-v1", 4, ("--method-arg", "instructrag.train_benchmark=alfworld")),
    Case("plancraft", "val.small", 4),
    Case("textworld", "ige-cooking", 4),
    # no oracle: RAP's memory and InstructRAG's graph are made of plain ReAct's successes
    # (their protocols: alive after 3 steps of a 3-step world)
    Case("crafter", "seeds-100", 4, ("--benchmark-arg", "length=3", "--method-arg",
                                     "instructrag.support_paths=agent",
                                     "--method-arg", "instructrag.train_steps=0")),
]


SLOW = {"scienceworld": pytest.mark.slow(
    reason="InstructRAG adapts to each of step18's 18 task families before testing (a support "
           "rollout and a played episode each, a ScienceWorld task load ~0.5 s): the stage tested")}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.benchmark, marks=SLOW.get(c.benchmark, ()))
                                  for c in CASES])
def test_rap_and_instructrag_learn_from_the_support_split_and_run(case, cli, llm_server, tmp_path):
    benchmark = get_benchmark(case.benchmark)
    noop = benchmark.noop_action
    srv = llm_server(script=[f"Thought: wait.\nAction: {noop}"])
    method_args = [arg for value in INSTRUCTRAG_SMALL for arg in ("--method-arg", f"instructrag.{value}")]
    out = tmp_path / "out"
    result = cli("run", "--no-progress", "--method", "rap,instructrag", "--model", "m",
                 "--base-url", srv.url, "--cache", "off", "--workers", "0", "--out", str(out),
                 "--benchmark", case.benchmark, "--split", case.split, "--limit", "2",
                 "--max-steps", "2", "--method-arg", "rap.support_limit=4", *method_args,
                 *case.extra_args, timeout=900)
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    by_method = {m: [r for r in records if r["method"] == m] for m in ("rap", "instructrag")}
    scored = [i.instance_id for i in benchmark.instances(case.split)[:2]]
    for method, rows in by_method.items():
        assert [r["instance_id"] for r in rows] == scored, method
        assert all(r["status"] in ("ok", "budget_exhausted") and r["steps"] >= 1 for r in rows), \
            [r.get("error") for r in rows]
        assert all(r["llm_usage"]["actor"]["calls"] >= 1 for r in rows), method

    rap_first = by_method["rap"][0]["extra"]
    assert rap_first["rap_memory_size"] == case.rap_memory
    if case.rap_memory:
        assert rap_first["rap_retrieved"], "the executor was shown remembered episodes"

    stages = by_method["instructrag"][0]["extra"]["instructrag_stages"]
    assert stages["graph_paths"] >= 1 and stages["graph_nodes"] >= 1
    assert stages["training_counters"]["ws_steps"] >= 1
    few_shot = benchmark.few_shot_support(case.split)
    assert stages["few_shot_split"] == few_shot
    if few_shot:
        # one instance of each of the split's task families was played to adapt the agents
        families = {benchmark.task_family(i) for i in benchmark.instances(few_shot)}
        assert stages["few_shot_counters"]["evaluations"] == len(families)
    assert all("instructrag_path" in r["extra"] for r in by_method["instructrag"])
