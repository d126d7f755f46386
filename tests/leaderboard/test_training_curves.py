"""Training curves (`extra.training_curves`) from results files, which come from anyone:
checked and bounded, drawn per stream by the site's data and the figures, a malformed value
left out and said so, never a crash nor markup let through. The page draws them in
test_site_browser.py."""

from __future__ import annotations

import matplotlib
import pytest

from lifebench.api import TrainingCurves
from lifebench.api.training import MAX_LABEL_CHARS, MAX_POINTS
from lifebench.leaderboard.plots import write_plots
from lifebench.leaderboard.site import build_site
from lifebench.leaderboard.site.series import figures
from site_fixture import MALFORMED, TRAINING, toy_record, training_records, write_records
from test_site import load_script

def test_a_value_is_read_checked_and_bounded():
    curves = TrainingCurves.from_value({**TRAINING, "title": "x" * 1000,
                                        "series": {"loss": [1, float("nan"), 10 ** 400, None]}})
    assert curves.series == (("loss", (1.0, None, None, None)),)  # NaN, overflow: missing points
    assert len(curves.title) == MAX_LABEL_CHARS and curves.title.endswith("…")
    assert curves.iterations == [1, 2, 3, 4] and curves.x_label == "iteration"
    assert TrainingCurves.from_value(curves.to_dict()) == curves
    assert TrainingCurves.of("t", {"a": [1.0]}).to_dict() == {"title": "t", "x_label": "iteration",
                                                             "series": {"a": [1.0]}}
    bad = [("text", "not an object"), ({"title": "t", "series": []}, "not an object"),
           ({"title": 3, "series": {"a": [1]}}, "its title is int"),
           ({"title": "t", "series": {"a": [True]}}, "a point is bool"),
           ({"title": "t", "series": {"a": ["<img src=x>"]}}, "a point is str"),
           ({"title": "t", "series": {"a": [1], "b": [1, 2]}}, "different lengths"),
           ({"title": "t", "series": {"a": []}}, "0 points"),
           ({"title": "t", "series": {}}, "0 series"),
           ({"title": "t", "series": {"a": 5}}, "a series is int"),
           ({"title": "t", "series": {"a": [1]}, "note": ["<script>"]}, "its note is list")]
    for value, reason in bad:
        with pytest.raises(ValueError, match=reason) as raised:
            TrainingCurves.from_value(value)
        assert "<" not in str(raised.value)  # a reason never quotes the value

    class Unread(list):  # refused by its length, before a value is read
        def __iter__(self):
            raise AssertionError("a value was read")

    with pytest.raises(ValueError, match="1,000,000 points, over the limit of 5,000"):
        TrainingCurves.from_value({"title": "t", "series": {"a": Unread([0.5] * 10 ** 6)}})
    assert len(TrainingCurves.of("t", {"a": [0.5] * MAX_POINTS}).iterations) == MAX_POINTS


def test_the_site_data_holds_each_streams_curves_and_leaves_out_the_malformed(tmp_path, capsys):
    results = write_records(tmp_path / "out", training_records())
    build_site([results], tmp_path / "site")
    data = load_script(tmp_path / "site" / "data" / "summary.js", "window.LB_DATA=")
    [group] = data["figures"]
    first, second = group["training"]
    assert (first["label"], first["seed"], second["seed"]) == ("trainer @m", 0, 1)
    assert first["title"] == TRAINING["title"] and first["xlabel"] == "iteration"
    assert first["note"] == TRAINING["note"] and second["note"] == ""
    assert [s["label"] for s in first["series"]] == sorted(TRAINING["series"])  # as written: keys sorted
    assert first["series"][2] == {"label": "reward", "x": [1, 2, 3, 4], "y": [0.1, 0.3, None, 0.5]}
    skipped = group["training_skipped"]
    assert len(skipped) == len(MALFORMED)
    assert any("as-text @m, seed 0: extra.training_curves left out (it is str" in s for s in skipped)
    assert any("300,000 points" in s for s in skipped) and any("21 series" in s for s in skipped)
    assert any("a point is str" in s for s in skipped)
    said = [line for line in capsys.readouterr().err.splitlines() if "training_curves" in line]
    assert len(said) == len(MALFORMED) and all(line.startswith("note: toy s") for line in said)
    written = "".join(p.read_text() for p in (tmp_path / "site" / "data").rglob("*.js"))
    assert "<" not in written  # the names' markup is data the page sets as text


def test_long_curves_are_thinned_for_the_page_keeping_their_last_point():
    values = [i / MAX_POINTS for i in range(MAX_POINTS)]
    huge = {"title": "t", "series": {"r": [0.0] * 10 ** 6}}  # in memory: a file's line could not hold it
    records = [toy_record("trainer", 0, 0, {"training_curves": {"title": "t", "series": {"r": values}}}),
               toy_record("huge", 0, 0, {"training_curves": huge})]
    [group] = figures(records)
    [stream] = group["training"]
    [series] = stream["series"]
    assert len(series["x"]) <= 1001 and series["x"][-1] == MAX_POINTS and series["y"][-1] == values[-1]
    assert "1,000,000 points" in group["training_skipped"][0]


def test_the_figures_draw_one_file_per_stream_with_curves(tmp_path, capsys):
    records = training_records() + [toy_record("dollars", 0, 0, {"training_curves": {
        "title": "a $ sign and $\\frac{", "series": {"$x$ and $": [1, 2]}, "note": "cost $5"}})]
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text as text, to read back
        written = write_plots(records, tmp_path / "figs")
    names = sorted(p.name for p in written if p.name.startswith("training-curves"))
    assert names == [f"training-curves-toy-s-{arm}-seed{seed}.{fmt}"
                     for arm, seed in (("dollars-m", 0), ("trainer-m", 0), ("trainer-m", 1))
                     for fmt in ("png", "svg")]
    svg = (tmp_path / "figs" / "training-curves-toy-s-trainer-m-seed0.svg").read_text()
    for text in ("reward", "pre-training loss", "meta-training &lt;b&gt;bold&lt;/b&gt;",
                 "stopped at iteration 4: reward plateau (window 10)", "trainer @m, seed 0",
                 "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"):
        assert text in svg, text
    assert "<script" not in svg and "<b>" not in svg
    assert "cost $5" in (tmp_path / "figs" / "training-curves-toy-s-dollars-m-seed0.svg").read_text()
    said = capsys.readouterr().err.splitlines()
    assert sum("training_curves left out" in line for line in said) == len(MALFORMED)
