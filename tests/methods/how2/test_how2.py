"""How² and the harness's teacher service, against the real local OpenAI-protocol server
and the real environments: Algorithm 1's hits, misses, relevance filtering, tags and parse;
the strategies; the teachers; the Table-1 grid and table."""

from __future__ import annotations

import json
import os
import re

import pytest

from conftest import markdown_table, read_records
from lifebench.testing.fakeserver import is_tool_probe

INSTANCE = "VAL0491"  # val.small, target quartz
TARGET = "quartz"


def role_of(request: dict) -> str:
    last = str(request["messages"][-1].get("content") or "")
    system = str(request["messages"][0].get("content") or "")
    for role, marker in (("relevance", "Does this memory apply to the goal"),
                         ("ask", "Write a procedural how-to question"),
                         ("parse", "Rewrite the teacher's answer as an entry")):
        if marker in last:
            return role
    return "teacher" if "expert mentor" in system else "actor"


def call(name: str, **arguments) -> dict:
    return {"tool_call": {"name": name, "arguments": arguments}}


def how2(cli, srv, out, *args, trials=1, instance=INSTANCE, split="val.small"):
    chosen = ["--instances", instance] if instance else []
    return cli("run", "--no-progress", "--benchmark", "plancraft", "--split", split,
               *chosen, "--trials", str(trials), "--method", "how2",
               "--model", "m", "--base-url", srv.url, "--cache", "off", "--workers", "0",
               "--out", str(out), *args)


ENTRY_A = "RECIPE: quartz\nREQUIREMENTS: quartz_ore\nPROCEDURE: ADVICE-A smelt the quartz ore\n" \
          "RELATED ITEMS: ['Quartz_Ore', 'nether quartz']"
ENTRY_B = "RECIPE: quartz\nREQUIREMENTS: quartz_ore\nPROCEDURE: ADVICE-B quartz comes from its ore\n" \
          "RELATED ITEMS: ['quartz_ore']"
ROLES = [{"match": "Does this memory apply to the goal", "replies": ["yes", "no", "yes", "no"]},
         {"match": "Write a procedural how-to question", "replies": ["How do I make quartz?",
                                                                     "How do I make quartz now?"]},
         {"match": "Rewrite the teacher's answer as an entry", "replies": [ENTRY_A, ENTRY_B]}]


def method_requests(srv) -> list[dict]:
    """The requests How² sent, without the harness's start-up tool probe."""
    return [r for r in srv.requests() if not is_tool_probe(r)]


def actor_tool_results(srv) -> list[str]:
    """Every tool result the actor was shown, in order, without repeats."""
    seen = [m["content"] for r in method_requests(srv) if role_of(r) == "actor"
            for m in r["messages"] if m["role"] == "tool"]
    return list(dict.fromkeys(seen))


def test_algorithm1_hits_misses_relevance_tags_and_parse(cli, llm_server, tmp_path):
    # Four episodes of one task; the actor reads memory, then gives up (one step each).
    actor = [call("read_memory", recipe=TARGET), call("impossible", reason="x"),
             call("read_memory", recipe=TARGET), call("impossible", reason="x"),
             call("read_memory", recipe=TARGET), call("impossible", reason="x"),
             call("read_memory", recipe="quartz_ore"), call("impossible", reason="x")]
    srv = llm_server(script=ROLES + actor)
    out = tmp_path / "out"
    result = how2(cli, srv, out, trials=4)
    assert result.returncode == 0, result.stderr
    records = sorted(read_records(out), key=lambda r: r["episode_index"])
    got = [(r["extra"]["cache_misses"], r["extra"]["memory_hits"], r["extra"]["relevance_rejected"],
            r["extra"]["stored"], r["extra"]["memory_entries"]) for r in records]
    assert got == [
        (1, 0, 0, 1, 1),  # empty memory: a miss, the parsed entry stored
        (0, 1, 0, 0, 1),  # exact query found, judged relevant: a hit, no teacher
        (1, 0, 1, 1, 2),  # found but judged irrelevant: a miss, a second entry
        (0, 1, 1, 0, 2),  # a tag of both entries: one judged relevant, one not
    ]
    assert [r["extra"]["intervention"] for r in records] == [True, False, True, False]
    assert all(r["extra"]["first_read_memory"] == 0 and r["steps"] == 1 for r in records)
    requests = method_requests(srv)
    roles = [role_of(r) for r in requests]
    # relevance is asked once per entry found; ask and parse once per miss
    assert roles.count("relevance") == 4 and roles.count("ask") == 2 and roles.count("parse") == 2
    # role temperatures: the paper's 0.6 for the actor, 0.2 for the others
    assert {r["temperature"] for r in requests if role_of(r) == "actor"} == {0.6}
    assert {r["temperature"] for r in requests if role_of(r) != "actor"} == {0.2}
    results = actor_tool_results(srv)
    # a miss returns the teacher's answer and the new (parsed) entry (Algorithm 1, line 16;
    # Fig. 24 shows both); a hit the relevant ones
    answer = "Answer: To craft quartz, follow these steps:\n1. smelt: from I"
    assert results[0].startswith("Nothing relevant in memory for quartz. Asked the teacher: "
                                 f"How do I make quartz?\n{answer}")
    assert results[0].endswith(f"\nParsed answer: {ENTRY_A}")
    assert results[2].startswith("Nothing relevant in memory for quartz. Asked the teacher: "
                                 f"How do I make quartz now?\n{answer}")
    assert results[2].endswith(f"\nParsed answer: {ENTRY_B}")
    assert results[1::2] == [f"Memory for quartz (1 entry):\n{ENTRY_A}",
                             f"Memory for quartz_ore (1 entry):\n{ENTRY_A}"]
    assert [r["extra"]["teacher_answered_for"] for r in records] == [{"task": 1}, {}, {"task": 1}, {}]
    assert [r["extra"]["teacher_answer_kinds"] for r in records] == [{"plan": 1}, {}, {"plan": 1}, {}]
    # the parse role saw the teacher's answer in the paper's form, slots without brackets
    parse = [r for r in requests if role_of(r) == "parse"][0]["messages"][-1]["content"]
    assert "To craft quartz, follow these steps:\n1. " in parse and "How do I make quartz?" in parse
    assert not re.search(r"\[(I\d+|[A-C]\d|0)\]", parse)
    relevance = [r for r in requests if role_of(r) == "relevance"][0]["messages"][-1]["content"]
    assert ENTRY_A in relevance and '# Memory for "quartz"' in relevance
    # the memory roles get the main system prompt with the memory block; the actor without it
    assert all("Memory system:" in r["messages"][0]["content"] for r in requests if role_of(r) != "actor")
    actor = [r for r in requests if role_of(r) == "actor"]
    assert all("Memory system:" not in r["messages"][0]["content"] for r in actor)
    assert all("A1 A2 A3" in r["messages"][0]["content"] and "[A1]" not in r["messages"][0]["content"]
               for r in actor), "Figure 10's prompt, slots without brackets, not the package's"
    assert not re.search(r"\[I\d+\]", actor[0]["messages"][1]["content"]), "observations too"
    memory_tool = next(t for t in actor[0]["tools"] if t["function"]["name"] == "read_memory")
    assert "first" in memory_tool["function"]["description"] and "unsure" in memory_tool["function"]["description"]
    # tokens per role reach the records
    assert set(records[0]["llm_usage"]) == {"actor", "ask", "parse"}
    assert set(records[1]["llm_usage"]) == {"actor", "relevance"}
    # the entry is stored under the query, its recipe and its related items
    state = json.loads(sorted((out / "state").rglob("*.json"))[-1].read_text())["state"]["memory"]
    assert {"quartz", "quartz_ore", "nether quartz"} <= set(state)


@pytest.mark.parametrize("strategy,first,second", [
    # what Algorithm 1 returns to the actor on the first read (a miss) and the second (the
    # same query, next episode): the answer and the parsed entry (Fig. 24), or the raw
    # answer, then the memory
    ("just-ask", "answer", "answer"),
    ("memory-only", "answer", "hit answer"),
    ("parse", "answer and entry", "hit entry"),
    ("relevance", "answer", "hit answer"),
    ("how2", "answer and entry", "hit entry"),
])
def test_each_strategy_returns_what_algorithm1_returns(cli, llm_server, tmp_path, strategy, first, second):
    actor = [call("read_memory", recipe=TARGET), call("impossible", reason="x")] * 2
    srv = llm_server(script=ROLES + actor)
    result = how2(cli, srv, tmp_path / "out", "--method-arg", f"strategy={strategy}", trials=2)
    assert result.returncode == 0, result.stderr
    results = actor_tool_results(srv)
    assert len(results) == 2
    for got, expected in zip(results, (first, second)):
        body = got.split("\n", 1)[1]
        assert got.startswith("Memory for quartz (1 entry)" if expected.startswith("hit")
                              else "Nothing relevant in memory for quartz. Asked the teacher")
        if expected == "answer and entry":
            assert re.match(r"Answer: To craft quartz, follow these steps:\n1\. (move|smelt): from I\d+ ", body)
            assert body.endswith(f"\nParsed answer: {ENTRY_A}")
        elif expected.endswith("entry"):
            assert body == ENTRY_A
        else:
            assert re.match(r"To craft quartz, follow these steps:\n1\. (move|smelt): from I\d+ ", body)


def test_roles_see_the_inventory_after_a_forced_noop_and_a_format_error(cli, llm_server, tmp_path):
    """After three thinks (a forced no-op: the env answers "Ok") and after a move the env
    refuses (a format error), the roles still see the state: the target and the inventory."""
    actor = [call("think", thought="a"), call("think", thought="b"), call("think", thought="c"),
             call("read_memory", recipe=TARGET),
             call("move", slot_from="I1", slot_to="I1", quantity=1),
             call("read_memory", recipe="quartz_ore"), call("impossible", reason="x")]
    srv = llm_server(script=ROLES + actor)
    result = how2(cli, srv, tmp_path / "out", "--method-arg", "strategy=just-ask")
    assert result.returncode == 0, result.stderr
    [record] = read_records(tmp_path / "out")
    assert record["extra"]["forced_noops"] == 1 and record["extra"]["cache_misses"] == 2
    contexts = [r["messages"][-1]["content"].split("# Agent context\n")[1].split("\n\n")[0]
                for r in method_requests(srv) if role_of(r) == "ask"]
    assert len(contexts) == 2
    for context in contexts:
        assert context.startswith("Craft an item of type: quartz\ninventory:\n - ")
        assert "Ok" not in context and "Format Error" not in context and "[I" not in context


def test_base_has_no_memory_and_non_environment_calls_are_bounded(cli, llm_server, tmp_path):
    # base offers no read_memory; a call to it is invalid and gets feedback; three thinks in a
    # row cost a step as a no-op
    actor = [call("read_memory", recipe=TARGET), call("think", thought="a"), call("think", thought="b"),
             call("think", thought="c"), call("impossible", reason="x")]
    srv = llm_server(script=actor)
    out = tmp_path / "out"
    result = how2(cli, srv, out, "--method-arg", "strategy=base")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["steps"] == 2 and record["extra"]["forced_noops"] == 1
    assert record["extra"]["invalid_tool_calls"] == 1 and record["extra"]["cache_misses"] == 0
    requests = method_requests(srv)
    assert all("read_memory" not in {t["function"]["name"] for t in r["tools"]} for r in requests)
    feedback = [m["content"] for m in requests[1]["messages"] if m["role"] == "tool"]
    assert feedback and "unknown tool 'read_memory'" in feedback[-1]
    assert [step.get("action") for step in json.loads(
        next((out / "trajectories").glob("*.jsonl")).read_text().splitlines()[0])["steps"][1:]] == \
        ["think: (no action)", "impossible: x"]


def test_memory_is_saved_with_the_method_state_and_starts_empty_per_seed(cli, llm_server, tmp_path):
    actor = [call("read_memory", recipe=TARGET), call("impossible", reason="x")] * 2
    srv = llm_server(script=ROLES + actor)
    out = tmp_path / "out"
    result = how2(cli, srv, out, "--seeds", "0,1")
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert sorted((r["seed"], r["extra"]["cache_misses"]) for r in records) == [(0, 1), (1, 1)]
    states = [json.loads(path.read_text()) for path in (out / "state").rglob("*.json")]
    memories = [s["state"]["memory"] for s in states if "state" in s]
    assert len(memories) == 2
    for memory in memories:  # under the query and every tag, one entry each
        assert {"quartz", "quartz_ore"} <= set(memory) and len(memory["quartz"]) == 1
    # each seed learnt on its own (the scripted parse answers differ between the two misses)
    assert sorted(m["quartz"][0]["text"] for m in memories) == [ENTRY_A, ENTRY_B]


def test_planner_following_model_solves_with_how2(cli, llm_server, tmp_path):
    srv = llm_server(policy="plancraft", script=ROLES)
    out = tmp_path / "out"
    result = how2(cli, srv, out, "--limit", "6", instance="", split="val.small")
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert len(records) == 6 and all(r["success"] for r in records)


def test_executable_teacher_answers_solve_every_val_task(cli, tmp_path):
    """An agent that plays the executable teacher's answer literally succeeds on every
    possible val task (and declares the impossible ones impossible)."""
    out = tmp_path / "out"
    result = cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val",
                 "--method", "teacher-follower", "--workers", "2", "--out", str(out), timeout=900)
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    possible = [r for r in records if not r["extra"]["impossible_truth"]]
    assert len(records) == 570 and len(possible) > 400
    assert all(r["success"] for r in possible)
    assert all(r["success"] for r in records)
    assert all(r["extra"]["teacher_calls"] == 1 for r in records)


@pytest.mark.parametrize("benchmark,split,args", [
    ("alfworld", "valid_unseen", ["--limit", "2"]),
    ("textworld", "ige-cooking", ["--limit", "2"]),  # the policy fits IGE's 80 steps
    ("scienceworld", "step18-v1", ["--limit", "2", "--max-steps", "200"]),  # gold paths run long
])
def test_teacher_on_other_benchmarks(cli, tmp_path, benchmark, split, args):
    """The teacher service is backed by each benchmark's oracle: its executable answer,
    played literally, wins."""
    out = tmp_path / "out"
    result = cli("run", "--no-progress", "--benchmark", benchmark, "--split", split,
                 "--method", "teacher-follower", "--workers", "0", "--out", str(out), *args)
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert records and all(r["success"] for r in records)


def test_teacher_styles_on_plancraft(llm_server):
    from lifebench import registry
    from lifebench.config.run import LLMConfig
    from lifebench.llm.client import LLMClient
    from lifebench.runner.teacher import TeacherService

    bench = registry.get_benchmark("plancraft")
    instance = next(i for i in bench.instances("val") if (i.metadata["optimal_path_length"] or 0) >= 3)
    env = bench.make_env(instance, 0)
    srv = llm_server(script=[{"match": "expert mentor", "replies": ["Make planks first."]}])
    teacher = TeacherService(bench, LLMClient("m", LLMConfig(base_url=srv.url)))
    teacher.bind(env)
    env.reset()
    plan = teacher.plan()
    target = instance.metadata["target"]
    header = f"To craft {target}, follow these steps:"
    executable = teacher.ask("how?", "executable").splitlines()
    assert executable[0] == header
    assert [line.split(". ", 1)[1] for line in executable[1:]] == [s.action for s in plan.steps]
    partial = teacher.ask("how?", "partially-executable").splitlines()
    assert partial[0] == header and not any("[I" in line for line in partial)
    assert any(re.fullmatch(r"\d+\. move \w+ to \[[A-C][1-3]\]", line) for line in partial)
    assert partial[-1].endswith(f"move {target} to a free inventory slot")
    grouped = teacher.ask("how?", "subgoal-partially-executable").splitlines()
    assert grouped[0] == header and grouped[1].startswith("1. ") and grouped[2].startswith("1.1. ")
    assert sum(bool(re.match(r"\d+\. ", line)) for line in grouped[1:]) == len(plan.subgoals) >= 2
    assert teacher.ask("how?", "non-executable") == "Make planks first."
    request = method_requests(srv)[-1]["messages"]
    system, sent = request[0]["content"], request[-1]["content"]
    # Figure 19: the rules, Plancraft's background and the worked example; the plan in
    # spatial words with quantities, the inventory as totals, no slots
    assert "glass_bottle" in system and "planner output is always correct" in system
    assert "shapes (e.g. 2x2)" in system and "no furnace is needed" in system
    assert "cell of the crafting grid" in sent and not re.search(r"\[(I\d+|[A-C]\d)\]", sent)
    assert re.search(r"put \d+ \w+ in the", sent), "quantities kept"
    assert "the inventory holds" in sent  # aggregated: item totals, no slots
    assert teacher.calls == 4
    teacher.unbind()
    with pytest.raises(RuntimeError):
        teacher.ask("how?")


def test_curriculum_split_orders_ingredients_first_and_every_strategy_runs_on_it(cli, llm_server, tmp_path):
    from lifebench import registry
    from lifebench.benchmarks.plancraft.curriculum import item_ranks

    bench = registry.get_benchmark("plancraft")
    ordered = bench.instances("val.repeated.curriculum")
    assert sorted(i.instance_id for i in ordered) == sorted(i.instance_id for i in bench.instances("val.repeated"))
    ranks = item_ranks()
    assert ranks["oak_log"] < ranks["oak_planks"] < ranks["stick"]
    positions = [ranks[i.metadata["target"]] for i in ordered]
    assert positions == sorted(positions)
    srv = llm_server(script=[call("impossible", reason="x")])
    result = how2(cli, srv, tmp_path / "a", "--method-arg", "strategy=curriculum", instance=INSTANCE)
    assert result.returncode == 2 and "use --split val.small.curriculum" in result.stderr
    result = how2(cli, srv, tmp_path / "b", "--method-arg", "strategy=curriculum",
                  split="val.small.curriculum")
    assert result.returncode == 0, result.stderr
    result = how2(cli, srv, tmp_path / "c", "--method-arg", "strategy=just-ask",
                  split="val.small.curriculum")
    assert result.returncode == 0, result.stderr


def test_the_curriculum_order_does_not_depend_on_the_process():
    """The recipe graph's cycles are broken in the same order whatever the hash seed of the
    process (the package builds its graph from sets)."""
    import subprocess
    import sys

    code = ("from lifebench.benchmarks.plancraft.curriculum import item_ranks; "
            "print(sorted(item_ranks(1).items()))")
    ranks = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONHASHSEED": str(h)}).stdout for h in (1, 2, 3)}
    assert len(ranks) == 1


def test_table1_runs_in_curriculum_order_with_a_minus_curriculum_row(cli, llm_server, tmp_path):
    srv = llm_server(policy="plancraft", script=ROLES)
    out = tmp_path / "grid"
    for spec in ("specs/how2-table1.toml", "specs/how2-table6.toml"):  # as `make how2-table1`
        result = cli("run", spec, "--no-progress", "--model", "m", "--base-url", srv.url,
                     "--cache", "off", "--limit", "1", "--seeds", "0,1", "--workers", "2",
                     "--out", str(out))
        assert result.returncode == 0, result.stderr
    records = read_records(out)
    ordered = [r for r in records if r["split"].endswith(".curriculum")]
    configs = {(r["extra"]["how2_strategy"], r["extra"]["how2_teacher"]) for r in ordered}
    assert len(configs) == 1 + 6 * 4  # base once (it asks no teacher), the rest × 4 teachers
    assert {r["split"] for r in ordered} == {"val.curriculum", "val.repeated.curriculum"}
    file_order = {(r["split"], r["extra"]["how2_strategy"]) for r in records if r not in ordered}
    assert file_order == {("val.repeated", "how2")}, "the -curriculum row only"
    table = cli("leaderboard", str(out), "--no-plots")
    assert table.returncode == 0, table.stderr
    titles = table.stdout.split("\n\n")
    title = next(t for t in titles if t.startswith("How² on Plancraft (Table 1"))
    assert "curriculum order, the paper's Table 1 setting" in title
    table1 = markdown_table(table.stdout, title)
    # base; then each strategy's four teachers and its avg row (the paper's layout)
    assert [(row["strategy"], row["teacher"]) for row in table1[:6]] == \
        [("base", "-"), ("just-ask", "executable"), ("just-ask", "partially-executable"),
         ("just-ask", "subgoal-partially-executable"), ("just-ask", "non-executable"), ("just-ask", "avg")]
    assert len(table1) == 1 + 5 * 5 and {row["strategy"] for row in table1} == \
        {"base", "just-ask", "memory-only", "parse", "relevance", "how2"}
    assert all(re.fullmatch(r"\d\.\d{3} ± \d\.\d{3}", row["low SR"]) for row in table1 if row["teacher"] != "avg")
    assert all(row["seeds"] == "2" for row in table1 if row["teacher"] != "avg")
    paper = markdown_table(table.stdout, next(t for t in titles if t.startswith("How² Table 1 as published")))
    assert paper[-1] == {"strategy": "how2", "teacher": "avg", "low SR": "0.52", "high SR": "0.50",
                         "low imp. F1": "0.87", "high imp. F1": "0.78", "low avg cache miss": "0.88",
                         "high avg cache miss": "0.62", "low avg intervention": "0.77",
                         "high avg intervention": "0.53"}
    ablations = markdown_table(table.stdout, next(t for t in titles if t.startswith("How² ablations (Table 6")))
    assert [row["ablation"] for row in ablations] == ["how2", "-curriculum", "+ask-first"]
    assert [row["paper SR"] for row in ablations] == ["0.50", "0.49", "0.52"]
    tests = markdown_table(table.stdout, next(t for t in titles if t.startswith("How²'s hypothesis tests")))
    assert tests[0]["comparison"].startswith("H1") and tests[-1]["comparison"].startswith("H2")
    assert [row["examples"] for row in tests[:2]] == ["solvable (paper)", "all"]
    anova = markdown_table(table.stdout, next(t for t in titles if t.startswith("How² Table 7 (solvable")))
    assert [row["term"] for row in anova] == ["C(teacher)", "C(memory)", "C(teacher):C(memory)", "Residual"]
    assert anova[-1]["paper df"] == "11276"
    assert any(t.startswith("How² Table 7 (all examples)") for t in titles)
    for name in ("How² Table 8", "How² Table 9", "How² Table 10", "How² Figure 4", "How² Figures 5 and 9"):
        assert any(t.startswith(name + ":") for t in titles), name


def test_the_teacher_answers_for_the_item_asked_about(cli, llm_server, tmp_path):
    """A question about an intermediate item (jungle_planks, while the target is
    jungle_button) is answered with that item's plan, and stored under it; a query that
    names no item is answered for the target, and the record says so."""
    actor = [call("read_memory", recipe="jungle_planks"),
             call("read_memory", recipe="how to start"), call("impossible", reason="x")]
    srv = llm_server(script=[{"match": "Write a procedural how-to question",
                              "replies": ["How do I make jungle planks?", "How do I start?"]}]
                     + actor)
    out = tmp_path / "out"
    result = how2(cli, srv, out, "--method-arg", "strategy=memory-only",
                  instance="VAL0403", split="val.small")
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["extra"]["teacher_answered_for"] == {"item": 1, "task: unknown item": 1}
    state = json.loads(sorted((out / "state").rglob("*.json"))[-1].read_text())["state"]["memory"]
    [planks] = state["jungle_planks"]
    assert planks["text"].startswith("To craft jungle_planks, follow these steps:\n1. move: from I")
    assert "jungle_button" not in planks["text"]  # the plan stops at the item asked about
    [start] = state["how to start"]
    assert start["text"].startswith("To craft jungle_button, follow these steps:")


def test_appendix_tables_count_errors_complexity_first_reads_and_cache_buckets():
    from lifebench.api import EpisodeRecord, Status
    from lifebench.methods.how2.analysis import appendix_tables

    def record(i, success, status=Status.OK, **extra):
        return EpisodeRecord(
            run_id="r", benchmark="plancraft", split="val.curriculum", instance_id=f"i{i}",
            method="how2", method_config_hash="c", model="m", seed=0, trial=0, episode_index=i,
            budget_steps=30, steps=5, success=success, score=float(success), status=status,
            task_family="x", tokens_in=3000, tokens_out=1000,
            extra={"how2_strategy": "just-ask", "how2_teacher": "executable", **extra})

    records = [
        record(0, True, complexity="easy", first_read_memory=0, cache_misses=1, memory_hits=0,
               off_plan_crafted=[]),
        record(1, False, Status.BUDGET_EXHAUSTED, complexity="hard", first_read_memory=4,
               cache_misses=2, memory_hits=0, off_plan_crafted=["birch_planks"]),
        record(2, False, complexity="medium", impossible_predicted=True, impossible_truth=False,
               first_read_memory=None, cache_misses=0, memory_hits=0, off_plan_crafted=[]),
        record(3, True, complexity="easy", first_read_memory=0, cache_misses=1, memory_hits=1,
               off_plan_crafted=["stick"]),  # solved: not an error
        # an impossible example declared impossible: Plancraft's success, not in the paper's SR
        record(4, True, complexity="impossible", impossible_predicted=True, impossible_truth=True,
               first_read_memory=0, cache_misses=0, memory_hits=0, off_plan_crafted=[]),
    ]
    tables = {t.title.split(":")[0]: t for t in appendix_tables(records)}
    row = lambda name: dict(zip(tables[name].headers, tables[name].rows[0]))
    assert row("How² Table 8")["low tokens"] == "4.0k" and row("How² Table 8")["high tokens"] == "-"
    assert (row("How² Table 9")["low SR"], row("How² Table 9")["low impossible error"],
            row("How² Table 9")["low max steps error"]) == ("0.500", "0.250", "0.250")
    assert row("How² Table 9")["low eager crafting error"] == "0.250"
    assert row("How² Table 9")["low SR all examples"] == "0.600"  # 3 of 5
    assert [row("How² Table 10")[f"low {c}"] for c in ("easy", "medium", "hard")] == ["1.000", "0.000", "0.000"]
    assert (row("How² Table 10")["low overall"], row("How² Table 10")["low overall all examples"]) \
        == ("0.500", "0.600")
    assert row("How² Figure 4")["first read at 0"] == "1.00 (2)" and row("How² Figure 4")["never read"] == "0.00 (1)"
    assert row("How² Figure 4")["first read at 3+"] == "0.00 (1)"
    figure5 = row("How² Figures 5 and 9")
    assert figure5["misses 1 hits 0"] == "1.00 (1)" and figure5["misses 2+ hits 0"] == "0.00 (1)"
    assert "How² Table 9 as published (Llama 3.3 70B, 3 seeds, curriculum order), cited" in \
        [t.title for t in appendix_tables(records)]


def test_the_tests_count_only_solvable_examples_for_the_papers_set():
    from lifebench.api import EpisodeRecord, Status
    from lifebench.methods.how2.reporting import tests

    def record(i, teacher, success, impossible):
        return EpisodeRecord(
            run_id="r", benchmark="plancraft", split="val.curriculum", instance_id=f"i{i}",
            method="how2", method_config_hash=teacher, model="m", seed=0, trial=0,
            episode_index=i, budget_steps=30, steps=5, success=success, score=float(success),
            status=Status.OK, task_family="x",
            extra={"how2_strategy": "just-ask", "how2_teacher": teacher, "impossible_truth": impossible})

    records = []
    for i in range(40):  # a tenth impossible, never solved; executable solves 3 of 4 solvable
        impossible = i % 10 == 0
        records.append(record(i, "executable", not impossible and i % 4 != 1, impossible))
        records.append(record(i, "subgoal-partially-executable", not impossible and i % 2 == 0, impossible))
    [table, *_] = tests(records)
    h1 = [dict(zip(table.headers, row)) for row in table.rows if row[0].startswith("H1")]
    assert [(row["examples"], row["paper's n a"]) for row in h1] == [("solvable (paper)", "36"), ("all", "40")]
    assert h1[0]["paper's sig"] == "*" and float(h1[0]["paper's p"]) < 0.05
    # ours: the 36 solvable examples paired; 10 discordant, all executable's: McNemar
    assert (h1[0]["ours n"], h1[0]["ours sig"]) == ("36 (72 results)", "*")
    assert h1[0]["ours p"] == f"{2 * 0.5 ** 10:.3g}"


@pytest.mark.parametrize("benchmark,split", [("alfworld", "valid_unseen"), ("textworld", "ige-cooking"),
                                             ("scienceworld", "step18-v1")])
def test_how2_runs_on_every_benchmark_with_an_oracle(cli, llm_server, tmp_path, benchmark, split):
    """Free-text benchmarks: one `act(command)` tool; the teacher answers from the
    walkthrough / gold path; the parsed advice is stored under the query and its tags."""
    srv = llm_server(script=ROLES + [call("read_memory", query="the task"), call("act", command="look")])
    out = tmp_path / "out"
    result = cli("run", "--no-progress", "--benchmark", benchmark, "--split", split, "--limit", "1",
                 "--max-steps", "2", "--method", "how2", "--model", "m", "--base-url", srv.url,
                 "--cache", "off", "--workers", "0", "--out", str(out))
    assert result.returncode == 0, result.stderr
    [record] = read_records(out)
    assert record["steps"] == 2 and record["extra"]["cache_misses"] == 1
    assert record["extra"]["memory_entries"] == 1
    requests = method_requests(srv)
    assert {t["function"]["name"] for t in requests[0]["tools"]} == {"act", "think", "read_memory"}
    answer = [m["content"] for r in requests if role_of(r) == "actor" for m in r["messages"]
              if m["role"] == "tool" and m["content"].startswith("Nothing relevant in memory")]
    assert answer and ENTRY_A in answer[0]
    parse = [r for r in requests if role_of(r) == "parse"][0]["messages"][-1]["content"]
    assert "To complete the task, follow these steps:\n1. " in parse


def test_crafter_has_no_teacher(cli, llm_server, tmp_path):
    srv = llm_server(script=[call("act", command="noop")])
    result = cli("run", "--no-progress", "--benchmark", "crafter", "--split", "seeds-100", "--limit", "1",
                 "--method", "how2", "--model", "m", "--base-url", srv.url, "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and "no teacher" in result.stderr


def test_memory_round_trip_and_exact_match():
    from lifebench.methods.how2.memory import Entry, Memory

    memory = Memory()
    entry = Entry(text="advice", question="q?", query="Oak_Planks ", tags=("stick", "Stick"))
    assert memory.store(entry) == ["oak_planks", "stick"]
    assert memory.store(entry) == []  # a set: the same text once per key
    assert memory.lookup("oak planks") == [] and memory.lookup(" OAK_PLANKS") == [entry]
    again = Memory.from_json(json.loads(json.dumps(memory.to_json())))
    assert again.entries == memory.entries and len(again) == 1


def test_an_item_already_held_is_never_not_possible():
    """Issue 62's repro: 4 oak_planks and 2 oak_log held, the target a crafting_table, the
    question about oak_planks. The planner's empty plan (nothing to do) was read as
    impossible; the answer says nothing is left to do, as it does for an item on the grid."""
    from lifebench.benchmarks.plancraft.teaching import planner_plan
    from lifebench.runner.teacher import answer_kind, render_plan

    held = {10: {"type": "oak_planks", "quantity": 4}, 11: {"type": "oak_log", "quantity": 2}}
    for inventory in (held, {5: {"type": "oak_planks", "quantity": 1}, 11: {"type": "oak_log", "quantity": 2}}):
        plan = planner_plan(inventory, "crafting_table", "oak_planks")
        assert answer_kind(plan) == "already there" and not plan.impossible
        assert render_plan(plan, "executable") == \
            "Nothing is left to do to craft oak_planks: the goal is already reached."
    # an item that cannot be made from here is still not possible; the target still planned
    assert answer_kind(planner_plan({11: {"type": "oak_log", "quantity": 1}}, "crafting_table", "diamond")) \
        == "not possible"
    assert answer_kind(planner_plan(held, "crafting_table", None)) == "plan"


def test_tables_keep_configurations_apart():
    """Issue 62: two configurations of one strategy and teacher (How²'s gold_stop on and off;
    STEP's embedding model, say) were pooled into one row or table; each is now its own,
    named by the fields that set it apart."""
    from lifebench.api import EpisodeRecord
    from lifebench.methods.how2.reporting import table1
    from lifebench.methods.step.reporting import planner_ablation

    def record(method, instance, seed, success, **extra):
        return EpisodeRecord(run_id="r", benchmark="plancraft", split="val.curriculum",
                             instance_id=instance, method=method, method_config_hash=str(sorted(extra.items())),
                             model="m", seed=seed, trial=0, episode_index=0, budget_steps=10,
                             steps=3, success=success, score=float(success), status="ok", extra=extra)

    how2 = [record("how2", f"VAL{i}", 0, success=(i < 8 if gold else i < 2), how2_strategy="how2",
                   how2_teacher="executable", how2_setting="" if gold else "gold_stop=False")
            for gold in (True, False) for i in range(10)]
    [ours] = [t for t in table1(how2) if t.title.startswith("How² on Plancraft")]
    assert [(row[0], row[1], row[3].split(" ")[0]) for row in ours.rows] == [
        ("how2 (default config)", "executable", "0.800"), ("how2 (gold_stop=False)", "executable", "0.200")]
    step = [record("step", f"I{i}", 0, success=i < n, step_planner=planner, step_setting=setting)
            for setting, n in (("", 6), ("embedder=other", 2)) for planner in (True, False)
            for i in range(10)]
    tables = planner_ablation(step)
    assert [t.title.split("[")[1].split("]")[0] for t in tables] == ["default config", "embedder=other"]
