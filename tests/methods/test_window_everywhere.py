"""Every LLM method's prompt fitted to a small context window by the one policy of the LLM
layer (`lifebench.llm.window`): each method marks its history (`lifebench.api.prompt`), so
its episodes play on past the window, with its fixed parts kept and a marker where the
oldest history was, and no prompt the server refuses. Real runs against the local server
imitating vLLM (its window in /v1/models, its /tokenize)."""

from __future__ import annotations

import pytest

from lifebench.api import filled
from lifebench.testing import read_records
from lifebench.testing.fakeserver import is_tool_probe

MARKER = "left out here to fit the model's context window"


def run(cli, srv, out, method, *more):  # one trial, whatever the method's protocol says
    return cli("run", "--no-progress", "--method", method, "--model", "m", "--base-url", srv.url,
               "--cache", "off", "--workers", "0", "--trials", "1", "--out", str(out), *more,
               timeout=300)


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
    asked = [r for r in srv.requests() if not is_tool_probe(r)]
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


def test_an_episode_summary_keeps_the_task_and_the_last_step(cli, llm_server, tmp_path):
    """CLIN's summary of a 30-step trace (STEP writes its summary and its strategy from the
    same trace parts): fitted to a 700-word window, it keeps its instructions, the task, the
    last step and the report."""
    method = "clin"
    srv = llm_server(script=[{"match": "turns an agent's attempts into learnings",
                              "replies": ["1. Open the fridge first. STRATEGY: look less."]},
                             "Thought: I look.\nAction: look"],
                     flavour="vllm", max_model_len=700, models=("m",))
    result = run(cli, srv, tmp_path / "out", method, "--benchmark", "alfworld", "--split",
                 "valid_unseen", "--limit", "1", "--max-steps", "30", "--method-arg",
                 "repeat_stop=0", "--method-arg", "memory_trials=0", "--max-tokens", "64")
    assert result.returncode == 0, result.stderr
    [record] = read_records(tmp_path / "out")
    assert record["status"] in ("ok", "budget_exhausted") and record["steps"] >= 20, record
    summaries = [r["messages"][1]["content"] for r in srv.requests()
                 if "into learnings" in r["messages"][0]["content"]]
    assert summaries and all(MARKER in text for text in summaries)
    for text in summaries:
        task = text.index("Task: ")
        assert text.index(MARKER) > task and "Action: look\nObservation:" in text[text.index(MARKER):]
        assert text.count("Action: look") < 30


def test_the_trace_parts_read_as_the_prompts_did():
    """STEP's strategy prompt and CLIN's summary are their templates filled with the trace:
    the same text as before, the steps between the task and the last one marked history."""
    from lifebench.methods.clin.memory import Trial, summary_prompt, trace
    from lifebench.methods.step import prompts

    steps = [("go east", "You see a {door}."), ("open door", "It opens."), ("go in", "Dark.")]
    parts = trace("find the {key}", steps)
    lines = ["Task: find the {key}"] + [f"Action: {a}\nObservation: {o}" for a, o in steps]
    assert "".join(p.text for p in parts) == "\n".join(lines)
    assert [p.history for p in parts] == [False, True, True, False]
    strategy = filled(prompts.STRATEGY_WRITE, "trace", parts, report="r", rewarded="none")
    assert strategy == prompts.STRATEGY_WRITE.format(trace="\n".join(lines), report="r",
                                                     rewarded="none")
    summary = summary_prompt(parts, "report", [Trial("1. look first", "failed")])
    assert "\n".join(lines) in summary and [p.history for p in summary.parts].count(True) == 2


def test_iges_select_prompt_drops_its_oldest_archive_states_first():
    """IGE's Select prompt reads as before; fitted, it keeps the task, the newest state and
    the rules, and leaves out the oldest states (each shown one keeps its number)."""
    from lifebench.llm.window import estimate_tokens, fit_messages
    from lifebench.methods.ige import prompts

    blocks = [f"State {i}: " + "a room with a lamp. " * 40 for i in range(12)]
    prompt = prompts.select("light the lamp", None, blocks, scored=False)
    assert prompt == "\n\n".join([prompts.SELECT_HEAD, "The task: light the lamp",
                                  "The archive (12 states):\n" + "\n".join(blocks),
                                  prompts.SELECT_RULES])
    assert [p.history for p in prompt.parts].count(True) == 11
    fitted = fit_messages([{"role": "system", "content": "manual"},
                           {"role": "user", "content": prompt}], 1500, 64, estimate_tokens)
    text = fitted.messages[1]["content"]
    assert fitted.left_out > 0 and MARKER in text and fitted.tokens <= 1500 - 64
    assert "The task: light the lamp" in text and blocks[-1] in text and prompts.SELECT_RULES in text
    assert blocks[0] not in text and text.index(MARKER) < text.index(blocks[-1])


def test_autocontexts_build_prompts_drop_their_oldest_steps_first():
    """AutoContext's Extractor and Planner prompts read as before; fitted, they keep the
    instructions, the forest and the document, where the trajectory starts and its last
    step, and leave out its oldest steps first."""
    from lifebench.llm.window import estimate_tokens, fit_messages
    from lifebench.methods.autocontext import prompts
    from lifebench.methods.autocontext.actor import Segment, joined
    from lifebench.methods.autocontext.forest import TodoForest
    from lifebench.methods.autocontext.planner import Planner
    from lifebench.api import RoleParams

    steps = [(f"go {i}", "A long corridor with doors. " * 20) for i in range(20)]
    trajectory = joined([Segment("init_state", "You are in the kitchen.", steps)], 100_000)
    values = dict(background="BACKGROUND", knowledge_definition="DEFINITION", knowledge="DOC",
                  modification="EDIT")
    check = filled(prompts.CHECK_EDIT, "trajectory", trajectory.parts, **values)
    assert check == prompts.CHECK_EDIT.format(trajectory=str(trajectory), **values)
    planner = Planner(None, RoleParams(), TodoForest("start", None), "BACKGROUND", "FORMAT",
                      "Unknown", type("C", (), {"forest": True, "max_length": 6, "num_todo": 3})())
    recent = "".join(p.text for p in planner._recent(trajectory))
    assert recent == prompts.RECENT_TRAJECTORY.format(trajectory=str(trajectory))
    for prompt in (check, filled(prompts.PLAN_RULES, "trajectory", planner._recent(trajectory),
                                 max_length=6, num_todo=3, background="BACKGROUND",
                                 forest_definition="DEF", forest="- init_state: start")):
        fitted = fit_messages([{"role": "user", "content": prompt}], 1500, 64, estimate_tokens)
        text = fitted.messages[0]["content"]
        assert fitted.left_out > 0 and MARKER in text and fitted.tokens <= 1500 - 64
        assert "BACKGROUND" in text and "[from state init_state] You are in the kitchen." in text
        assert "> go 19\n" in text and "> go 0\n" not in text
        assert text.index(MARKER) < text.index("> go 19")


def test_automanuals_builder_prompt_drops_its_earliest_plans_first():
    """AutoManual's Builder reads the epoch's transcript: fitted, it keeps the task and the
    last plan with the outcome, and leaves out the earliest plans and results first."""
    from lifebench.api import split_history
    from lifebench.llm.window import estimate_tokens, fit_messages
    from lifebench.methods.automanual import prompts

    blocks = ["Task, first observation:\nYou are in the kitchen. Your task is to cool an apple."]
    for n in range(1, 9):
        blocks += [f"--- Planner reply {n}:\n" + "plan step; " * 60, f"--- Result of code {n}:\n" + "ok. " * 60]
    transcript = "\n\n".join(blocks) + "\n\nOutcome: SUCCESS after 8 codes."
    request = filled(prompts.BUILDER_INDIRECT, "trajectory", split_history(transcript, r"\n\n--- ").parts,
                     epoch="e1", attempts=8)
    assert request == prompts.BUILDER_INDIRECT.format(epoch="e1", attempts=8, trajectory=transcript)
    fitted = fit_messages([{"role": "system", "content": "rules"}, {"role": "user", "content": request}],
                          1500, 64, estimate_tokens)
    text = fitted.messages[1]["content"]
    assert fitted.left_out > 0 and MARKER in text and fitted.tokens <= 1500 - 64
    assert "Your task is to cool an apple." in text and "Outcome: SUCCESS after 8 codes." in text
    assert "--- Planner reply 1:" not in text and "--- Result of code 8:" in text
