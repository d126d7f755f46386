"""InstructRAG's tables on records built by hand: Tables 1 and 2 (beside ReAct and RAP,
with our paired tests and the paper's unpaired t-test) and the Table 5, 6 and 7 layouts, each
with the paper's numbers cited."""

from __future__ import annotations

import dataclasses

from typing import Any, Optional

import numpy as np
import pytest
from scipy import stats

from lifebench.api import EpisodeRecord, RoleUsage, Table
from lifebench.leaderboard.plugins import plugin_tables
from lifebench.methods.instructrag import InstructRagConfig, InstructRagMethod
from lifebench.methods.instructrag.reporting import (ARGS_KEY, DEFAULT_DELTA, METHOD, STAGES_KEY,
                                                     TABLE_PEERS, TRANSFER, instructrag_tables,
                                                     recorded_args, table1, table2, table5,
                                                     table6, table7)

ALFWORLD = ("alfworld", "valid_unseen.query")
SCIENCEWORLD = ("scienceworld", "step18-v1")
STAGES = {"construction_s": 1.5, "training_s": 100.0, "few_shot_s": 30.0,
          "graph_nodes": 40, "graph_edges": 90, "graph_paths": 12}


def record(where: tuple[str, str] = ALFWORLD, *, args: Optional[dict[str, Any]] = None,
           success: bool = True, score: Optional[float] = None, instance: str = "a",
           seed: int = 0, stages: Optional[dict[str, Any]] = None, wall_s: float = 2.0,
           usage: Optional[dict[str, int]] = None, model: Optional[str] = "m",
           status: str = "ok", config_hash: str = "abcdef123456", method: str = METHOD,
           trial: int = 0, family: Optional[str] = None) -> EpisodeRecord:
    """A scored episode (InstructRAG's unless `method` says); `args` None: a record that does
    not say its config."""
    extra: dict[str, Any] = {} if args is None else {ARGS_KEY: args}
    if stages is not None:
        extra[STAGES_KEY] = stages
    return EpisodeRecord(
        run_id="r", benchmark=where[0], split=where[1], instance_id=instance,
        method=method, method_config_hash=config_hash, model=model, seed=seed, trial=trial,
        episode_index=0, budget_steps=50, steps=5, success=success,
        score=float(success) if score is None else score, status=status, wall_s=wall_s,
        extra=extra, llm_usage={role: RoleUsage(calls=n) for role, n in (usage or {}).items()},
        task_family=family)


def rows(table: Table) -> dict[str, tuple[str, ...]]:
    return {row[0]: row[1:] for row in table.rows}


def test_no_records_no_tables():
    assert instructrag_tables([]) == []
    # only infrastructure failures: nothing scored, nothing to show
    assert instructrag_tables([record(args={}, status="llm_error")]) == []


def test_table5_has_a_row_per_variant_in_the_papers_order_and_a_column_pair_per_split():
    records = [
        record(args={"rl_agent": False}, success=False),
        record(args={}, success=True, instance="a"),
        record(args={}, success=False, instance="b"),
        record(args={"graph": False}, success=True),
        record(args={"graph": False}, success=False, instance="b", status="env_error"),
        record(SCIENCEWORLD, args={"train_benchmark": "alfworld"}, success=False, score=30.0),
        record(SCIENCEWORLD, args={"train_benchmark": "alfworld"}, success=False, score=50.0,
               instance="b"),
    ]
    [table] = table5(records)
    assert table.title == "InstructRAG ablations (Table 5 layout) @m"
    assert table.headers == ("variant", "alfworld valid_unseen.query SR", "n",
                             "scienceworld step18-v1 [train_benchmark=alfworld] score/100", "n",
                             "paper F1 (DeepSeek-V2, HotpotQA)")
    assert [row[0] for row in table.rows] == ["InstructRAG", "w/o instruction graph", "w/o RL-Agent"]
    assert rows(table) == {  # beside each, the paper's Table 5 row, cited
        "InstructRAG": ("0.500", "2", "0.400", "2", "37.17"),
        "w/o instruction graph": ("1.000", "1", "—", "—", "32.87"),  # its failure is no result
        "w/o RL-Agent": ("0.000", "1", "—", "—", "33.45"),
    }
    assert "1 seed (0); 4 instances, 6 scored episodes" in table.notes
    assert any(note.startswith("paper (DeepSeek-V2, HotpotQA): ") for note in table.notes)


def test_table5_labels_combined_ablations_changed_parameters_and_unrecorded_configs():
    records = [record(args={"ml_agent": False, "graph": False, "k_paths": 5}),
               record(args={"delta": 0.2}),
               record(args=None, config_hash="0123456789ab"),
               record(args={}, model="other")]
    first, second = table5(records)
    assert [row[0] for row in first.rows] == [
        "InstructRAG (delta=0.2)", "w/o instruction graph, w/o ML-Agent (K=5)",
        "config 012345 (args not recorded)"]
    assert second.title.endswith("@other") and [r[0] for r in second.rows] == ["InstructRAG"]


def test_recorded_args_are_the_changed_fields_and_name_the_row_and_the_setting():
    assert recorded_args(InstructRagConfig()) == {}
    assert DEFAULT_DELTA == InstructRagConfig.delta  # Table 6's header of a record without delta
    args = recorded_args(InstructRagConfig(warm_start=False, delta=0.6, train_benchmark="alfworld"))
    assert args == {"warm_start": False, "delta": 0.6, "train_benchmark": "alfworld"}
    [table] = table5([record(SCIENCEWORLD, args=args, score=20.0, success=False)])
    assert table.headers[1] == "scienceworld step18-v1 [train_benchmark=alfworld] score/100"
    # the paper has no such row (its ablations keep delta = 0.4)
    assert table.rows == (("w/o warm-start in RL-Agent (delta=0.6)", "0.200", "1", "—"),)


def test_table6_has_a_column_per_delta_of_the_full_method_with_stages_from_first_records():
    usage = {"train": 40, "few_shot": 12, "actor": 3}
    records = [
        # delta 0.4 (the default), two streams (seeds), each first record with its stages
        record(args={}, seed=0, stages=STAGES, usage=usage, wall_s=4.0),
        record(args={}, seed=0, instance="b", success=False, wall_s=2.0),
        record(args={}, seed=1, wall_s=3.0, usage={"train": 20, "few_shot": 8},
               stages={**STAGES, "construction_s": 2.5, "training_s": 50.0, "graph_nodes": 50}),
        record(args={"delta": 0.2}, stages={**STAGES, "graph_nodes": 10, "graph_edges": 15},
               usage=usage, success=False),
        # not Table 6's: an ablation, and another split
        record(args={"graph": False}, stages=STAGES),
        record(SCIENCEWORLD, args={"train_benchmark": "alfworld"}, score=70.0, stages=STAGES),
    ]
    first, second = table6(records)
    assert first.title == "InstructRAG by delta (Table 6 layout), alfworld valid_unseen.query @m"
    assert first.headers == ("delta", "0.2", "0.4")
    assert rows(first) == {
        "effectiveness (SR)": ("0.000", "0.667"),
        "scored episodes": ("1", "3"),
        "preparations": ("1", "2"),
        "construction (s)": ("1.50", "2.00"),
        "training (s)": ("100.0", "75.0"),
        "few-shot (s)": ("30.0", "30.0"),
        "testing (s per episode)": ("2.00", "3.00"),
        "LLM calls, training": ("40", "30"),
        "LLM calls, few-shot": ("12", "10"),
        "graph nodes": ("10", "45"),
        "graph edges": ("15", "90"),
        "paper F1 (DeepSeek-V2, HotpotQA)": ("35.19", "37.17"),
        "paper # of nodes (DeepSeek-V2, HotpotQA)": ("29", "286"),
    }
    assert "2 seeds (0, 1); 2 instances, 4 scored episodes" in first.notes
    assert second.title.startswith("InstructRAG by delta (Table 6 layout), scienceworld step18-v1 "
                                   "[train_benchmark=alfworld]")
    assert rows(second)["effectiveness (score/100)"] == ("0.700",)


def test_table6_counts_a_preparation_once_when_shards_reuse_its_artifact():
    """A sharded stream's later shards load the artifact its first made: their first
    records carry the stages but not the preparation's LLM calls."""
    made = record(args={}, stages=STAGES, usage={"train": 40, "few_shot": 12})
    made = dataclasses.replace(made, extra={**made.extra, "prepared": {"key": "k", "reused": False}})
    shard = record(args={}, instance="b", stages=STAGES, usage={"actor": 2})
    shard = dataclasses.replace(shard, extra={**shard.extra, "prepared": {"key": "k", "reused": True}})
    [table] = table6([made, shard])
    cells = rows(table)
    assert cells["preparations"] == ("1",) and cells["LLM calls, training"] == ("40",)
    assert cells["scored episodes"] == ("2",)
    # a stream whose artifact came from another run still shows its stages
    [table] = table6([shard])
    assert rows(table)["construction (s)"] == (f"{STAGES['construction_s']:.2f}",)


def test_table6_shows_what_is_missing_as_a_dash_and_unrecorded_configs_by_hash():
    records = [record(args=None, config_hash="feedbeef0000"),
               record(args={"delta": 1.0}, stages={"construction_s": 0.5})]
    [table] = table6(records)
    assert table.headers == ("delta", "1", "? [feedbe]")
    cells = rows(table)
    assert cells["construction (s)"] == ("0.50", "—")
    assert cells["graph nodes"] == ("—", "—") and cells["preparations"] == ("1", "0")
    assert cells["LLM calls, training"] == ("0", "—")  # a stream that called nothing in training
    assert cells["paper F1 (DeepSeek-V2, HotpotQA)"] == ("35.93", "—")


def test_the_leaderboard_asks_instructrag_for_its_tables():
    titles = [t.title for t in plugin_tables([record(args={}, stages=STAGES)])]
    assert "InstructRAG ablations (Table 5 layout) @m" in titles
    assert "InstructRAG by delta (Table 6 layout), alfworld valid_unseen.query @m" in titles


# -- Tables 1 and 2: InstructRAG beside ReAct and RAP (its table peers)

IR = [1, 1, 1, 1, 1, 1, 0, 1]  # success on instances i0..i7, both seeds
REACT = [0, 0, 1, 0, 0, 1, 0, 0]
RAP = [1, 0, 1, 1, 0, 1, 0, 1]


def alfworld_records() -> list[EpisodeRecord]:
    out = [record(method=method, args={} if method == METHOD else None, success=bool(s),
                  instance=f"i{i}", seed=seed)
           for method, outcomes in ((METHOD, IR), ("react", REACT), ("rap", RAP))
           for seed in (0, 1) for i, s in enumerate(outcomes)]
    # a second trial is not the paper's one attempt; an ablation is Table 5's
    return out + [record(method="react", success=True, instance="i0", trial=1),
                  record(args={"graph": False}, success=False)]


def by_label(table: Table) -> dict[str, dict[str, str]]:
    return {row[1]: dict(zip(table.headers, row)) for row in table.rows}


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjustment, by hand."""
    order = sorted(range(len(pvalues)), key=pvalues.__getitem__)
    out, running = [0.0] * len(pvalues), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        out[i] = running
    return out


def test_table1_has_a_row_per_method_with_its_interval_n_seeds_and_the_papers_numbers():
    from lifebench.api.stats import wilson_interval

    results, significance = table1(alfworld_records())
    assert results.title == "InstructRAG Table 1 (ALFWorld, unseen tasks) @m"
    assert results.headers == ("split", "method", "SR (%)", "95% CI", "n", "seeds",
                               "paper (ALFWorld, GLM-4)", "paper (ALFWorld, GPT-4o mini)",
                               "paper (ALFWorld, DeepSeek-V2)")
    assert [row[1] for row in results.rows] == ["react", "rap", "instructrag"]  # the paper's order
    # both seeds replay each instance: the interval is the instances' (8), not 16 episodes'
    low, high = wilson_interval(2, 8)
    assert results.rows[0] == ("valid_unseen.query", "react", "25.00",
                               f"[{100 * low:.1f}, {100 * high:.1f}]", "8 (16 results)", "2",
                               "47.01", "42.54", "52.24")
    rows_ = by_label(results)
    assert [rows_["rap"][h] for h in ("SR (%)", "n")] == ["62.50", "8 (16 results)"]
    assert [rows_["instructrag"][h] for h in results.headers[-3:]] == ["72.39", "58.21", "81.34"]
    assert "2 seeds (0, 1); 8 instances, 48 scored episodes" in results.notes
    assert any(note.startswith("same outcome in every seed: 100% of the 24 instances")
               for note in results.notes)
    assert ("left out: 1 instructrag episode, ablations or changed delta/K (Tables 5-7)"
            in results.notes)
    assert significance.title == "InstructRAG Table 1 (ALFWorld, unseen tasks): significance @m"


def test_table1_tests_ours_paired_and_the_papers_unpaired_t_test_with_right_p_values():
    [_, table] = table1(alfworld_records())
    assert "ours (paired)" in table.headers
    assert "paper's test: t-test (unpaired, p < 0.05)" in table.headers
    got = by_label(table)
    assert list(got) == ["instructrag vs react", "instructrag vs rap"]
    # ours: the instance is the unit; both seeds replay each instance, so each instance has
    # one outcome per method: McNemar's exact test on the 8 instances
    ir = [bool(s) for s in IR]
    mcnemar, welch = [], []
    for other in (REACT, RAP):
        won = sum(a and not b for a, b in zip(ir, other))
        lost = sum(b and not a for a, b in zip(ir, other))
        mcnemar.append(stats.binomtest(won, won + lost, 0.5).pvalue)
        welch.append(stats.ttest_ind([float(x) for x in IR * 2], [float(x) for x in other * 2],
                                     equal_var=False))
    for row, p, adjusted, t in zip(got.values(), mcnemar, holm(mcnemar), welch):
        assert row["ours (paired)"] == "mcnemar exact" and row["instances"] == "8"
        assert float(row["ours p"]) == pytest.approx(p, rel=1e-2)
        assert float(row["ours p (Holm)"]) == pytest.approx(adjusted, rel=1e-2)
        assert row["paper's test: t-test (unpaired, p < 0.05)"] == "welch t"
        assert row["n a, n b (episodes)"] == "16, 16"  # the paper's test counts episodes
        assert float(row["t"]) == pytest.approx(t.statistic, abs=0.01)
        assert float(row["paper's p"]) == pytest.approx(t.pvalue, rel=1e-2)
        assert row["paper's p < 0.05"] == ("yes" if t.pvalue < 0.05 else "no")
    # 5 discordant instances all won against ReAct, 2 against RAP: the paper's test finds
    # ReAct beaten (p 0.0001) where the instances, counted once, do not reach 0.05
    assert [row["ours p"] for row in got.values()] == ["0.0625", "0.5"]
    assert got["instructrag vs react"]["paper's p < 0.05"] == "yes"
    assert any("Welch's two-sample t-test" in note for note in table.notes)


IR_SCORES = [60, 40, 80, 50, 70, 30]
RAP_SCORES = [40, 45, 50, 20, 60, 10]
REACT_SCORES = [10, 20, 30, 0, 40, 10]


def scienceworld_records() -> list[EpisodeRecord]:
    transfer = {"train_benchmark": "alfworld"}
    out = [record(SCIENCEWORLD, method=method, args=transfer if method == METHOD else None,
                  success=False, score=float(s), instance=f"s{i}")
           for method, scores in ((METHOD, IR_SCORES), ("rap", RAP_SCORES),
                                  ("react", REACT_SCORES))
           for i, s in enumerate(scores)]
    # InstructRAG trained on ScienceWorld itself, and one that does not say: not the transfer
    return out + [record(SCIENCEWORLD, args={}, success=False, score=99.0),
                  record(SCIENCEWORLD, args=None, success=False, score=99.0, config_hash="0" * 12)]


def test_table2_is_the_alfworld_transfer_labelled_as_such_with_the_papers_numbers_beside():
    assert TRANSFER == ("ALFWorld → ScienceWorld transfer "
                        "(not the paper's HotpotQA → ScienceWorld)")
    results, significance = table2(scienceworld_records())
    for table in (results, significance):
        assert TRANSFER in table.title
    assert results.headers[2] == "score (x100)"
    assert results.headers[-3:] == ("paper (HotpotQA → ScienceWorld, GLM-4)",
                                    "paper (HotpotQA → ScienceWorld, GPT-4o mini)",
                                    "paper (HotpotQA → ScienceWorld, DeepSeek-V2)")
    got = {row[1]: row[2:] for row in results.rows}
    assert list(got) == ["react", "rap", "instructrag"]  # the non-transfer records are not in it
    assert got["react"][0] == "18.33" and got["react"][-3:] == ("—", "—", "—")  # no paper row
    assert got["rap"][0] == "37.50" and got["rap"][-3:] == ("24.37", "23.49", "32.15")
    assert got["instructrag"][0] == "55.00" and got["instructrag"][2:] == (
        "6", "1", "26.85", "25.10", "33.96")
    assert ("left out: 2 instructrag episodes, not trained on ALFWorld (extra.instructrag_args "
            "lacks train_benchmark=alfworld)") in results.notes
    assert "1 seed (0); 6 instances, 18 scored episodes" in results.notes


def test_table2_tests_scores_by_the_sign_flip_test_and_the_papers_welch_t_test():
    [_, table] = table2(scienceworld_records())
    got = by_label(table)
    assert list(got) == ["instructrag vs react", "instructrag vs rap"]
    ir = [s / 100 for s in IR_SCORES]
    paired, welch = [], []
    for other in (REACT_SCORES, RAP_SCORES):
        diffs = np.array(ir) - np.array([s / 100 for s in other])
        paired.append(stats.permutation_test((diffs,), lambda d, axis: np.sum(d, axis=axis),
                                             permutation_type="samples",
                                             n_resamples=np.inf).pvalue)
        welch.append(stats.ttest_ind(ir, [s / 100 for s in other], equal_var=False).pvalue)
    for row, p, adjusted, q in zip(got.values(), paired, holm(paired), welch):
        assert row["ours (paired)"] == "sign flip exact" and row["instances"] == "6"
        assert float(row["ours p"]) == pytest.approx(p, rel=1e-2)
        assert float(row["ours p (Holm)"]) == pytest.approx(adjusted, rel=1e-2)
        assert float(row["paper's p"]) == pytest.approx(q, rel=1e-2)


def test_without_peers_tables_1_and_2_have_instructrags_rows_only():
    records = [r for r in alfworld_records() + scienceworld_records() if r.method == METHOD]
    [first] = table1(records)  # nothing to compare: no significance table
    [second] = table2(records)
    assert [row[1] for row in first.rows] == ["instructrag"]
    assert [row[1] for row in second.rows] == ["instructrag"]
    assert table1([]) == [] and table2([]) == []
    # the peers alone (no InstructRAG on the split): no table
    assert table1([r for r in alfworld_records() if r.method == "react"]) == []


def test_table1_tells_apart_settings_and_configs_and_shows_unknown_configs_by_hash():
    records = [record(args={"support_paths": "agent"}),
               record(args=None, config_hash="c0ffee000000"),
               record(method="react", args=None, config_hash="aaaaaa000000"),
               record(method="react", args=None, config_hash="bbbbbb000000"),
               record(method="rap", args=None, model="other")]  # another model's table
    [results, _] = table1(records)
    labels = {row[1]: row for row in results.rows}
    assert set(labels) == {"react [aaaaaa v1]", "react [bbbbbb v1]",
                           "instructrag, config c0ffee (args not recorded)",
                           "instructrag [support_paths=agent]"}
    # the paper's numbers are the paper's InstructRAG's, not an unknown config's
    assert labels["instructrag, config c0ffee (args not recorded)"][-3:] == ("—", "—", "—")
    assert labels["instructrag [support_paths=agent]"][-1] == "81.34"


def test_the_leaderboard_passes_the_peers_records_on_instructrags_splits(monkeypatch):
    assert TABLE_PEERS == ("react", "rap")
    # what InstructRagMethod declares (`table_peers = TABLE_PEERS`)
    monkeypatch.setattr(InstructRagMethod, "table_peers", TABLE_PEERS)
    elsewhere = record(("alfworld", "valid_seen"), method="react", args=None)
    tables = {t.title: t for t in plugin_tables(alfworld_records() + [elsewhere])}
    table = tables["InstructRAG Table 1 (ALFWorld, unseen tasks) @m"]
    assert [(row[0], row[1]) for row in table.rows] == [
        ("valid_unseen.query", "react"), ("valid_unseen.query", "rap"),
        ("valid_unseen.query", "instructrag")]
    assert "InstructRAG Table 1 (ALFWorld, unseen tasks): significance @m" in tables
    # the peers' records are Tables 1 and 2's only
    ablations = tables["InstructRAG ablations (Table 5 layout) @m"]
    assert [row[0] for row in ablations.rows] == ["InstructRAG", "w/o instruction graph"]


def test_table7_only_where_k_was_varied_with_the_papers_numbers():
    assert table7([record(args={}), record(args={"delta": 0.2})]) == []
    [table] = table7([record(args={}, wall_s=3.0), record(args={"k_paths": 1}, success=False),
                      record(args={"k_paths": 1, "graph": False})])  # an ablation: Table 5's
    assert table.title == "InstructRAG by K (Table 7 layout), alfworld valid_unseen.query @m"
    assert table.headers == ("K", "1", "3")
    got = rows(table)
    assert got["effectiveness (SR)"] == ("0.000", "1.000")
    assert got["testing (s per episode)"] == ("2.00", "3.00")
    assert got["paper F1 (DeepSeek-V2, HotpotQA)"] == ("34.78", "37.17")
    assert got["paper testing (s) (DeepSeek-V2, HotpotQA)"] == ("32.05", "34.74")
    assert "1 seed (0); 1 instance, 2 scored episodes" in table.notes
