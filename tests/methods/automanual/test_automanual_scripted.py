"""AutoManual against the scripted model (`--policy scripted`). Corridor has no support
split, so AutoManual refuses it; the run is on Plancraft's val.small. Every Planner reply is
one checked section of code that plays the scripted player's command through the agent
API, runs in the sandbox and prints the answer (the next reply acts on it); the Builder's,
the consolidator's and the Formulator's answers are read at once (no unreadable answer, no
refused operation or code). The calls per role are this deterministic run's.

While building, each epoch names its support instance in the requests (`tag_calls`), so
the player walks the oracle's path there too: of the three epochs one ends in an indirect
success. The second test drives the building phase on chosen support instances, where the
first code, later codes and a failure give a direct success, an indirect one and a failure."""

from __future__ import annotations

from lifebench import registry
from lifebench.api import RoleParams
from lifebench.config.run import LLMConfig
from lifebench.llm.client import LLMClient
from lifebench.methods.automanual.api import api_for
from lifebench.methods.automanual.building import BuildingPhase, BuildSettings
from lifebench.methods.automanual.rules import RuleSystem, SkillBank
from lifebench.methods.automanual.sandbox import SandboxLimits
from lifebench.testing import read_records

CLEAN = {"builder_unreadable": 0, "builder_ops_refused": 0, "code_refused": 0, "code_errors": 0,
         "env_failures": 0}


def test_automanual_scripted_on_plancraft(llm_server, results_dir, lifebench_cli):
    srv = llm_server(policy="scripted")
    result = lifebench_cli("run", "--no-progress", "--benchmark", "plancraft", "--split",
                           "val.small", "--limit", "2", "--method", "automanual",
                           "--method-arg", "build_tasks=3", "--method-arg", "max_rules=2",
                           "--model", "m", "--base-url", srv.url, "--cache", "off",
                           "--workers", "0", "--out", str(results_dir), timeout=120)
    assert result.returncode == 0, result.stderr
    records = sorted(read_records(results_dir), key=lambda r: r["episode_index"])
    assert all(r["status"] in ("ok", "budget_exhausted") and not r["error"] for r in records)
    got = [(r["instance_id"], r["success"], r["steps"], r["extra"]["automanual_code_actions"],
            {role: usage["calls"] for role, usage in r["llm_usage"].items()}) for r in records]
    assert got == [
        ("VAL0491", True, 1, [1], {"build_planner": 11, "builder": 3, "consolidator": 2,
                                   "formulator": 1, "planner": 1}),
        ("VAL0274", True, 2, [1, 1], {"planner": 2}),
    ]
    assert all((r["extra"]["automanual_code_errors"], r["extra"]["automanual_code_refused"],
                r["extra"]["automanual_helper_errors"]) == (0, 0, 0) for r in records)
    build = records[0]["extra"]["automanual_build"]
    assert {k: build[k] for k in CLEAN} == CLEAN
    assert (build["epochs"], build["failures"], build["code_attempts"], build["build_actions"],
            build["consolidation_calls"], build["rules"], build["formulated"]) == \
        (3, 2, 8, 8, 2, 2, True)
    assert (build["direct"], build["indirect"]) == (0, 1)
    assert build["rule_types"] == {"Corrected Error": 1, "Unresolved Error": 1}


def test_building_on_tagged_support_instances_gives_each_outcome(llm_server):
    srv = llm_server(policy="scripted")
    bench = registry.get_benchmark("plancraft")
    llm = LLMClient("m", LLMConfig(base_url=srv.url, cache="off", max_retries=0))
    llm.tag(method="automanual", benchmark="plancraft")
    rules, skills = RuleSystem(), SkillBank()
    settings = BuildSettings(build_tasks=4, tasks_per_type=6, stop_after_successes=3,
                             build_attempts=3, max_actions=50, max_rules=4, builder_retries=1,
                             consolidation_rounds=6, history_chars=12_000, formulate=True,
                             limits=SandboxLimits())
    phase = BuildingPhase(llm, RoleParams(), bench, 0, api_for("plancraft", "auto"), rules,
                          skills, settings)
    outcomes = []
    # oracle walks of 1, 2, 7 and 3 actions
    for instance_id in ("TRAIN0029", "TRAIN0001", "TRAIN0000", "TRAIN0015"):
        instance = bench.instance("train", instance_id)
        epoch = phase.epoch(instance, phase.family(instance))
        outcomes.append((epoch["outcome"], epoch["attempts"], epoch["ops_applied"],
                         epoch["consolidation_calls"], epoch["rules_after"]))
    assert phase.formulate()
    assert outcomes == [("direct", 1, 1, 0, 1), ("indirect", 2, 2, 0, 3), ("failure", 3, 1, 0, 4),
                        ("indirect", 3, 2, 1, 4)]
    assert {k: phase.counters[k] for k in CLEAN} == CLEAN
    assert {role: usage.calls for role, usage in llm.usage.items()} == {
        "build_planner": 12, "builder": 4, "consolidator": 1, "formulator": 1}
    assert {k: s.kind for k, s in skills.skills.items()} == {
        "sponge": "direct", "red_dye": "indirect", "cyan_stained_glass_pane": "failure",
        "chiseled_quartz_block": "indirect"}
    # the indirect conclusion's clean code replays both commands; the consolidator deleted
    # the oldest Success Process rule (sponge's)
    assert skills.skills["red_dye"].code.count("agent.act(") == 2
    assert [r.type for r in rules.rules] == ["Success Process", "Success Process",
                                             "Corrected Error", "Unresolved Error"]
    assert "## Finishing tasks" in rules.manual and "red_dye" in rules.manual
