"""AutoContext's tables on records with known numbers: success under the paper's budgets
(mean +- std over seeds, trials' steps added up), average steps of successful runs, the
ablation table named from the build configs, Crafter's score, exploration cost counted once
per built context; and the leaderboard prints them and draws the coverage figure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from lifebench.api import EpisodeRecord
from lifebench.leaderboard.plugins import plugin_tables
from lifebench.leaderboard.report import leaderboard_report
from lifebench.methods.autocontext.tables import (ablations, crafter_scores, exploration_cost,
                                                  success_under_budgets, successful_steps)


def record(method: str, instance: str, *, success: bool, steps: int, seed: int = 0,
           context: Optional[dict[str, Any]] = None, benchmark: str = "textworld",
           split: str = "ige-cooking", trial: int = 0, extra: Optional[dict] = None) -> EpisodeRecord:
    more = dict(extra or {})
    if context is not None:
        more["context"] = {"name": "autocontext", "key": f"k-{instance}-{context.get('tag', '')}",
                           "config": {k: v for k, v in context.items() if k not in ("tag", "steps")},
                           "explore_steps": context.get("steps", 100), "llm_calls": 10,
                           "tokens_in": 900, "tokens_out": 100, "coverage": {"all": 0.5},
                           "coverage_curve": [[0, 0.1], [50, 0.5]], "charged": True,
                           "reused_from": None}
    return EpisodeRecord(run_id="r", benchmark=benchmark, split=split, instance_id=instance,
                         method=method, method_config_hash="h", model="m", seed=seed,
                         trial=trial, episode_index=0, budget_steps=2000, steps=steps,
                         success=success, score=float(success), status="ok",
                         success_step=steps if success else None, extra=more,
                         context="autocontext" if context is not None else "",
                         context_config_hash=("c" + json.dumps(context, sort_keys=True))[:12]
                         if context is not None else "")


def test_success_under_budgets_is_the_mean_and_std_over_seeds_in_the_papers_columns():
    records = [
        # ReAct: seed 0 solves a at 40 and b at 300; seed 1 solves a at 120 only
        record("react", "a", success=True, steps=40), record("react", "b", success=True, steps=300),
        record("react", "a", success=True, steps=120, seed=1),
        record("react", "b", success=False, steps=2000, seed=1),
        # + AutoContext: both seeds solve both within 50
        *[record("react", i, success=True, steps=30, seed=s, context={})
          for i in "ab" for s in (0, 1)]]
    table, published = success_under_budgets(records)
    assert table.headers[:5] == ("method", "50", "100", "400", "1600")
    assert table.headers[5].endswith(" (run's budget)")
    assert table.rows == (("react", "25.0 +- 25.0", "25.0 +- 25.0", "75.0 +- 25.0",
                           "75.0 +- 25.0", "75.0 +- 25.0"),
                          ("react + AutoContext", "100.0 +- 0.0", "100.0 +- 0.0", "100.0 +- 0.0",
                           "100.0 +- 0.0", "100.0 +- 0.0"))
    assert published.title.startswith("AutoContext's Table 1 as published (DeepSeek-V3-0324")
    assert table.notes[-1].startswith("AutoContext rows: one build per instance, shared by its seeds")
    per_seed = [record("react", "a", success=True, steps=30, seed=s, context={"per_seed": True})
                for s in (0, 1)]
    assert success_under_budgets(per_seed)[0].notes[-1].startswith(
        "AutoContext rows: a build per seed (`per_seed=true`")
    assert published.rows[1] == ("ReAct + AutoContext", "78 ± 6", "95 ± 2", "95 ± 2", "95 ± 2", "95 ± 2")
    alf = [record("react", "x", success=True, steps=7, benchmark="alfworld", split="valid_unseen")]
    assert success_under_budgets(alf)[0].headers[:5] == ("method", "5", "10", "40", "160")


def test_a_success_after_failed_trials_costs_their_steps_too():
    records = [record("reflexion", "a", success=False, steps=80, trial=0),
               record("reflexion", "a", success=True, steps=30, trial=1)]
    table, _ = success_under_budgets(records)
    assert table.rows == (("reflexion", "0.0", "0.0", "100.0", "100.0", "100.0"),)  # 110 steps
    # its last column counts a success in any trial, each of the run's budget
    assert table.headers[-1] == "2000 a trial (run's budget)"
    assert "reflexion: 2 trials, up to 4,000 steps in all" in table.notes[1]
    steps, _ = successful_steps(records + [record("reflexion", "a", success=True, steps=20,
                                                 context={})])
    assert steps.headers == ("method", "textworld: baseline", "textworld: AutoContext")
    assert steps.rows == (("reflexion", "110.0", "20.0"),)
    ige = [record("ige", "a", success=True, steps=12, extra={"replayed_steps": 30}),
           record("ige", "b", success=True, steps=8, extra={"replayed_steps": 10})]
    steps, _ = successful_steps(ige + [record("ige", "a", success=True, steps=5, context={})])
    assert steps.rows == (("ige", "10.0 (+20.0 replayed)", "5.0"),)


def test_ablations_are_named_from_their_build_config_and_shared_settings_are_not():
    shared = {"explore_steps": 12}
    records = [record("react", "a", success=False, steps=100),
               record("react", "a", success=True, steps=10, context={**shared, "tag": "f"}),
               record("react", "a", success=False, steps=9,
                      context={**shared, "forest": False, "tag": "1"}),
               record("react", "a", success=True, steps=9,
                      context={**shared, "planner": "random", "tag": "2"}),
               record("react", "a", success=False, steps=9,
                      context={**shared, "extractor": "naive", "tag": "3"})]
    table, published_ablations = ablations(records)
    assert published_ablations.rows[1] == ("w/o TODO forest", "51 ± 5", "94.7 ± 3.1")
    assert table.rows == (("react + AutoContext", "100.0"),
                          ("react + AutoContext w/o Extractor", "0.0"),
                          ("react + AutoContext w/o Planner", "100.0"),
                          ("react + AutoContext w/o TODO forest", "0.0"),
                          ("react", "0.0"))
    # one build config only: no ablation table, and no column for such a benchmark
    assert ablations(records[:2]) == []
    crafter = record("react", "w", success=True, steps=3, benchmark="crafter", context={**shared})
    assert ablations(records + [crafter])[0].headers == ("method", "textworld")


def crafter(success: dict[str, int], context=None, method="react", world="world-0", trial=0,
            survived=True):
    """A Crafter episode: its score is the achievements it unlocked, as Crafter's records
    (its success: it survived the whole episode)."""
    import dataclasses

    played = record(method, world, success=survived, steps=10, benchmark="crafter",
                    split="seeds-100", context=context, trial=trial, extra={"achievements": success})
    return dataclasses.replace(played, score=float(sum(n > 0 for n in success.values())))


def test_crafter_score_per_method_without_and_with_the_context():
    # two achievements: baseline unlocks one of them in 1 of 2 episodes (50%, 0%) ->
    # sqrt(51 * 1) - 1; with the context both always (100%, 100%) -> 100
    records = [crafter({"a": 1, "b": 0}), crafter({"a": 0, "b": 0}, world="world-1"),
               crafter({"a": 1, "b": 2}, {}), crafter({"a": 3, "b": 1}, {}, world="world-1")]
    table, published = crafter_scores(records)
    assert published.rows[0] == ("Collect Coal", "22.5", "45.0", "37.5", "52.5") and len(published.rows) == 22
    assert table.headers == ("method", "baseline", "AutoContext")
    assert table.rows == (("react", f"{51 ** 0.5 - 1:.1f}", "100.0"),)
    budget = records[0].budget_steps
    assert f"episodes of at most {budget:,} steps (Crafter's official length is 10,000" in table.notes[1]


def test_reflexions_crafter_score_counts_only_its_scored_trial():
    """Reflexion's protocol scores an instance's first success (on Crafter, the first trial
    that survives), else its last trial: the score is over that trial of each world, not
    over all three, and never the best of them."""
    from lifebench import registry
    from lifebench.methods.autocontext.tables import SCORED_TRIAL

    assert registry.method_class("reflexion").protocol(registry.get_benchmark("crafter")).scored_trial \
        == SCORED_TRIAL
    died = [crafter({"a": 1, "b": 1} if t == 0 else {"a": 0, "b": 0}, method="reflexion",
                    world=w, trial=t, survived=False) for w in ("world-0", "world-1") for t in (0, 1)]
    scored = [crafter({"a": 1, "b": 1}, method="reflexion", world="world-0", trial=2),
              crafter({"a": 1, "b": 0}, method="reflexion", world="world-1", trial=2, survived=False)]
    table, _ = crafter_scores(died + scored)
    # world-0 survived its trial 2, world-1 never survived (its last trial): a 100%, b 50%
    # -> sqrt(101 * 51) - 1 (all six episodes would give 2/3, 1/2; the best, trial 0's 100%)
    assert table.rows == (("reflexion", f"{(101 * 51) ** 0.5 - 1:.1f}"),)
    assert "the scored trial of each instance and seed" in table.notes[0]


def test_exploration_cost_counts_each_built_context_once():
    records = [record(m, i, success=True, steps=5, context={"steps": s})
               for m in ("react", "reflexion") for i, s in (("a", 100), ("b", 300))]
    [table] = exploration_cost(records)
    assert table.rows == (("textworld", "AutoContext", "2", "200.0", "418.0", "10.0", "1000", "50.0"),)


def test_the_leaderboard_prints_the_tables_and_draws_coverage(tmp_path: Path):
    records = [record("react", "a", success=True, steps=40),
               record("react", "a", success=True, steps=20, context={})]
    titles = [t.title for t in plugin_tables(records)]
    assert "AutoContext: textworld ige-cooking, success (%) under step budgets" in titles
    assert "AutoContext: exploration cost per instance context" in titles
    run = tmp_path / "run"
    run.mkdir()
    (run / "episodes.jsonl").write_text("".join(r.to_json() + "\n" for r in records))
    text = leaderboard_report([run], plots=tmp_path / "figures")
    assert "AutoContext: average steps of successful runs" in text
    assert list((tmp_path / "figures").glob("coverage-vs-steps-*.png"))


def test_the_tables_spec_holds_every_benchmarks_settings_and_the_makefile_none():
    import argparse
    import re
    from pathlib import Path

    from lifebench.config.options import add_arguments, from_sources
    from lifebench.config.run import RunConfig, spec_parts
    from lifebench.runner.streams import validate

    parser = argparse.ArgumentParser()
    add_arguments(parser, RunConfig)
    parts = {name: from_sources(RunConfig, values, parser.parse_args([]))
             for name, values in spec_parts("specs/autocontext-tables.toml")}
    for config in parts.values():
        validate(config)
    crafter, textworld = parts["crafter"], parts["textworld"]
    assert crafter.seeds == (0, 1) and crafter.limit == 20 and textworld.seeds == (0, 1, 2)
    assert crafter.benchmark_config("crafter").length == 2000
    assert textworld.budgets[0].steps == 2000 and textworld.trials is None  # each method's protocol
    assert {name for name in parts if "ablations" in name} == {
        f"{b}-ablations-{a}" for b in ("textworld", "alfworld") for a in ("forest", "planner", "extractor")}
    assert parts["alfworld-ablations-planner"].context_configs("autocontext")[0].planner == "random"
    assert parts["textworld"].method_configs("ige")[0].authors  # the baseline rows: the authors' IGE
    assert not parts["textworld-ige-listed"].method_configs("ige")[0].authors
    for name in ("textworld-minimal", "crafter-minimal"):  # Table 5: the action list alone
        minimal = parts[name]
        assert minimal.benchmark_config(minimal.benchmarks[0]).manual == "minimal"
        assert [c.sections for c in minimal.context_configs("autocontext")] == \
            ["all", "observations", "action_rules"]
        assert minimal.method_configs("react")[0].examples == 0
    for name, config in parts.items():  # the paper's runs: a build per seed (its 3 runs) ...
        assert all(c.per_seed for c in config.context_configs("autocontext")), name
        for method in {"react", "reflexion"} & set(config.methods):  # ... baselines with no examples
            assert [c.examples for c in config.method_configs(method)] == [0], (name, method)
    assert {"react", "reflexion"} <= set(textworld.methods) | set(crafter.methods)
    recipe = Path("Makefile").read_text().split("\nautocontext-tables:")[1].split("\n\n")[0]
    assert not re.search(r"--(benchmark|method|split|max-steps|seeds|context-arg|benchmark-arg)\b", recipe)


def test_table5_reads_the_minimal_prompting_runs_by_section_and_keeps_them_apart():
    import dataclasses

    from lifebench.methods.autocontext.tables import context_sections

    def minimal(record_):
        return dataclasses.replace(record_, benchmark_config={"manual": "minimal", "oracle": "policy"})

    textworld = [minimal(record("react", "a", success=False, steps=9)),
                 minimal(record("react", "a", success=True, steps=9, context={"sections": "observations"})),
                 minimal(record("react", "a", success=True, steps=9, context={})),
                 minimal(record("react", "a", success=False, steps=9, context={"sections": "action_rules"}))]
    crafter = [minimal(record("react", "w", success=True, steps=9, benchmark="crafter", split="seeds-100",
                              extra={"achievements": {"a": 1, "b": 0}}))]
    full = [record("react", "a", success=True, steps=9)]  # the main runs: not Table 5's
    [table] = context_sections(textworld + crafter + full)
    rows = {row[0]: row[1:] for row in table.rows}
    assert rows["ReAct"] == ("{:.1f}".format(101 ** 0.5 - 1), "0.0", "15.6", "22.7")  # a: 100%, b: 0%
    assert rows["ReAct + Observations"][1] == "100.0" and rows["ReAct + Action Rules"][1] == "0.0"
    assert rows["ReAct + AutoContext"] == ("-", "100.0", "23.7", "84.0")
    steps, _ = successful_steps(textworld + full)  # one section or minimal prompting: rows of their own
    assert {row[0] for row in steps.rows} == {"react", "react (minimal manual)"}
    assert set(steps.headers) >= {"textworld: AutoContext [observations only]", "textworld: AutoContext"}


def test_the_baselines_records_say_they_ran_without_examples(llm_server, lifebench_cli, tmp_path):
    """The spec's TextWorld part, one game, one step, a small build: ReAct's and Reflexion's
    records carry the examples their prompts showed, none (the paper's background and tips
    alone), with and without the context (ReAct's default shows 2 oracle transcripts there:
    test_contexts_everywhere.py)."""
    from lifebench.testing import read_records

    srv = llm_server(policy="scripted")
    common = ("--model", "m", "--base-url", srv.url, "--no-progress", "--cache", "off",
              "--workers", "0", "--limit", "1", "--max-steps", "1", "--seeds", "0",
              "--trials", "1")
    paper = lifebench_cli("run", "specs/autocontext-tables.toml", "--part", "textworld",
                          "--out", str(tmp_path / "paper"), *common, "--context-arg",
                          "autocontext.explore_steps=2", "--context-arg",
                          "autocontext.max_iterations=1", timeout=300)
    assert paper.returncode == 0, paper.stderr
    shown = {(r["method"], r["context"], r["extra"].get("examples"))
             for r in read_records(tmp_path / "paper")}
    assert shown == {(m, c, e) for m, e in (("react", 0), ("reflexion", 0), ("ige", None))
                     for c in ("", "autocontext")}
