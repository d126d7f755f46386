"""Leaderboard statistics against scipy and statsmodels on the same data; comparisons,
ANOVA, the regression check, tables, plots and the Hugging Face export, on real records."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from conftest import ROOT
from lifebench.api import SCHEMA_VERSION, EpisodeRecord
from lifebench.api import stats as ours

REFERENCE = ROOT / "results" / "reference"


def sample(seed: int, n: int, shift: float = 0.0) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(10 + shift, 3) for _ in range(n)]


def test_t_tests_equal_scipy():
    a, b = sample(1, 40), sample(2, 40, 1.0)
    for alternative in ("two-sided", "greater", "less"):
        mine = ours.paired_t(a, b, alternative)
        theirs = stats.ttest_rel(a, b, alternative=alternative)
        assert mine.statistic == pytest.approx(theirs.statistic) and mine.p == pytest.approx(theirs.pvalue)
        mine = ours.welch_t(a, b[:30], alternative)
        theirs = stats.ttest_ind(a, b[:30], equal_var=False, alternative=alternative)
        assert mine.statistic == pytest.approx(theirs.statistic) and mine.p == pytest.approx(theirs.pvalue)
    diffs = np.array(a) - np.array(b)
    assert ours.paired_t(a, b).effect_size == pytest.approx(diffs.mean() / diffs.std(ddof=1))


def test_binary_tests_equal_statsmodels_and_scipy():
    from statsmodels.stats.contingency_tables import mcnemar

    rng = random.Random(3)
    a = [rng.random() < 0.7 for _ in range(80)]
    b = [x if rng.random() < 0.7 else rng.random() < 0.4 for x in a]
    table = [[sum(x and y for x, y in zip(a, b)), sum(x and not y for x, y in zip(a, b))],
             [sum(y and not x for x, y in zip(a, b)), sum(not x and not y for x, y in zip(a, b))]]
    theirs = mcnemar(table, exact=True)
    mine = ours.mcnemar_exact(a, b)
    assert mine.statistic == theirs.statistic and mine.p == pytest.approx(theirs.pvalue)
    one_sided = ours.mcnemar_exact(a, b, "greater")
    assert one_sided.p == pytest.approx(stats.binomtest(table[0][1], table[0][1] + table[1][0], 0.5,
                                                        alternative="greater").pvalue)
    fisher = stats.fisher_exact([[sum(a), 80 - sum(a)], [sum(b[:50]), 50 - sum(b[:50])]])
    assert ours.fisher_exact(a, b[:50]).p == pytest.approx(fisher.pvalue)


def test_corrections_equal_statsmodels():
    from statsmodels.stats.multitest import multipletests

    pvalues = [0.001, 0.04, 0.03, 0.2, 0.0005, 0.5]
    assert ours.adjust(pvalues, "holm") == pytest.approx(list(multipletests(pvalues, method="holm")[1]))
    assert ours.adjust(pvalues, "bh") == pytest.approx(list(multipletests(pvalues, method="fdr_bh")[1]))
    assert ours.adjust(pvalues, "by") == pytest.approx(list(multipletests(pvalues, method="fdr_by")[1]))
    with_nan = ours.adjust([0.01, math.nan, 0.02], "holm")
    assert math.isnan(with_nan[1]) and with_nan[0] == pytest.approx(0.02)


def test_intervals_equal_scipy_and_statsmodels():
    import statsmodels.api as sm
    from statsmodels.stats.proportion import proportion_confint

    values = sample(4, 25)
    low, high = ours.t_interval(values)
    theirs = stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))
    assert (low, high) == pytest.approx(theirs)
    assert ours.wilson_interval(7, 30) == pytest.approx(proportion_confint(7, 30, method="wilson"))
    # clustered: CR2 (Bell-McCaffrey) from its matrices, on statsmodels' OLS of the mean on
    # a constant: residuals e, hat matrix H = J / n, A_g = (I - H_gg)^(-1/2), and the
    # degrees of freedom tr(G'G)^2 / tr((G'G)^2), G's columns (I - H)[:, g] A_g X_g (X'X)^-1
    from scipy.linalg import fractional_matrix_power

    rng = random.Random(5)
    clusters = [f"t{rng.randrange(8)}" for _ in values]
    n = len(values)
    fit = sm.OLS(np.array(values), np.ones(n)).fit()
    hat = np.full((n, n), 1 / n)
    meat, columns = 0.0, []
    for name in sorted(set(clusters)):
        rows = [i for i, c in enumerate(clusters) if c == name]
        adjust = fractional_matrix_power(np.eye(len(rows)) - hat[np.ix_(rows, rows)], -0.5)
        meat += float(np.ones(len(rows)) @ adjust @ fit.resid[rows]) ** 2
        columns.append((np.eye(n) - hat)[:, rows] @ adjust @ np.ones(len(rows)) / n)
    se = math.sqrt(meat) / n
    gram = np.array(columns) @ np.array(columns).T
    df = np.trace(gram) ** 2 / np.trace(gram @ gram)
    assert ours.cluster_degrees_of_freedom(clusters) == pytest.approx(df)
    half = stats.t.ppf(0.975, df) * se
    assert ours.clustered_interval(values, clusters) == pytest.approx((np.mean(values) - half, np.mean(values) + half))
    # G equal clusters: G - 1 degrees of freedom, as CR1's rule had it
    assert ours.cluster_degrees_of_freedom([f"c{i % 5}" for i in range(20)]) == pytest.approx(4)


def records_of(path: Path) -> list[EpisodeRecord]:
    from lifebench.store.records_file import load_records

    return load_records([path])


def write(records: list[dict], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return out


def reference_rows() -> list[dict]:
    return [json.loads(line) for line in (REFERENCE / "episodes.jsonl").read_text().splitlines()]


def test_check_fails_on_a_ten_point_drop_and_passes_an_identical_rerun(cli, tmp_path):
    rows = reference_rows()
    same = write(rows, tmp_path / "same")
    result = cli("check", "--baseline", str(REFERENCE), "--candidate", str(same))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok: 0 significantly worse" in result.stdout
    # inject a 10-point drop in success: 10% of plancraft val's oracle episodes fail
    dropped = [dict(r) for r in rows]
    victims = [r for r in dropped if r["benchmark"] == "plancraft" and r["split"] == "val"
               and r["method"] == "oracle"]
    assert len(victims) == 570 and all(r["success"] for r in victims)
    for r in random.Random(0).sample(victims, 57):
        r["success"], r["score"] = False, 0.0
    worse = write(dropped, tmp_path / "worse")
    result = cli("check", "--baseline", str(REFERENCE), "--candidate", str(worse))
    assert result.returncode == 1
    flagged = [line for line in result.stdout.splitlines() if line.endswith("WORSE")]
    assert flagged and all("plancraft:val budget" in line and "oracle" in line for line in flagged)
    assert any("-0.1000" in line for line in flagged)
    # a missing arm fails too; bad input is one line
    partial = write([r for r in rows if r["benchmark"] != "textworld"], tmp_path / "partial")
    result = cli("check", "--baseline", str(REFERENCE), "--candidate", str(partial))
    assert result.returncode == 1 and "missing from the candidate: textworld:ige-cooking" in result.stdout
    result = cli("check", "--baseline", str(REFERENCE), "--candidate", str(tmp_path / "nowhere"))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    result = cli("check", "--baseline", str(REFERENCE), "--candidate", str(same), "--alpha", "2")
    assert result.returncode == 2 and "--alpha" in result.stderr


def test_compare_json_pairs_every_arm_and_corrects(cli, tmp_path):
    rows = [r for r in reference_rows() if r["benchmark"] == "plancraft"
            and r["method"] in ("random", "oracle")]
    # a third arm: oracle under another config hash, worse on 30 val episodes
    variant = []
    for r in rows:
        if r["method"] == "oracle":
            v = dict(r, method_config_hash="variant00000")
            variant.append(v)
    for v in [v for v in variant if v["split"] == "val"][:30]:
        v["success"] = False
    out = write(rows + variant, tmp_path / "three")
    result = cli("compare", str(out), "--metric", "success", "--metric", "score", "--format", "json")
    assert result.returncode == 0, result.stderr
    comparisons = json.loads(result.stdout)
    fields = {"a", "b", "benchmark", "split", "metric", "test", "n", "mean_a", "mean_b", "diff",
              "statistic", "p", "p_adjusted", "unpaired_a", "unpaired_b", "diff_se", "diff_low",
              "diff_high"}
    assert all(fields <= set(c) for c in comparisons)
    assert len(comparisons) == 2 * 2 * 3  # 2 splits x 2 metrics x 3 pairs
    # score here is success's number but not a binary metric: the sign-flip test, exact
    assert {c["test"] for c in comparisons} == {"mcnemar exact", "sign flip exact"}
    assert all(c["n"] == 570 and c["results_a"] == c["results_b"] == 570 for c in comparisons)
    from statsmodels.stats.multitest import multipletests

    for metric in ("success", "score"):  # each metric its own family
        family = [c for c in comparisons if c["metric"] == metric]
        expected = multipletests([c["p"] for c in family], method="holm")[1]
        assert [c["p_adjusted"] for c in family] == pytest.approx(list(expected))
    assert all(c["unpaired_a"] == c["unpaired_b"] == 0 for c in comparisons)
    # the paired difference's SE and 95% interval: t on the 570 differences (score); for
    # success (McNemar's), Agresti-Min's, which holds the difference
    for c in comparisons:
        if c["test"] == "mcnemar exact":
            assert c["diff_low"] < c["diff"] < c["diff_high"] or c["diff"] == 0
        elif c["diff_se"]:
            half = stats.t.ppf(0.975, 569) * c["diff_se"]
            assert (c["diff_low"], c["diff_high"]) == pytest.approx((c["diff"] - half, c["diff"] + half))
    pair = next(c for c in comparisons if c["split"] == "val" and c["metric"] == "success"
                and "varian" in c["a"] + c["b"] and "random" not in c["a"] + c["b"])
    assert pair["diff"] in (pytest.approx(30 / 570), pytest.approx(-30 / 570))
    assert pair["p"] == pytest.approx(stats.binomtest(30, 30, 0.5).pvalue)
    text = cli("compare", str(out), "--format", "markdown", "--correction", "bh")
    assert text.returncode == 0 and "| benchmark" in text.stdout


def test_two_way_anova_equals_statsmodels(cli, tmp_path):
    import pandas as pd
    from statsmodels.formula.api import ols
    from statsmodels.stats.anova import anova_lm

    base = reference_rows()[0]
    rng = random.Random(7)
    rows, frame = [], []
    for i in range(120):
        strategy, teacher = rng.choice(["how2", "parse", "base"]), rng.choice(["executable", "non-executable"])
        score = rng.gauss(0.5 + (0.2 if strategy == "how2" else 0) + (0.1 if teacher == "executable" else 0), 0.2)
        rows.append(dict(base, instance_id=f"I{i}", method="how2", method_config_hash=f"{strategy}-{teacher}",
                         score=score, extra={"how2_strategy": strategy, "how2_teacher": teacher}))
        frame.append({"y": score, "a": strategy, "b": teacher})
    out = write(rows, tmp_path / "grid")
    result = cli("compare", str(out), "--metric", "score", "--anova",
                 "extra.how2_strategy,extra.how2_teacher", "--format", "json")
    assert result.returncode == 0, result.stderr
    mine = {row["term"]: row for row in json.loads(result.stdout)}
    theirs = anova_lm(ols("y ~ C(a) * C(b)", data=pd.DataFrame(frame)).fit(), typ=2)
    assert mine["extra.how2_strategy"]["F"] == pytest.approx(theirs.loc["C(a)", "F"])
    assert mine["extra.how2_teacher"]["p"] == pytest.approx(theirs.loc["C(b)", "PR(>F)"])
    assert mine["extra.how2_strategy × extra.how2_teacher"]["df"] == theirs.loc["C(a):C(b)", "df"]


def table_headers(text: str) -> dict[str, str]:
    """The header line of every titled table in a markdown report, by title."""
    blocks = text.split("\n\n")
    return {blocks[i]: blocks[i + 1].splitlines()[0] for i in range(len(blocks) - 1)
            if "\n" not in blocks[i] and blocks[i + 1].startswith("|")}


def test_leaderboard_tables_and_plots(cli, tmp_path):
    out = tmp_path / "board"
    run = cli("run", "--no-progress", "--benchmark", "scienceworld", "--split", "step18-v1",
              "--method", "random,oracle", "--limit", "6", "--max-steps", "20", "--out", str(out))
    assert run.returncode == 0, run.stderr
    # the reference's random and oracle records but Plancraft's val.repeated: every benchmark's
    # table, 14 figures to draw (the whole reference: 28, 24 s of the 28 s the command took)
    offline = [r for r in reference_rows() if r["model"] is None and r["split"] != "val.repeated"]
    ref = write(offline, tmp_path / "ref")
    table = cli("leaderboard", str(out), str(ref), "--output", str(tmp_path / "t" / "board.md"))
    assert table.returncode == 0, table.stderr
    text = table.stdout
    # per-task table in ScienceWorld's task order, with mean scores
    assert "scienceworld step18-v1, budget 20: mean score per task" in text
    section = text.split("mean score per task")[1].split("\n\n")[1]
    tasks = [line.split("|")[1].strip() for line in section.splitlines()[2:]]
    assert tasks[0].startswith("1-1") and tasks[-1] == "mean over tasks"
    assert "success within k steps" in text and "score 95% CI" in text
    figures = sorted(p.name for p in (tmp_path / "t").iterdir() if p.suffix in (".png", ".svg"))
    assert "per-task-scienceworld-step18-v1-budget-20.png" in figures
    assert "success-vs-budget-plancraft-val.svg" in figures and "learning-curve-plancraft-val.png" in figures
    assert not any(name.startswith("success-vs-budget-crafter") for name in figures)
    # records carry the task family, and the grid clusters its intervals by it
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert all(r["task_family"].split(" ", 1)[1] == r["instance_id"].split(":")[0]
               for r in records)
    # one table per benchmark, each with its own columns only
    board = (tmp_path / "t" / "board.md").read_text()
    assert board.startswith("The grid: methods × benchmarks\n\n| method")
    assert "\n\nalfworld\n\n| split" in board
    headers = table_headers(board)
    assert "impossible F1" in headers["plancraft"] and "Crafter score" not in headers["plancraft"]
    assert "Crafter score" in headers["crafter"] and "impossible F1" not in headers["crafter"]
    assert "normalized score" in headers["textworld"]
    assert not any(name in headers["alfworld"] for name in ("impossible F1", "Crafter", "normalized"))


def test_export_to_a_hugging_face_dataset(cli, tmp_path):
    import datasets

    result = cli("export", str(REFERENCE), "--hf", str(tmp_path / "hf"))
    assert result.returncode == 0, result.stderr
    loaded = datasets.load_dataset(str(tmp_path / "hf"), cache_dir=str(tmp_path / "cache"))["train"]
    rows = reference_rows()
    assert len(loaded) == len(rows)
    first = loaded[0]
    match = next(r for r in rows if r["instance_id"] == first["instance_id"] and r["method"] == first["method"]
                 and r["split"] == first["split"] and r["seed"] == first["seed"])
    upgraded = EpisodeRecord.from_dict(match)
    assert json.loads(first["extra"]) == upgraded.extra and first["success"] == match["success"]
    assert first["task_family"] == upgraded.task_family and first["schema_version"] == SCHEMA_VERSION


def test_two_way_anova_of_a_constant_outcome_is_undefined():
    from lifebench.api.stats import two_way_anova

    # statsmodels' F here is a ratio of rounding noise (seen: F 5.47, p 0.024 on all-ones)
    rows = two_way_anova([1.0] * 48, ["x", "y"] * 24, ["u"] * 24 + ["v"] * 24)
    assert {row["term"] for row in rows} == {"a", "b", "a:b", "residual"}
    assert all(row["F"] is None and row["p"] is None and row["sum_sq"] == 0 for row in rows)
    varied = two_way_anova([1.0, 0.0] * 24, ["x", "y"] * 24, ["u"] * 24 + ["v"] * 24)
    assert varied[0]["p"] is not None and varied[0]["p"] < 1e-6


def test_two_way_anova_of_a_design_it_cannot_fit_is_undefined_not_a_crash():
    from lifebench.api.stats import two_way_anova

    # two observations in two of the four cells: statsmodels' type II contrasts are NaN
    rows = two_way_anova([0.0, 0.0], ["x", "y"], ["v", "u"])
    assert [r["term"] for r in rows] == ["a", "b", "a:b", "residual"]
    assert all(r["F"] is None and r["p"] is None for r in rows)
