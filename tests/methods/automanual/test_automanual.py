"""AutoManual against the real local server and real environments: building on ALFWorld's
support split writes rules from the Builder's operations and the manual reaches the tested
Planner; the Planner's code plays real ALFWorld actions and its errors come back as
feedback; malicious code is refused by the sandbox; the rule system is the method's state
(round trip, and a resumed stream builds nothing); smoke runs on Plancraft and TextWorld."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from conftest import read_records
from lifebench.api import InstanceContext, RoleParams, StreamContext, TaskInfo
from lifebench.llm.client import LLMClient
from lifebench.config.run import LLMConfig
from lifebench.methods.automanual import AutoManualConfig, AutoManualMethod
from lifebench.methods.automanual.api import ALFWORLD, GENERIC
from lifebench.methods.automanual.child import allowed_attributes, check_code, function_sources
from lifebench.methods.automanual.rules import (OperationError, RuleSystem, Skill, SkillBank,
                                                parse_operations)
from lifebench.methods.automanual.sandbox import (ActionRequest, CodeProcess, RunEnded,
                                                  SandboxLimits)
from lifebench.methods.automanual.trial import PlanTrial, TrialOver
from lifebench.registry import get_benchmark

# The roles' prompts, told apart by their system messages (building plans get 3 code
# replies, tested ones 5 unless the test says otherwise).
BUILD_PLANNER = r"You have 3 code replies"
TEST_PLANNER = r"You have [0-9]+ code replies"  # after BUILD_PLANNER in a script: the rest
BUILDER = r"You maintain a rule system"
CONSOLIDATOR = r"You keep an agent's rule system short"
FORMULATOR = r"You turn an agent's rules into a manual"
SUMMARY = r"The task is finished: it took"
REFLECTION = r"The task failed:"

def automanual(cli, srv, out, *args):
    return cli("run", "--no-progress", "--method", "automanual", "--model", "m", "--base-url",
               srv.url, "--cache", "off", "--workers", "0", "--out", str(out), *args, timeout=600)


def saved_state(out: Path) -> dict:
    files = sorted((out / "state").rglob("*.json"), key=lambda p: int(p.stem))
    return json.loads(files[-1].read_text())["state"]


def asked(srv, pattern: str) -> list[list[dict]]:
    """The messages of every request whose first or last message matches `pattern`."""
    return [r["messages"] for r in srv.requests()
            if re.search(pattern, r["messages"][0]["content"])
            or re.search(pattern, r["messages"][-1]["content"])]


def fence(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code}\n```"


def ops(*items: dict) -> str:
    return "Analysis of the epoch.\n" + fence(json.dumps(list(items)), "json")


def client(srv) -> LLMClient:
    return LLMClient("m", LLMConfig(base_url=srv.url, cache="off", max_retries=0))


# -- the sandbox, without an LLM

def test_plain_planner_code_passes_the_checker():
    code = ("def visit(places):\n    seen = {}\n    for p in places:\n"
            "        seen[p] = agent.go_to(p)\n    return seen\n"
            "ids = re.findall(r'mug \\d+', observation)\nassert ids or True, f'none in {observation!r}'\n"
            "text = ', '.join(sorted(set(x.strip().lower() for x in ids)))\nprint(text.split(',')[0])\n"
            "print('go to {} or {0} or {where:>5}'.format('a', where='b'))\n"
            "object = 'mug'  # built-ins' names are free to use")
    assert check_code(code, allowed_attributes(frozenset(ALFWORLD.action_names))) == []
    assert check_code(code) == ['line 4: the attribute `.go_to` is not allowed']  # not an action here
    assert function_sources("def a():\n    pass\n\ndef b(x):\n    return x + 1\n") == \
        ["def b(x):\n    return x + 1"]


def test_the_sandbox_caps_time_memory_and_keeps_the_namespace():
    helpers = list(ALFWORLD.helpers) + ["def go_twice(place):\n    agent.go_to(place)\n"
                                        "    return agent.go_to(place)"]
    process = CodeProcess(ALFWORLD.action_names, {"observation": "you see a mug 1, a mug 2"},
                          helpers, SandboxLimits(timeout_s=1.5, memory_mb=256, cpu_s=30))
    try:
        assert process.run("ids = get_object_with_id(observation, 'mug')\nfirst = go_twice('desk_1')") is None
        event = process.next_event()
        assert event == ActionRequest("go_to", ("desk_1",), "agent.go_to('desk_1')")
        process.answer("You arrive at desk 1.", {"location": "desk 1"})
        assert isinstance(process.next_event(), ActionRequest)
        process.answer("Nothing happens.", {"location": "desk 1"})
        assert process.next_event() == RunEnded()
        limits = Path(f"/proc/{process.pids()[-1]}/limits")  # the plan's process
        if limits.exists():  # Linux: the kernel's caps, and an environment without secrets
            text = limits.read_text()
            assert re.search(r"Max address space\s+268435456", text)
            assert re.search(r"Max cpu time\s+30 ", text) and re.search(r"Max file size\s+0 ", text)
            environ = Path(f"/proc/{process.proc.pid}/environ").read_bytes()
            assert environ.split(b"\0")[0] == b"PYTHONIOENCODING=utf-8" and b"KEY" not in environ
        # variables and the agent's state live on into the next plan
        assert process.run("print(ids, first, agent.location)\nassert 0, 'STOP-HERE'") is None
        ended = process.next_event()
        assert ended.printed == "['mug 1', 'mug 2'] Nothing happens. desk 1\n"
        assert ended.error == "AssertionError: STOP-HERE (line 2: assert 0, 'STOP-HERE')"
        # an endless loop is killed at the wall-clock cap; the next plan starts afresh
        started = time.monotonic()
        assert process.run("n = 0\nwhile True:\n    n += 1") is None
        ended = process.next_event()
        assert ended.killed and "without acting" in ended.error and time.monotonic() - started < 10
        assert process.run("print('fresh')\nprint(ids)") is None
        ended = process.next_event()
        assert ended.printed == "fresh\n" and ended.error.startswith("NameError")
        # too much memory is an error in the plan, not in the worker
        assert process.run("big = 'x' * (512 * 1024 * 1024)") is None
        assert process.next_event().error.startswith("MemoryError")
    finally:
        process.close()
    assert process.proc is None


def test_without_confinement_automanual_refuses_unless_allowed(monkeypatch):
    from lifebench.api import UserError
    from lifebench.methods.automanual import confine

    # a platform without namespaces (not this one): what the probe would say there
    monkeypatch.setattr(confine, "probe", lambda: confine.Confinement(False, "no OS confinement: unshare: EPERM"))
    context = dict(benchmark=get_benchmark("plancraft", None), split="val.small", seed=0,
                   budget=None, model="m")
    with pytest.raises(UserError, match="give --allow-unconfined-code"):
        AutoManualMethod(AutoManualConfig()).setup(StreamContext(**context))
    AutoManualMethod(AutoManualConfig()).setup(StreamContext(**context, allow_unconfined_code=True))


# -- the rule system, without an LLM

def test_builder_operations_write_update_delete_and_renumber():
    system = RuleSystem()
    system.seed(ALFWORLD.seed_rules)
    reply = ops({"op": "write_rule", "rule": "When heating, use the microwave (see rule_3).",
                 "type": "success process", "example": "agent.heat_with('egg 1', 'microwave 1')"},
                {"op": "update_rule", "rule_id": "rule_3", "rule": "Put tasks: find, take, put.",
                 "example": "agent.put_in_or_on('x 1', 'y 1')"},
                {"op": "delete_rule", "rule_id": "rule_1"},
                {"op": "delete_rule", "rule_id": "rule_2"},   # ids as before the list
                {"op": "write_rule", "rule": "x", "type": "Wisdom"},
                {"op": "update_rule", "rule_id": "rule_9", "rule": "y"},
                {"op": "run_python", "code": "import os"})
    operations, problems = parse_operations(reply)
    assert problems == ["item 7: unknown operation 'run_python'"]
    report = system.apply(operations, "epoch_4", success=True)
    assert len(report.applied) == 4 and len(report.refused) == 2
    assert [r.type for r in system.rules] == ["Success Process", "Success Process"]
    # renumbered: the old rule_3 is rule_1, and the reference to it follows
    assert system.rules[0].rule == "Put tasks: find, take, put."
    assert system.rules[0].validation == "seed | epoch_4"
    assert system.rules[1].rule == "When heating, use the microwave (see rule_1)."
    for epoch in ("epoch_5", "epoch_6", "epoch_7"):
        system.apply(parse_operations(ops({"op": "update_rule", "rule_id": 1}))[0], epoch, True)
    assert system.rules[0].validation == "epoch_5 | epoch_6 | epoch_7"  # the last 3
    # a failed epoch writes no success process and no helper
    failed = system.apply(parse_operations(ops(
        {"op": "write_rule", "rule": "z", "type": "Useful Helper Method"},
        {"op": "write_rule", "rule": "When the fridge is closed, taking fails.",
         "type": "Unresolved Error"}))[0], "epoch_8", success=False)
    assert len(failed.refused) == 1 and [r.type for r in system.rules][-1] == "Unresolved Error"
    with pytest.raises(OperationError):
        parse_operations("I would write a rule about fridges.")
    assert parse_operations('[{"op": "delete_rule", "rule_id": 2}]')[0][0].rule_id == 2


def test_the_manual_follows_the_formulators_categories():
    system = RuleSystem()
    system.seed(ALFWORLD.seed_rules)
    system.apply(parse_operations(ops({"op": "write_rule", "rule": "Heat with the microwave.",
                                       "type": "Success Process"}))[0], "epoch_0", True)
    reply = ("1. ...\n2. ...\n" + fence("Overview OVERVIEW-MARK.\n\n## Tasks\nThe processes.\n"
                                        "- **rule_4**\n- **rule_3**\n\n## Searching\nFinding things.\n"
                                        "- **rule_2** (see rule_4)", "markdown"))
    assert system.formulate(reply)
    manual = system.manual
    assert manual.startswith("Overview OVERVIEW-MARK.")
    # renumbered in the manual's order; the rule it left out follows under Other rules
    assert [r.rule[:4] for r in system.rules] == ["Heat", "For ", "When", "At t"]
    assert manual.index("rule_1 (Success Process): Heat") < manual.index("## Searching") \
        < manual.index("rule_3 (Useful Helper Method)") < manual.index("## Other rules") \
        < manual.index("rule_4 (Special Phenomena/Mechanism)")
    assert "```python\nobservation = agent.go_to('drawer 1')" in manual
    assert system.for_planner().startswith("The manual of rules:\nOverview OVERVIEW-MARK.")
    # a reply without the markdown block: a manual by type
    assert not system.formulate("no manual here")
    assert system.manual.startswith("## Special Phenomena/Mechanism")


def test_the_skill_bank_keeps_the_best_entry_per_type():
    bank = SkillBank()
    assert bank.offer(Skill("heat", "failure", "t", reflection="r1"))
    assert bank.offer(Skill("heat", "failure", "t", reflection="r2"))
    assert bank.offer(Skill("heat", "indirect", "t", code="c1"))
    assert not bank.offer(Skill("heat", "failure", "t", reflection="r3"))
    assert bank.offer(Skill("heat", "direct", "t", code="c2"))
    assert not bank.offer(Skill("heat", "indirect", "t", code="c3"))
    assert not bank.offer(Skill("heat", "direct", "t", code="c4"))  # locked
    assert bank.skills["heat"].code == "c2"
    assert SkillBank.from_json(json.loads(json.dumps(bank.to_json()))).skills == bank.skills


def test_the_state_round_trips_through_json():
    method = AutoManualMethod()
    method.setup(StreamContext(benchmark=get_benchmark("plancraft", None), split="val.small",
                               seed=0, budget=None, model="m"))
    method.rules.seed(ALFWORLD.seed_rules)
    method.rules.manual = "MANUAL"
    method.skills.offer(Skill("stick", "direct", "craft a stick", code="agent.act('x')"))
    method.build_report = {"epochs": 1}
    again = AutoManualMethod()
    again.setup(method.ctx)
    again.load_state(json.loads(json.dumps(method.state())))
    assert again.rules.rules == method.rules.rules and again.rules.manual == "MANUAL"
    assert again.skills.skills == method.skills.skills and again.build_report == {"epochs": 1}
    with pytest.raises(ValueError, match="version"):
        again.load_state({"version": 99})


def test_the_instance_context_and_the_nearest_skill_reach_the_planner(llm_server):
    srv = llm_server(script=["unused"])
    benchmark = get_benchmark("plancraft", None)
    instance = benchmark.instances("val.small")[0]
    method = AutoManualMethod()
    method.setup(StreamContext(benchmark=benchmark, split="val.small", seed=0, budget=None,
                               model="m", llm=client(srv)))
    target = benchmark.task_family(instance)
    method.skills.offer(Skill(f"{target}_block", "direct", "craft it",
                              code="def helper_from_skill():\n    return agent.act('x')\n\nhelper_from_skill()"))
    method.skills.offer(Skill("red_bed", "direct", "craft a bed", code="agent.act('y')"))
    context = InstanceContext(provider="autocontext", key="k", text="CONTEXT-MARK: the slots.")
    task = TaskInfo(benchmark="plancraft", split="val.small", instance=instance, seed=0, trial=0,
                    episode_index=0, budget_steps=7, instructions=benchmark.instructions,
                    context=context)
    method.begin_episode(task, None)
    trial = method.trial
    assert context.prompt_block() in trial.system and trial.system.index(context.prompt_block()) \
        > trial.system.index(benchmark.instructions.strip()[:40])
    assert method.extra["automanual_skill"] == f"{target}_block"  # nearest by embeddings
    assert "craft it" in trial.skill and trial.helpers == ["def helper_from_skill():\n    return agent.act('x')"]
    assert "helper_from_skill" in trial.system and trial.max_actions == 7  # the episode's budget
    assert AutoManualMethod.context_use
    method.trial.close()


@pytest.mark.parametrize("field,value", [("build_attempts", 0), ("max_actions", 0),
                                         ("build_tasks", -1), ("api", "python"),
                                         ("code_timeout_s", 0)])
def test_bad_config_values_raise(field, value):
    with pytest.raises(ValueError, match=field):
        AutoManualConfig(**{field: value})


# -- the Planner's trial, against the local server

def test_the_trial_caps_actions_and_code_attempts(llm_server):
    srv = llm_server(script=[
        "1. Loop.\n" + fence("while True:\n    agent.act('look')"),
        "No code this time.",
    ])
    def trial(max_attempts, max_actions):
        return PlanTrial(client(srv), "planner", RoleParams(), "SYSTEM", "RULES", "", GENERIC,
                         max_attempts, max_actions, SandboxLimits(timeout_s=5))
    capped = trial(3, 4)
    actions = [capped.advance("start")] + [capped.advance(f"seen {i}") for i in range(3)]
    assert actions == ["look"] * 4
    with pytest.raises(TrialOver, match="4 actions are used up"):
        capped.advance("seen 4")
    assert len(capped.attempts) == 1 and "obs_4: Act: agent.act('look')" in capped.attempts[0].feedback
    # a reply without code is an attempt; the last one ends the trial
    srv2 = llm_server(script=["Just thinking."])
    lazy = PlanTrial(client(srv2), "planner", RoleParams(), "SYSTEM", "RULES", "", GENERIC, 2, 50,
                     SandboxLimits(timeout_s=5))
    with pytest.raises(TrialOver, match="2 code attempts"):
        lazy.advance("start")
    [first, second] = [r["messages"] for r in srv2.requests()]
    assert first[1]["content"] == "RULES\n\nYour task begins. The first observation:\nstart"
    assert "Execution error: the reply has no ```python code block" in second[-1]["content"]
    capped.close()


# -- through the CLI, the local server and the real environments

def test_alfworld_building_writes_rules_and_the_manual_reaches_the_tested_planner(cli, llm_server,
                                                                                  tmp_path):
    benchmark = get_benchmark("alfworld", None)
    srv = llm_server(script=[
        {"match": SUMMARY, "replies": [
            "I assumed a pen was there.\n" + fence("# SKILL-PICK-MARK\nids, where = find_object(agent, "
                                                   "['sidetable 1', 'desk 1'], 'alarmclock')")]},
        {"match": REFLECTION, "replies": ["It failed."]},
        {"match": BUILDER, "replies": [
            ops({"op": "write_rule", "type": "Success Process",
                 "rule": "RULE-EXAMINE-MARK: to look at an object under a lamp, take it, then use the lamp.",
                 "example": "agent.take_from('book 1', 'bed 1')\nagent.use('desklamp 1')"}),
            "The cause was an imperfect agent.",  # no operations: asked again
            ops({"op": "write_rule", "type": "Corrected Error",
                 "rule": "RULE-CORRECTED-MARK: check what a receptacle holds before assuming it."},
                {"op": "write_rule", "type": "Nonsense", "rule": "refused"}),
        ]},
        {"match": FORMULATOR, "replies": [
            "1. ...\n2. ...\n" + fence("MANUAL-OVERVIEW-MARK\n\n## Basics\nFirst things.\n- **rule_1**\n"
                                       "- **rule_2**\n- **rule_5**\n\n## Tasks\nTask processes.\n"
                                       "- **rule_4**\n- **rule_3**", "markdown")]},
        {"match": BUILD_PLANNER, "replies": [
            # epoch 0, examine: "look at book under the desklamp." solved by its first code
            "1. Understanding.\n" + fence("# [Step 1] get the book\nobs = agent.go_to('bed_1')\n"
                                          "agent.take_from('book 1', 'bed 1')\n# [Step 2] light\n"
                                          "agent.go_to('sidetable 2')\nagent.use('desklamp 1')"),
            # epoch 1, pick: "put some alarmclock on desk." fails, then succeeds
            "1. Understanding.\n" + fence("obs = agent.go_to('sidetable_1')\n"
                                          "assert 'pen 9' in obs, 'CHECK-FAILED: no pen 9'"),
            "Analysis: no pen.\n" + fence("assert 'alarmclock 3' in obs\n"
                                          "agent.take_from('alarmclock 3', 'sidetable 1')\n"
                                          "agent.go_to('desk 1')\nagent.put_in_or_on('alarmclock 3', 'desk 1')"),
        ]},
        {"match": TEST_PLANNER, "replies": [
            "1. Understanding.\n" + fence("obs = agent.go_to('desk_1')\nprint('SEEN', obs[:20])\n"
                                          "agent.take_from('nonexistent 7', 'desk 1')\n"
                                          "assert agent.holding, 'HOLDING-CHECK'"),
            "Try an escape.\n" + fence("import os\nos.system('touch /tmp/automanual-pwned')"),
            "Last.\n" + fence("agent.look()"),
        ]},
    ])
    out = tmp_path / "out"
    result = automanual(cli, srv, out, "--benchmark", "alfworld", "--split", "valid_unseen",
                        "--limit", "1", "--method-arg", "build_tasks=2",
                        "--method-arg", "test_attempts=4")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    build = record["extra"]["automanual_build"]
    assert (build["epochs"], build["direct"], build["indirect"], build["failures"]) == (2, 1, 1, 0)
    assert build["support_split"] == "valid_train" and build["api"] == "alfworld"
    assert [e["task_type"] for e in build["epoch_log"]] == ["examine", "pick"]
    assert [e["attempts"] for e in build["epoch_log"]] == [1, 2]
    assert build["rules"] == 5 and build["builder_unreadable"] == 1 and build["builder_ops_refused"] == 1
    assert build["skills"] == {"examine": "direct", "pick": "indirect"} and build["formulated"]
    # the Builder's prompts: the indirect case, with the failed assert in the trajectory
    builder = asked(srv, BUILDER)
    assert "finished this task with its first code" in builder[0][1]["content"]
    assert "only after 2 code replies" in builder[1][1]["content"]
    assert "AssertionError: CHECK-FAILED: no pen 9" in builder[1][1]["content"]
    assert "SKILL-PICK-MARK" in builder[1][1]["content"]  # the Planner's conclusion
    assert "RULE-EXAMINE-MARK" in builder[1][0]["content"]  # the rules so far
    # the state: rules, manual and skills
    state = saved_state(out)
    rules = state["rules"]["rules"]
    assert len(rules) == 5 and rules[4]["type"] == "Success Process"  # renumbered by the manual
    assert rules[3]["rule"].startswith("RULE-EXAMINE-MARK") and rules[3]["validation"] == "epoch_0"
    assert rules[2]["rule"].startswith("RULE-CORRECTED-MARK")
    assert "SKILL-PICK-MARK" in state["skills"]["pick"]["code"]
    manual = state["rules"]["manual"]
    assert manual.startswith("MANUAL-OVERVIEW-MARK") and len(manual) == build["manual_chars"]
    # the manual reaches the tested Planner, with the examine skill (the test task's type)
    tested = [m for m in asked(srv, TEST_PLANNER) if "You have 4 code" in m[0]["content"]]
    first_prompt = tested[0][1]["content"]
    assert first_prompt.startswith("The manual of rules:\nMANUAL-OVERVIEW-MARK")
    assert "RULE-EXAMINE-MARK" in first_prompt and "RULE-CORRECTED-MARK" in first_prompt
    assert "Code that solved an earlier task of the same kind (look at book under the desklamp.)" \
        in first_prompt
    assert "examine the alarmclock with the desklamp." in first_prompt
    assert record["extra"]["automanual_skill"] == "examine"
    # the Planner's code played real actions; its errors came back as feedback
    trajectory = json.loads(next((out / "trajectories").glob("*.jsonl")).read_text().splitlines()[0])
    played = [s["action"] for s in trajectory["steps"] if s.get("action")]
    assert played == ["go to desk 1", "take nonexistent 7 from desk 1", "look", "look"]
    last = tested[-1]
    feedback = [m["content"] for m in last if m["role"] == "user"][1:]
    assert "obs_1: Act: agent.go_to('desk_1') -> 'go to desk 1'. Obs: You arrive at desk 1." in feedback[0]
    assert "obs_2: Act: agent.take_from('nonexistent 7', 'desk 1')" in feedback[0]
    assert "Nothing happens." in feedback[0]
    assert "Execution error: AssertionError: HOLDING-CHECK (line 4: assert agent.holding, " \
           "'HOLDING-CHECK')" in feedback[0]
    assert "Printed:\nSEEN You arrive at desk" in feedback[0]
    assert "You are at desk 1 and holding nothing." in feedback[0]
    # the escape was refused and said so; nothing ran
    assert "Execution error: Refused: line 1: imports are not allowed" in feedback[1]
    assert not Path("/tmp/automanual-pwned").exists()
    extra = record["extra"]
    assert record["status"] == "ok" and not record["success"] and record["steps"] == 4
    assert extra["automanual_code_attempts"] == 4 and extra["automanual_code_refused"] == 1
    assert extra["automanual_code_actions"] == [2, 0, 1, 1]
    assert extra["automanual_end"] == "its 4 code attempts ended without finishing the task"
    usage = record["llm_usage"]
    # building: 1 plan (epoch 0), 2 plans and the clean-code request (epoch 1)
    assert usage["build_planner"]["calls"] == 4 and usage["builder"]["calls"] == 3
    assert usage["formulator"]["calls"] == 1 and usage["planner"]["calls"] == 4


def test_consolidation_and_a_resumed_stream_that_builds_nothing(cli, llm_server, tmp_path):
    script = [
        {"match": BUILDER, "replies": [ops({"op": "write_rule", "type": "Special Phenomena/Mechanism",
                                            "rule": "RESUME-RULE-MARK: a first look costs a step."})]},
        # 4 rules, at most 3: the consolidator reads the epoch, then merges two rules
        {"match": CONSOLIDATOR, "replies": [
            fence('[{"op": "get_interactions", "epochs": ["epoch_0"]}]', "json"),
            ops({"op": "update_rule", "rule_id": "rule_1",
                 "rule": "MERGED-MARK: only receptacles are listed at first; RESUME-RULE-MARK too."},
                {"op": "delete_rule", "rule_id": "rule_4"})]},
        {"match": REFLECTION, "replies": ["It failed."]},
        {"match": FORMULATOR, "replies": ["no markdown"]},
        {"match": TEST_PLANNER, "replies": ["Look.\n" + fence("agent.look()")]},
    ]
    out = tmp_path / "out"
    args = ("--benchmark", "alfworld", "--split", "valid_unseen", "--method-arg", "build_tasks=1",
            "--method-arg", "test_attempts=1", "--method-arg", "build_attempts=1",
            "--method-arg", "max_rules=3")
    first = llm_server(script=script)
    result = automanual(cli, first, out, *args, "--limit", "1")
    assert result.returncode == 0, result.stderr
    assert len(asked(first, BUILDER)) == 1
    build = read_records(out)[0]["extra"]["automanual_build"]
    assert build["failures"] == 1 and build["consolidation_calls"] == 2 and build["rules"] == 3
    consolidator = asked(first, CONSOLIDATOR)
    assert "It holds 4 rules and may hold at most 3" in consolidator[0][0]["content"]
    assert "== epoch_0\nTask, first observation:" in consolidator[1][-1]["content"]
    assert [r["rule"][:11] for r in saved_state(out)["rules"]["rules"]][0] == "MERGED-MARK"
    second = llm_server(script=script)
    result = automanual(cli, second, out, *args, "--limit", "2")
    assert result.returncode == 0, result.stderr
    one, two = read_records(out)
    assert "automanual_build" in one["extra"] and "automanual_build" not in two["extra"]
    # no building, no formulating: only the tested Planner was asked, with the saved manual
    assert asked(second, BUILDER) == [] and asked(second, FORMULATOR) == []
    assert set(two["llm_usage"]) == {"planner"}
    [prompt] = [m[1]["content"] for m in asked(second, TEST_PLANNER)]
    assert prompt.startswith("The manual of rules:\n## Special Phenomena/Mechanism")
    assert "rule_1 (Special Phenomena/Mechanism): MERGED-MARK" in prompt and "RESUME-RULE-MARK" in prompt


@pytest.mark.parametrize("benchmark,split", [("plancraft", "val.small"), ("textworld", "ige-cooking")])
def test_smoke_on_other_benchmarks_with_the_generic_agent(cli, llm_server, tmp_path, benchmark, split):
    noop = get_benchmark(benchmark).noop_action
    srv = llm_server(script=[
        {"match": BUILDER, "replies": [ops({"op": "write_rule", "type": "Unresolved Error",
                                            "rule": "SMOKE-RULE: waiting does not help."})]},
        {"match": REFLECTION, "replies": ["Waiting did not help."]},
        {"match": SUMMARY, "replies": ["Fine.\n" + fence(f"agent.act({noop!r})")]},
        {"match": FORMULATOR, "replies": [fence("SMOKE-MANUAL\n## All\n- **rule_1**", "markdown")]},
        {"match": TEST_PLANNER, "replies": [
            "Wait once.\n" + fence(f"answer = agent.act({noop!r})\nassert 'won' in answer, 'SMOKE-CHECK'")]},
    ])
    out = tmp_path / "out"
    result = automanual(cli, srv, out, "--benchmark", benchmark, "--split", split, "--limit", "1",
                        "--method-arg", "build_tasks=1", "--method-arg", "test_attempts=2")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    build = record["extra"]["automanual_build"]
    bench = get_benchmark(benchmark)
    assert build["support_split"] == bench.support_split and build["api"] == "generic"
    assert build["epochs"] == 1 and build["failures"] == 1 and build["rules"] == 1
    assert build["build_actions"] == 3  # one action per code reply, 3 replies
    assert record["status"] == "ok" and record["steps"] == 2
    assert record["extra"]["automanual_code_attempts"] == 2
    [prompt] = {m[1]["content"] for m in asked(srv, TEST_PLANNER) if "You have 2 code" in m[0]["content"]}
    assert prompt.startswith("The manual of rules:\nSMOKE-MANUAL") and "SMOKE-RULE" in prompt
    assert "agent.act(command) -> str" in asked(srv, TEST_PLANNER)[0][0]["content"]
