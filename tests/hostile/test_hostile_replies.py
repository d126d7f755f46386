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
