"""The grid table (methods x benchmarks) on hand-made records and manifests: its numbers,
the marks against the baseline, bold, refusals, smoke cells and the mean rank."""

from __future__ import annotations

from lifebench.api import EpisodeRecord
from lifebench.leaderboard.headline import headline_table


def record(method, benchmark, instance, success, score=None, trial=0, config="h"):
    return EpisodeRecord(run_id="r", benchmark=benchmark, split="s", instance_id=instance,
                         method=method, method_config_hash=config, model=None, seed=0,
                         trial=trial, episode_index=0, budget_steps=30, steps=5, success=success,
                         score=float(success) if score is None else score, status="ok")


def cells(table):
    """{method: [cell text per column]}."""
    return {row[0]: list(row[1:-1]) for row in table.rows}


def test_cells_marks_bold_refusals_and_mean_rank():
    ids = [f"i{k}" for k in range(30)]
    records = [record("base", "plancraft", i, k < 5) for k, i in enumerate(ids)]
    records += [record("strong", "plancraft", i, k < 25) for k, i in enumerate(ids)]
    records += [record("same", "plancraft", i, k < 6) for k, i in enumerate(ids)]
    records += [record(m, "crafter", i, False, score=s) for m, s in
                (("base", 2.0), ("strong", 3.0), ("same", 2.0)) for i in ids[:8]]
    # reflexion: three trials, scored by its protocol (the best), on Plancraft only
    records += [record("reflexion", "plancraft", i, t == 2, trial=t) for i in ids for t in range(3)]
    manifests = [{"spec": {"baseline": "base"},
                  "refused": [{"method": "reflexion", "benchmark": "crafter", "split": "s",
                               "reason": "no reason at all", "context": ""},
                              {"method": "ghost", "benchmark": "plancraft", "split": "",
                               "reason": "needs an LLM", "context": ""}],
                  "cells": [{"benchmark": "crafter", "split": "s", "method": "strong",
                             "method_config_hash": "h", "smoke": True}]}]
    table = headline_table(records, manifests)
    assert list(table.headers) == ["method", "crafter: score", "plancraft: success", "mean rank"]
    got = cells(table)
    # 25/30 against 5/30 on the same instances: better, Holm-corrected; 6/30 is not
    assert got["strong"][1].startswith("0.833▲ [")
    assert got["same"][1].startswith("0.200 [") and "▲" not in got["same"][1]
    assert got["base"][1].startswith("0.167 [") and got["base"][1].endswith("n=30")
    # the best trial of three: every instance solved, bold as the column's best
    assert got["reflexion"][1].startswith("**1.000**▲ [") and got["reflexion"][1].endswith("n=30")
    # a score column: one decimal; the smoke cell marked; 8 instances each one point up:
    # the sign-flip test's exact p is 2 / 2^8, below 0.05 after Holm
    assert got["strong"][0].startswith("**3.0**▲ˢ [")
    # refused where the manifest says so, with its reason in a note; a method that ran
    # nowhere still gets its row; not run: –
    assert got["ghost"] == ["–", "×1"] and got["reflexion"][0] == "×2"  # numbered in row order
    assert "×1: needs an LLM" in table.notes and "×2: no reason at all" in table.notes
    # mean rank only for rows with a number in every column
    ranks = {row[0]: row[-1] for row in table.rows}
    assert ranks["strong"] == "1.00" and ranks["reflexion"] == "–" and ranks["ghost"] == "–"
    # Crafter's tie of base and same: both ranked 2.5
    assert (ranks["base"], ranks["same"]) == ("2.75", "2.25")
    assert any("significantly better/worse than base" in note for note in table.notes)


def test_no_baseline_no_marks_and_swept_configs_get_rows():
    records = [record("m", "plancraft", f"i{k}", k < 20, config=c) for c in ("a", "b")
               for k in range(20)]
    table = headline_table(records, [])
    labels = sorted(row[0] for row in table.rows)
    assert labels == ["m [a]", "m [b]"]
    assert not any("▲" in cell or "▼" in cell for row in table.rows for cell in row)
    assert any("no baseline method was given" in note for note in table.notes)
    assert headline_table([], []) is None
