"""A model that answers with a 100,000-deep nested reply (JSON or code): the methods that
parse JSON or Python from replies treat it as a parse failure, so the episode is played and
scored and the run exits 0 (it was a RecursionError, an agent error and exit 1)."""

from __future__ import annotations

import pytest

from lifebench.testing import read_records

DEEP = 100_000
REPLIES = {
    "json": "```json\n" + "[" * DEEP + "]" * DEEP + "\n```",
    "code": "```python\n" + "(" * DEEP + "agent.act('x')" + ")" * DEEP + "\n```",
}
RUNS = {  # the method, and its flags (preparation kept small)
    "autocontext": ("react", "--context", "autocontext", "--context-arg", "explore_steps=10"),
    "automanual": ("automanual", "--method-arg", "build_tasks=1", "--method-arg", "test_attempts=1"),
}


@pytest.mark.parametrize("reply", sorted(REPLIES))
@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_deeply_nested_reply_is_the_methods_parse_failure(llm_server, results_dir,
                                                             lifebench_cli, name, reply):
    method, *flags = RUNS[name]
    srv = llm_server(script=[REPLIES[reply]])
    result = lifebench_cli("run", "--no-progress", "--benchmark", "plancraft", "--split",
                           "val.small", "--limit", "1", "--max-steps", "3", "--method", method,
                           *flags, "--model", "m", "--base-url", srv.url, "--cache", "off",
                           "--workers", "0", "--out", str(results_dir), timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "RecursionError" not in result.stderr
    (record,) = read_records(results_dir)
    assert record["status"] in ("ok", "budget_exhausted") and not record["success"]
    assert record["error"] is None


def test_reasoning_and_text_tool_calls_are_read_in_one_pass_of_a_hostile_reply():
    """200,000 reasoning blocks, or 200,000 code fences, in one reply (the transport lets
    8 MB through): the answer after the blocks is found, no call is made up, each in one
    pass (a pattern search per block was quadratic: minutes)."""
    from lifebench.llm.reasoning import split_tagged
    from lifebench.llm.text_tools import read_tool_call

    reasoning, answer = split_tagged("<think>a</think> " * 200_000 + "move: from [I1] to [A1]")
    assert answer == "move: from [I1] to [A1]" and reasoning.count("a") == 200_000
    assert read_tool_call("```" * 200_000) is None
    assert read_tool_call("```json\n{" * 100_000) is None
    assert read_tool_call("```" * 1000 + '```json\n{"tool": "act", "arguments": {}}\n```').name == "act"
