"""Every method that uses instance contexts runs with `--context autocontext` on each of the
five benchmarks (2 instances, the real environments, the local server with the scripted
AutoContext of tests/fixtures/scripts/autocontext.json): the two contexts are built once, by
the first method's run, and the run of every other method (one run of them all, one
environment engine) reuses them (no exploration); each method's records say which context
they were given and its prompts (the server's requests tagged with its name) carry the
document."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import ROOT, read_records
from lifebench import registry

SCRIPT = json.loads((ROOT / "tests" / "fixtures" / "scripts" / "autocontext.json").read_text())
MARKER = "SCRIPTED-ROOM"
AUTOCONTEXT_SMALL = ("explore_steps=6", "max_iterations=1")
# Each method at its smallest: few support instances, no example rollouts, one meta-training
# iteration (see test_support_methods_everywhere.py).
METHOD_ARGS = {
    "rap": ("support_limit=2",),
    "instructrag": ("support_limit=2", "few_shot_limit=1", "iterations=1", "tasks_per_batch=1",
                    "questions_per_task=1", "k_paths=1", "pool_extra=0", "train_steps=2",
                    "examples=0"),
    "automanual": ("build_tasks=1",),
}
METHODS = ("react", "reflexion", "how2", "clin", "step", "rap", "instructrag", "ige",
           "automanual")


@dataclass(frozen=True)
class Case:
    benchmark: str
    split: str
    skip: tuple[str, ...] = ()  # methods the benchmark refuses (said in one line)
    benchmark_args: tuple[str, ...] = ()
    method_args: tuple[tuple[str, str], ...] = ()  # (method, KEY=VALUE)


CASES = [
    Case("alfworld", "valid_unseen.query"),
    # dev has no few-shot split: InstructRAG adapts to no test task before testing (on
    # step18-v1 that stage plays all 18 task families, ~40 s; test_support_methods_everywhere.py
    # runs it)
    Case("scienceworld", "dev"),
    Case("plancraft", "val.small"),
    Case("textworld", "ige-cooking"),
    # no oracle: How² has no teacher there; InstructRAG's paths are the agent's own; IGE's
    # returns would undo deaths (it refuses Crafter, as the paper does not run it there)
    Case("crafter", "seeds-100", skip=("how2", "ige"), benchmark_args=("length=3",),
         method_args=(("instructrag", "support_paths=agent"), ("instructrag", "train_steps=0"))),
]


def installed(method: str) -> bool:
    return method in registry.method_names()


SLOW = {"scienceworld": pytest.mark.slow(
    reason="nine methods' episodes on ScienceWorld's JVM (~20 s), and ~20 s more where it is "
           "the session's first test to embed ScienceWorld's valid actions (CLIN's and STEP's "
           "matching), are what shows every method takes the context there")}


def method_flags(case: Case, methods: list[str]) -> list[str]:
    flags = []
    for method in methods:
        values = [*METHOD_ARGS.get(method, ()), *(v for m, v in case.method_args if m == method)]
        flags += [a for v in values for a in ("--method-arg", f"{method}.{v}")]
    return flags


@pytest.mark.parametrize("case", [pytest.param(c, id=c.benchmark, marks=SLOW.get(c.benchmark, ()))
                                  for c in CASES])
def test_every_method_runs_with_an_autocontext_context(case, cli, llm_server, tmp_path: Path):
    srv = llm_server(script=SCRIPT)
    out = tmp_path / "out"
    context_args = [a for v in AUTOCONTEXT_SMALL for a in ("--context-arg", v)]
    methods = [m for m in METHODS if installed(m) and m not in case.skip]
    for method in (m for m in case.skip if installed(m)):
        refused = cli("run", "--no-progress", "--method", method, "--model", "m", "--base-url",
                      srv.url, "--out", str(out), "--benchmark", case.benchmark, "--split",
                      case.split, "--limit", "2", "--context", "autocontext")
        said = refused.stderr.strip().splitlines()
        assert refused.returncode == 2 and said[-1].startswith("lifebench: error: nothing to run")
        assert method in refused.stderr and f" on {case.benchmark}" in refused.stderr
    benchmark_flags = [a for v in case.benchmark_args for a in ("--benchmark-arg", v)]
    for group in ([methods[0]], methods[1:]):  # the run that builds the contexts, then the rest
        before = len(srv.requests())
        result = cli("run", "--no-progress", "--method", ",".join(group), "--model", "m",
                     "--base-url", srv.url, "--cache", "off", "--workers", "0", "--out", str(out),
                     "--benchmark", case.benchmark, "--split", case.split, "--limit", "2",
                     "--max-steps", "2", "--trials", "1", "--context", "autocontext",
                     *context_args, *method_flags(case, group), *benchmark_flags, timeout=900)
        assert result.returncode == 0, f"{group}: {result.stderr}"
        assert srv.stats()["requests"] <= 1000, "the server keeps the last 1000 requests"
        requests, tags = srv.requests()[before:], srv.request_tags()[before:]
        for method in group:
            rows = [r for r in read_records(out) if r["method"] == method]
            assert len(rows) == 2 and all(r["status"] in ("ok", "budget_exhausted") for r in rows), \
                (method, [r.get("error") for r in rows])
            assert all(r["context"] == "autocontext" and r["extra"]["context"]["key"] for r in rows)
            if method in ("react", "reflexion"):  # ReAct's default: 2 oracle transcripts, if any
                assert {r["extra"]["examples"] for r in rows} == {0 if case.benchmark == "crafter" else 2}
            prompts = [json.dumps(request["messages"])
                       for request, tag in zip(requests, tags) if tag.get("method") == method]
            assert any(MARKER in p for p in prompts), f"{method} never showed the context"
    contexts = [json.loads(line) for line in (out / "contexts.jsonl").read_text().splitlines()]
    assert len(contexts) == 2 and all(c["status"] == "ok" for c in contexts)  # built once
    charged = [r for r in read_records(out) if r["extra"]["context"]["charged"]]
    assert {r["method"] for r in charged} == {methods[0]}
