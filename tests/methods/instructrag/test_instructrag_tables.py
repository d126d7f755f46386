"""InstructRAG's Table 5 and Table 6 layouts, on records built by hand."""

from __future__ import annotations

from typing import Any, Optional

from lifebench.api import EpisodeRecord, RoleUsage, Table
from lifebench.leaderboard.plugins import plugin_tables
from lifebench.methods.instructrag import InstructRagConfig
from lifebench.methods.instructrag.reporting import (ARGS_KEY, DEFAULT_DELTA, STAGES_KEY,
                                                     instructrag_tables, recorded_args, table5,
                                                     table6)

ALFWORLD = ("alfworld", "valid_unseen.query")
SCIENCEWORLD = ("scienceworld", "step18-v1")
STAGES = {"construction_s": 1.5, "training_s": 100.0, "few_shot_s": 30.0,
          "graph_nodes": 40, "graph_edges": 90, "graph_paths": 12}


def record(where: tuple[str, str] = ALFWORLD, *, args: Optional[dict[str, Any]] = None,
           success: bool = True, score: Optional[float] = None, instance: str = "a",
           seed: int = 0, stages: Optional[dict[str, Any]] = None, wall_s: float = 2.0,
           usage: Optional[dict[str, int]] = None, model: Optional[str] = "m",
           status: str = "ok", config_hash: str = "abcdef123456") -> EpisodeRecord:
    """A scored InstructRAG episode; `args` None: a record that does not say its config."""
    extra: dict[str, Any] = {} if args is None else {ARGS_KEY: args}
    if stages is not None:
        extra[STAGES_KEY] = stages
    return EpisodeRecord(
        run_id="r", benchmark=where[0], split=where[1], instance_id=instance,
        method="instructrag", method_config_hash=config_hash, model=model, seed=seed, trial=0,
        episode_index=0, budget_steps=50, steps=5, success=success,
        score=float(success) if score is None else score, status=status, wall_s=wall_s,
        extra=extra, llm_usage={role: RoleUsage(calls=n) for role, n in (usage or {}).items()})


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
                             "scienceworld step18-v1 [train_benchmark=alfworld] score/100", "n")
    assert [row[0] for row in table.rows] == ["InstructRAG", "w/o instruction graph", "w/o RL-Agent"]
    assert rows(table) == {
        "InstructRAG": ("0.500", "2", "0.400", "2"),
        "w/o instruction graph": ("1.000", "1", "—", "—"),  # its failed episode is no result
        "w/o RL-Agent": ("0.000", "1", "—", "—"),
    }


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
    assert table.rows == (("w/o warm-start in RL-Agent (delta=0.6)", "0.200", "1"),)


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
        "streams with stages": ("1", "2"),
        "construction (s)": ("1.50", "2.00"),
        "training (s)": ("100.0", "75.0"),
        "few-shot (s)": ("30.0", "30.0"),
        "testing (s per episode)": ("2.00", "3.00"),
        "LLM calls, training": ("40", "30"),
        "LLM calls, few-shot": ("12", "10"),
        "graph nodes": ("10", "45"),
        "graph edges": ("15", "90"),
    }
    assert second.title.startswith("InstructRAG by delta (Table 6 layout), scienceworld step18-v1 "
                                   "[train_benchmark=alfworld]")
    assert rows(second)["effectiveness (score/100)"] == ("0.700",)


def test_table6_shows_what_is_missing_as_a_dash_and_unrecorded_configs_by_hash():
    records = [record(args=None, config_hash="feedbeef0000"),
               record(args={"delta": 1.0}, stages={"construction_s": 0.5})]
    [table] = table6(records)
    assert table.headers == ("delta", "1", "? [feedbe]")
    cells = rows(table)
    assert cells["construction (s)"] == ("0.50", "—")
    assert cells["graph nodes"] == ("—", "—") and cells["streams with stages"] == ("1", "0")
    assert cells["LLM calls, training"] == ("0", "—")  # a stream that called nothing in training


def test_the_leaderboard_asks_instructrag_for_its_tables():
    titles = [t.title for t in plugin_tables([record(args={}, stages=STAGES)])]
    assert "InstructRAG ablations (Table 5 layout) @m" in titles
    assert "InstructRAG by delta (Table 6 layout), alfworld valid_unseen.query @m" in titles
