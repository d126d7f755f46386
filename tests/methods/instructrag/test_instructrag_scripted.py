"""InstructRAG under the scripted model (`fakeserver --policy scripted`): every role its
stages send (the scored `actor`, the meta-training's `train`) gets a ReAct reply its parser
takes on the first try (no format retry), the scored episodes play the oracle's walk, the
training episodes follow the path in their prompt, and the calls per role are the
deterministic run's. Corridor has no support split of its own, so it trains on its `small`
split (one instance per task: the graph is built, nothing is meta-trained); Plancraft's
first training games give a task with a query part, so meta-training plays episodes."""

from __future__ import annotations

import re

from conftest import read_records
from lifebench.methods.instructrag import scripted
from lifebench.methods.instructrag.prompts import path_block
from lifebench.methods.react.prompts import NO_ACTION_FEEDBACK

SMOKE = ("iterations=1", "tasks_per_batch=1", "questions_per_task=1")


def run_instructrag(lifebench_cli, srv, out, *args):
    result = lifebench_cli("run", "--no-progress", "--method", "instructrag", "--model", "m",
                           "--base-url", srv.url, "--cache", "off", "--workers", "0",
                           "--out", str(out), *args)
    assert result.returncode == 0, result.stderr
    return read_records(out)


def method_args(*pairs: str) -> list[str]:
    return [word for pair in pairs for word in ("--method-arg", f"instructrag.{pair}")]


def usage(record) -> dict[str, int]:
    return {role: u["calls"] for role, u in record["llm_usage"].items()}


def test_training_replies_follow_the_prompts_path_then_the_player():
    path = ("go to desk 1", "take mug 1 from desk 1")
    messages = [{"role": "system", "content": "manual"},
                {"role": "user", "content": path_block(path)},
                {"role": "assistant", "content": "Understood."},
                {"role": "user", "content": "Observation: start"}]
    assert scripted._path(messages) == path
    assert scripted._path_step(messages) == path[0]
    played = messages + [{"role": "assistant", "content": "Thought: t\nAction: go to desk 1"},
                         {"role": "user", "content": "Observation: on the desk"}]
    assert scripted._path_step(played) == path[1]
    off = messages + [{"role": "assistant", "content": "Action: look"},
                      {"role": "user", "content": "Observation: on the desk"}]
    assert scripted._path_step(off) is None  # off the path: the scripted player's action


def test_scripted_instructrag_on_corridor_and_plancraft(llm_server, lifebench_cli, results_dir):
    srv = llm_server(policy="scripted")
    corridor = run_instructrag(lifebench_cli, srv, results_dir / "corridor", "--benchmark",
                               "corridor", "--split", "tiny",
                               *method_args("train_benchmark=corridor", "train_split=small"))
    assert [r["instance_id"] for r in corridor] == ["corridor-2", "corridor-3", "corridor-4"]
    for record, length in zip(corridor, (2, 3, 4)):
        assert record["status"] == "ok" and record["success"], record["error"]
        assert record["steps"] == length and usage(record) == {"actor": length}
    stages = corridor[0]["extra"]["instructrag_stages"]
    assert stages["graph_paths"] == 8 and stages["training_counters"]["evaluations"] == 0

    [record] = run_instructrag(lifebench_cli, srv, results_dir / "plancraft", "--benchmark",
                               "plancraft", "--split", "val", "--limit", "1",
                               *method_args(*SMOKE, "support_limit=6", "train_steps=3"))
    assert record["status"] == "ok" and record["success"], record["error"]
    # the scored episode: one call a step; training: 5 episodes of 3 steps (the budget)
    assert record["steps"] == 7 and usage(record) == {"actor": 7, "train": 15}
    stages = record["extra"]["instructrag_stages"]
    assert stages["graph_paths"] == 5 and stages["training_counters"]["evaluations"] == 5
    assert record["extra"]["instructrag_candidates"] == 3

    requests = [r["messages"] for r in srv.requests()]
    # no reply was ever sent back for want of an action line
    assert not any(NO_ACTION_FEEDBACK in m["content"] for ms in requests for m in ms)
    # training episodes play their path's instructions
    followed = 0
    for messages in requests:
        path = scripted._path(messages)
        episode = scripted._episode(messages)
        played = [re.findall(r"^Action: (.+)$", m["content"], re.M)[-1] for m in episode
                  if m["role"] == "assistant"]
        if path and played and tuple(played) == path[: len(played)]:
            followed += 1
    assert followed >= 5
