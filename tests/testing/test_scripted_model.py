"""The scripted model (`fakeserver --policy scripted`): it answers by the client's tags,
acts as the benchmark's oracle walked, and `lifebench check --exact` catches deliberate
regressions of the methods it plays, each in one line naming the method and the metric.

A regression is made the way a bad commit would make it: the candidate run imports a
`sitecustomize` that changes one method (a longer prompt, an extra call, a lost memory, a
context charged twice); the baseline is the same command without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT
from lifebench.api import ScriptedRequest, ToolCall, generic_reply
from lifebench.testing import llm_server, run_cli
from lifebench.testing.scripted import Book, ScriptedModel, oracle_book


def ask(url: str, messages: list[dict], tags: dict[str, str], tools: list | None = None) -> dict:
    body = {"model": "scripted", "messages": messages, **({"tools": tools} if tools else {})}
    request = urllib.request.Request(
        url + "/chat/completions", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json",
                 **{f"X-Lifebench-{k.capitalize()}": v for k, v in tags.items()}})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())["choices"][0]["message"]


def test_the_player_follows_the_oracle_walk_shown_last_in_the_prompt():
    book = oracle_book("corridor", "tiny", "corridor-2")
    assert [action for _, action in book.pages] == ["right", "right"]
    cell = "You are in cell {} of a corridor; the exit is cell 2."
    assert book.act(cell.format(0)) == "right"
    assert book.act(f"{cell.format(0)}\n> right\n{cell.format(1)}") == "right"
    assert book.act("nothing the oracle saw") == "look"  # the benchmark's no-op
    # an observation shown k times answers its k-th action
    repeated = Book((("start", "go"), ("same", "first"), ("other", "x"), ("same", "second")), "noop")
    assert repeated.act("start same") == "first" and repeated.act("start same other same") == "second"
    # counted from the episode's start: an example of another episode before it does not count
    assert repeated.act("same other same start same") == "first"
    # no oracle walk without an instance: the no-op
    assert oracle_book("corridor", "tiny", "").act(cell.format(0)) == "look"


def test_a_book_that_cannot_be_built_says_why_once(capsys):
    # e.g. a server started without LIFEBENCH_DATA: its no-op answers must not pass silently
    model = ScriptedModel()
    for instance in ("a", "b"):
        assert model.book("corridor", "no-such-split", instance).pages == ()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "no oracle book for corridor no-such-split" in lines[0]


def test_the_server_answers_each_method_by_its_tags():
    cell = "You are in cell 0 of a corridor; the exit is cell 3."
    tags = {"benchmark": "corridor", "split": "tiny", "instance": "corridor-3"}
    with llm_server(policy="scripted") as server:
        react = ask(server.url, [{"role": "user", "content": cell}], {**tags, "method": "react",
                                                                       "role": "actor"})
        assert react["content"].splitlines()[-1] == "Action: right"
        reflection = ask(server.url, [{"role": "user", "content": "reflect"}],
                         {**tags, "method": "reflexion", "role": "reflection"})
        assert "Action:" not in reflection["content"] and reflection["content"]
        # a method that declares no replies (or none named): the action, as text or a tool call
        plain = ask(server.url, [{"role": "user", "content": cell}], {**tags, "method": "unknown"})
        assert plain["content"] == "right"
        tool = {"type": "function", "function": {"name": "act", "parameters": {
            "type": "object", "properties": {"command": {"type": "string"}}}}}
        called = ask(server.url, [{"role": "user", "content": cell}], tags, tools=[tool])
        assert called["tool_calls"][0]["function"]["name"] == "act"
        assert json.loads(called["tool_calls"][0]["function"]["arguments"]) == {"command": "right"}
        # the tags of each request kept, in order, beside the requests (for tests)
        kept = server.request_tags()
        assert len(kept) == len(server.requests()) == 4
        assert [t.get("method") for t in kept] == ["react", "reflexion", "unknown", None]
        assert kept[0]["instance"] == "corridor-3" and kept[1]["role"] == "reflection"
    request = ScriptedRequest("actor", ({"role": "user", "content": "x"},), (), "corridor",
                              act=lambda text: "left")
    assert generic_reply(request) == "left"
    assert isinstance(generic_reply(ScriptedRequest("actor", (), (tool,), "corridor",
                                                    act=lambda text: "left")), ToolCall)


def test_the_server_runs_a_command_beside_it_and_passes_its_exit_code(tmp_path):
    script = "import os, sys; print(os.environ['LIFEBENCH_BASE_URL'], sys.argv[1]); sys.exit(3)"
    proc = subprocess.run([sys.executable, "-W", "error", "-m", "lifebench.testing.fakeserver",
                           "--policy", "scripted", "--", sys.executable, "-c", script, "{url}"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    url, argument = proc.stdout.split()
    assert url == argument and url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    assert "RuntimeWarning" not in proc.stderr  # python -m runs the module once


# --- deliberate regressions, caught by `lifebench check --exact` ---------------------------

CORRIDOR = ("--benchmark", "corridor", "--split", "tiny", "--method")
# AutoContext needs a benchmark with an instance-context schema: Plancraft's smallest split.
PLANCRAFT = ("--benchmark", "plancraft", "--split", "val.small", "--limit", "1",
             "--context", "autocontext", "--method")
REGRESSIONS = {  # name: (the run, the change, the start of the line that must fail)
    "react-format": (CORRIDOR + ("react",), """
        import lifebench.methods.react.prompts as prompts
        prompts.FORMAT = prompts.FORMAT + " Keep it short." * 143  # 2,002 characters more
    """, "FAIL react: prompt tokens per episode +"),
    "reflexion-extra-call": (CORRIDOR + ("reflexion",), """
        from lifebench.methods.reflexion import ReflexionMethod
        played = ReflexionMethod.act
        def act(self, observation):
            self.ctx.llm.chat([{"role": "user", "content": "Sure?"}], role="actor", params=self.params)
            return played(self, observation)
        ReflexionMethod.act = act
    """, "FAIL reflexion: LLM calls per episode +"),
    "step-memory-lost": (CORRIDOR + ("step",), """
        from lifebench.methods.step import StepMethod
        begun = StepMethod.begin_episode
        def begin_episode(self, task, tools):
            self.memory, self.strategies = type(self.memory)(), {}  # no trial learns from the last
            begun(self, task, tools)
        StepMethod.begin_episode = begin_episode
    """, "FAIL step: "),
    "autocontext-charged-twice": (PLANCRAFT + ("react",), """
        import lifebench.runner.unit as unit
        described = unit._context_extra
        unit._context_extra = lambda stream, given, charged: described(stream, given, True)
    """, "FAIL react: context build LLM calls per episode +100.0%"),
}


def scripted_run(out: Path, run: tuple[str, ...], patch: str = "") -> None:
    env = dict(os.environ)
    if patch:
        site = out.parent / f"{out.name}-site"
        site.mkdir(parents=True)
        (site / "sitecustomize.py").write_text(textwrap.dedent(patch))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "lifebench.testing.fakeserver", "--policy", "scripted", "--",
         sys.executable, "-m", "lifebench.cli", "run", *run, "--model", "scripted", "--trials", "2",
         "--cache", "off", "--no-progress", "--no-trajectories", "--base-url", "{url}",
         "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.fixture(scope="module")
def baselines(tmp_path_factory):
    """The unchanged run of each regression's command, made once."""
    made: dict[tuple[str, ...], Path] = {}

    def baseline(run: tuple[str, ...]) -> Path:
        if run not in made:
            made[run] = tmp_path_factory.mktemp("scripted") / "baseline"
            scripted_run(made[run], run)
        return made[run]
    return baseline


def test_an_unchanged_rerun_passes_the_exact_check(baselines, tmp_path):
    run = CORRIDOR + ("react",)
    scripted_run(tmp_path / "again", run)
    result = run_cli("check", "--baseline", str(baselines(run)), "--candidate",
                     str(tmp_path / "again"), "--exact", cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "exact (deterministic model): 0 of " in result.stdout


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_a_deliberate_regression_fails_the_check_in_one_line(baselines, tmp_path, name):
    run, patch, expected = REGRESSIONS[name]
    candidate = tmp_path / "candidate"
    scripted_run(candidate, run, patch)
    result = run_cli("check", "--baseline", str(baselines(run)), "--candidate", str(candidate),
                     "--exact", cwd=ROOT)
    assert result.returncode == 1, result.stdout + result.stderr
    failing = [line for line in result.stdout.splitlines() if line.startswith("FAIL ")]
    assert failing and failing[0].startswith(expected), result.stdout
    # the statistical check alone does not see it: the method still succeeds
    assert "0 significantly worse" in result.stdout
