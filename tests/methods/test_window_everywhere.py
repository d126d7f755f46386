"""Every LLM method's prompt fitted to a small context window by the one policy of the LLM
layer (`lifebench.llm.window`): each method marks its history (`lifebench.api.prompt`), so
its episodes play on past the window, with its fixed parts kept and a marker where the
oldest history was, and no prompt the server refuses. Real runs against the local server
imitating vLLM (its window in /v1/models, its /tokenize)."""

from __future__ import annotations

import pytest

from lifebench.testing import read_records

MARKER = "left out here to fit the model's context window"


def run(cli, srv, out, method, *more):
    return cli("run", "--no-progress", "--method", method, "--model", "m", "--base-url", srv.url,
               "--cache", "off", "--workers", "0", "--out", str(out), *more, timeout=300)


# method: the run's benchmark and flags (each as the method's scripted test runs it)
SCRIPTED = {
    "react": ("--benchmark", "alfworld", "--split", "valid_unseen", "--limit", "1"),
    "rap": ("--benchmark", "corridor", "--split", "tiny"),
    "clin": ("--benchmark", "corridor", "--split", "tiny", "--trials", "2"),
    "step": ("--benchmark", "corridor", "--split", "tiny", "--trials", "2"),
    "ige": ("--benchmark", "corridor", "--split", "tiny"),
}


def growth(records: list[dict]) -> dict[str, tuple[int, int]]:
    """Per role: (its largest first prompt of an episode, its longest prompt). An episode's
    first prompt of a role has no history yet: what it holds is fixed (RAP's examples)."""
    out: dict[str, tuple[int, int]] = {}
    for record in records:
        firsts: dict[str, int] = {}
        for call in record["llm_call_tokens"]:
            firsts.setdefault(call["role"], call["tokens_in"])
            first, longest = out.get(call["role"], (0, 0))
            out[call["role"]] = (max(first, firsts[call["role"]]), max(longest, call["tokens_in"]))
    return out


@pytest.mark.parametrize("method", sorted(SCRIPTED))
def test_a_scripted_run_plays_on_with_fitted_prompts(cli, llm_server, tmp_path, method):
    """The window is set between the first and the longest prompt of the role whose
    prompts grow most in an unfitted run (the other roles' prompts fit as they are): its
    later prompts are fitted, and every episode is played as before."""
    flags = (*SCRIPTED[method], "--max-tokens", "64")  # one cap for every role
    wide = llm_server(policy="scripted", flavour="vllm", max_model_len=100_000, models=("m",))
    result = run(cli, wide, tmp_path / "wide", method, *flags)
    assert result.returncode == 0, result.stderr
    before = read_records(tmp_path / "wide")
    sizes = growth(before)
    role = max(sizes, key=lambda r: sizes[r][1] - sizes[r][0])
    first, longest = sizes[role]
    assert longest > first, sizes
    cap = 64
    others = max([size[1] for name, size in sizes.items() if name != role], default=0)
    window = cap + max(others, (first + longest) // 2) + 40
    narrow = llm_server(policy="scripted", flavour="vllm", max_model_len=window, models=("m",))
    result = run(cli, narrow, tmp_path / "narrow", method, *flags)
    assert result.returncode == 0, result.stderr
    after = read_records(tmp_path / "narrow")
    assert [r["status"] for r in after] == [r["status"] for r in before]
    assert [r["success"] for r in after] == [r["success"] for r in before]
    assert sum(r["llm_calls_trimmed"] for r in after) > 0, (role, sizes, window)
    asked = narrow.requests()
    assert narrow.stats()["requests"] == len(asked) == sum(r["llm_calls"] for r in after), \
        "no prompt was refused"
    fitted = [r["messages"] for r in asked if any(MARKER in str(m.get("content")) for m in r["messages"])]
    assert fitted and all(m[0]["role"] == "system" for m in fitted)
    assert_unmarked(asked)


def assert_unmarked(asked: list[dict]) -> None:
    assert all(set(m) <= {"role", "content", "tool_calls", "tool_call_id", "name"}
               for r in asked for m in r["messages"]), "no mark reaches the server"


def test_how2_fits_its_tool_turns_and_keeps_the_task(cli, llm_server, tmp_path):
    """How²'s turns are tool calls and their results: fitted to the window a turn at a
    time (a call never without its result), the marker after the task."""
    srv = llm_server(script=[{"tool_call": {"name": "act", "arguments": {"command": "look"}}}],
                     flavour="vllm", max_model_len=1200, models=("m",))
    result = run(cli, srv, tmp_path / "out", "how2", "--benchmark", "alfworld", "--split",
                 "valid_unseen", "--limit", "1", "--max-steps", "30")
    assert result.returncode == 0, result.stderr
    [record] = read_records(tmp_path / "out")
    assert record["status"] == "budget_exhausted" and record["llm_calls_trimmed"] > 0
    asked = srv.requests()
    fitted = [r["messages"] for r in asked if MARKER in str(r["messages"][1]["content"])]
    assert fitted
    for messages in fitted:
        roles = [m["role"] for m in messages]
        assert roles[:2] == ["system", "user"] and roles[2] == "assistant"
        calls = {c["id"] for m in messages for c in m.get("tool_calls") or []}
        assert calls == {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    assert_unmarked(asked)


def test_reflexion_fits_its_reflection_and_keeps_the_task_and_the_last_step(cli, llm_server, tmp_path):
    """A failed 30-step attempt's reflection prompt holds the steps as history: fitted to a
    700-word window, it keeps the instructions, the task and the last step."""
    srv = llm_server(script=[{"match": "did not succeed", "replies": ["Open the fridge first."]},
                             "Thought: I look around.\nAction: look"],
                     flavour="vllm", max_model_len=700, models=("m",))
    result = run(cli, srv, tmp_path / "out", "reflexion", "--benchmark", "alfworld", "--split",
                 "valid_unseen", "--limit", "1", "--max-steps", "30", "--trials", "2",
                 "--method-arg", "reflect_steps=30", "--method-arg", "examples=0")
    assert result.returncode == 0, result.stderr
    records = read_records(tmp_path / "out")
    assert [r["status"] for r in records] == ["budget_exhausted"] * 2
    reflections = [r["messages"] for r in srv.requests() if "did not succeed" in r["messages"][0]["content"]]
    assert len(reflections) == 2
    for [message] in reflections:
        text = message["content"]
        assert MARKER in text and text.startswith("You tried the task below")
        assert "Task: " in text and text.rstrip().endswith("(The attempt ran out of steps.)")
        assert text.count("\n> look") < 30  # earlier steps left out, the last kept
    # the reflection is memory, a fixed part: every prompt of the second trial holds it
    second = [r for r in srv.requests() if "did not succeed" not in r["messages"][0]["content"]][30:]
    assert second and all("Open the fridge first." in str(r["messages"]) for r in second)
