"""The 18-task table (STEP's Table 1 layout) and STEP's Table 2, on records whose numbers
are known: best trial per instance, task means, S/L/All averages, tasks completed."""

from __future__ import annotations

from lifebench.api import EpisodeRecord, Status
from lifebench.benchmarks.scienceworld.reporting import step_table1
from lifebench.methods.step.reporting import planner_ablation


def record(method: str, task: str, budget: int, trial: int, score: float, planner=None,
           config: str = "c0", instance: str = "", seed: int = 0) -> EpisodeRecord:
    extra = {} if planner is None else {"step_planner": planner}
    return EpisodeRecord(
        run_id="r", benchmark="scienceworld", split="step18-v1", instance_id=instance or task,
        method=method, method_config_hash=config, model="m", seed=seed, trial=trial,
        episode_index=trial, budget_steps=budget, steps=10, success=score == 100, score=score,
        status=Status.OK, extra=extra, task_family=task)


def rows_of(table) -> dict[str, tuple[str, ...]]:
    return {row[0]: row[1:] for row in table.rows}


def test_table1_takes_the_best_trial_and_averages_over_tasks():
    records = [
        # a second seed of CLIN's Boil fails: completed in any run, not in every run
        record("clin", "1-1 boil", 70, 0, 40, seed=1),
        # CLIN on Temp1 (short): trials 20, 60 -> 60; on Boil (long): 100 in trial 2 -> 100
        record("clin", "2-1 use-thermometer", 37, 0, 20), record("clin", "2-1 use-thermometer", 37, 1, 60),
        record("clin", "1-1 boil", 70, 0, 10), record("clin", "1-1 boil", 70, 1, 100),
        # STEP and its ablation (same method, two configs)
        record("step", "2-1 use-thermometer", 37, 0, 100, planner=True, config="a"),
        record("step", "1-1 boil", 70, 0, 30, planner=True, config="a"),
        record("step", "2-1 use-thermometer", 37, 0, 40, planner=False, config="b"),
        record("step", "1-1 boil", 70, 0, 30, planner=False, config="b"),
    ]
    [table] = step_table1(records)
    assert table.headers == ("task", "type", "clin @m", "step @m", "step w/o planner @m",
                             "CLIN (paper)", "STEP (paper)")
    rows = rows_of(table)
    assert list(rows)[:2] == ["Temp1 (2-1)", "Temp2 (2-2)"] and len(table.rows) == 18 + 5
    assert rows["Temp1 (2-1)"] == ("S", "60.0", "100.0", "40.0", "9.0", "63.0")
    assert rows["Boil (1-1)"] == ("L", "70.0", "30.0", "30.0", "4.0", "21.5")  # seeds 100, 40
    assert rows["Temp2 (2-2)"] == ("S", "—", "—", "—", "83.3", "62.7")
    assert rows["avg S"][1:] == ("60.0", "100.0", "40.0", "71.7", "79.9")
    assert rows["avg All"][1:] == ("65.0", "65.0", "35.0", "57.2", "67.4")
    assert rows["tasks completed in every run"][1:] == ("0 of 2", "1 of 2", "0 of 2", "—", "—")
    assert rows["tasks completed in any run"][1:] == ("1 of 2", "1 of 2", "0 of 2", "—", "12 of 18")
    assert any("gpt-4o-mini" in note for note in table.notes)

    [ablation] = planner_ablation([r for r in records if r.method == "step"])
    rows = rows_of(ablation)
    assert ablation.headers == ("tasks", "Δ avg score (↓)", "p (score)", "% succ. rate (↓)",
                                "p (success)", "instances", "paper Δ avg score", "paper % succ. rate")
    # one instance per budget: no test can say anything (p = 1); two: at best p = 0.5
    assert rows["S"] == ("60.0", "1", "100.0", "1", "1", "10.9", "11.1")
    assert rows["L"] == ("0.0", "1", "0.0", "1", "1", "11.0", "22.2")
    assert rows["All"] == ("30.0", "1", "50.0", "1", "2", "10.9", "16.7")


def test_table2_averages_seeds_within_an_instance_before_pairing():
    # three seeds that replay one episode each: 2 instances, not 6 pairs
    records = [record("step", task, 70, 0, score, planner=planner, config=config, seed=seed)
               for seed in range(3)
               for task, full, ablated in (("1-1 boil", 100, 40), ("1-2 melt", 80, 20))
               for planner, config, score in ((True, "a", full), (False, "b", ablated))]
    [ablation] = planner_ablation(records)
    assert rows_of(ablation)["All"] == ("60.0", "0.5", "50.0", "1", "2 (6 results)", "10.9", "16.7")
    assert any(note.startswith("same outcome in every seed: 100% of the 4 instances")
               for note in ablation.notes)


def test_nothing_to_show_makes_no_table():
    assert step_table1([record("random", "not a step18 task", 70, 0, 5)]) == []
    assert planner_ablation([record("step", "1-1 boil", 70, 0, 30, planner=True)]) == []
