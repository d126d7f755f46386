"""The methods x models table (the papers' method-by-backbone layout, e.g. InstructRAG's
Tables 1 and 2), on records built by hand."""

from __future__ import annotations

from typing import Optional

from lifebench.api import EpisodeRecord
from lifebench.leaderboard.tables import model_tables


def record(method: str, model: Optional[str], success: bool, *, benchmark: str = "alfworld",
           split: str = "valid_unseen.query", score: Optional[float] = None,
           instance: str = "a", config_hash: str = "h") -> EpisodeRecord:
    return EpisodeRecord(run_id="r", benchmark=benchmark, split=split, instance_id=instance,
                         method=method, method_config_hash=config_hash, model=model, seed=0,
                         trial=0, episode_index=0, budget_steps=50, steps=5, success=success,
                         score=float(success) if score is None else score, status="ok")


def test_a_row_per_method_and_a_column_per_model_where_a_split_ran_on_two_models():
    records = [record("react", "glm", True), record("react", "glm", False, instance="b"),
               record("react", "gpt", False), record("instructrag", "gpt", True),
               record("rap", "glm", True, config_hash="1111aa"),
               record("rap", "glm", False, config_hash="2222bb"),
               record("oracle", None, True),
               record("react", "glm", True, split="valid_seen")]  # one model: no table
    [table] = model_tables(records)
    assert table.title == "alfworld valid_unseen.query: success rate by method and model"
    assert table.headers == ("method", "glm", "gpt", "—")
    assert table.rows == (("instructrag", "—", "1.000", "—"),
                          ("oracle", "—", "—", "1.000"),
                          ("rap [1111aa]", "1.000", "—", "—"),
                          ("rap [2222bb]", "0.000", "—", "—"),
                          ("react", "0.500", "0.000", "—"))


def test_a_score_benchmark_shows_its_mean_score_and_one_model_makes_no_table():
    scored = [record("rap", "glm", False, benchmark="scienceworld", split="step18-v1", score=30.0),
              record("rap", "gpt", False, benchmark="scienceworld", split="step18-v1", score=45.5)]
    [table] = model_tables(scored)
    assert table.title == "scienceworld step18-v1: mean score by method and model"
    assert table.rows == (("rap", "30.0", "45.5"),)
    assert model_tables([record("react", "glm", True), record("rap", "glm", False),
                         record("random", None, False)]) == []
    assert model_tables([]) == []
