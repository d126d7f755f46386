"""A plan into a directory that already holds part of the run leaves out what is there (the
episodes recorded, the preparation artifacts stored) and shows it apart."""

from __future__ import annotations

import json

from conftest import markdown_table


def test_plan_of_a_resumed_run_leaves_out_what_is_recorded(llm_server, lifebench_cli, tmp_path):
    endpoint = llm_server(policy="scripted")
    out = tmp_path / "out"
    cells = ["--smoke", "--method", "instructrag,react", "--benchmark", "plancraft", "--split",
             "val.small", "--model", "m", "--cache", "off", "--no-progress", "--out", str(out)]
    half = lifebench_cli("grid", *cells, "--limit", "2", "--base-url", endpoint.url)
    assert half.returncode == 0, half.stderr
    [artifact] = (out / "prepared").iterdir()  # InstructRAG's preparation, stored

    # the whole slice, planned on the scripted model: nothing is sent anywhere
    planned = lifebench_cli("grid", "--plan", *cells, "--limit", "4", "--base-url", endpoint.url)
    assert planned.returncode == 0, planned.stderr
    sent = endpoint.stats()["requests"]
    plan = {c["method"]: c for c in json.loads((out / "plan.json").read_text())["cells"]}
    rag, react = plan["instructrag"], plan["react"]
    assert rag["episodes"] == 4 and rag["episodes_to_run"] == 2
    assert rag["recorded"]["episodes"] == 2 and rag["recorded"]["preparations"] == 1
    assert rag["preparation_calls"] == [0.0, 0.0]  # stored: the run prepares nothing
    assert react["recorded"]["preparations"] == 0 and react["episodes_to_run"] == 2
    held = markdown_table(planned.stdout, "Already in the results directory (left out above):")
    assert [(r["method"], r["episodes recorded"], r["preparations or builds stored"]) for r in held] == \
        [("instructrag", "2", "1"), ("react", "2", "0")]
    spent = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert int(held[0]["LLM calls"].replace(",", "")) == sum(
        r["llm_calls"] for r in spent if r["method"] == "instructrag")

    # with a pilot of 2: its instances are recorded already, so it plays nothing; without
    # the stored artifact the preparation is priced again, from its own recorded cost
    artifact.unlink()
    piloted = lifebench_cli("grid", "--plan", "--pilot", "2", *cells, "--limit", "4",
                            "--base-url", endpoint.url)
    assert piloted.returncode == 0, piloted.stderr
    assert endpoint.stats()["requests"] == sent
    plan = {c["method"]: c for c in json.loads((out / "plan.json").read_text())["cells"]}
    rag = plan["instructrag"]
    measured = next(r["extra"]["prepared"]["llm_calls"] for r in spent if r["method"] == "instructrag"
                    and r["extra"].get("prepared", {}).get("reused") is False)
    assert rag["recorded"]["preparations"] == 0
    assert rag["preparation_calls"] == [measured, measured]  # at the run's (smoke) scale
    assert rag["episodes_to_run"] == 2 and rag["pilot"]["instances"] == 2
    assert "pilot: 0 episodes" in piloted.stdout
