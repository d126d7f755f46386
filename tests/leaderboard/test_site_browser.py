"""The results site in a real browser: headless Chromium (Debian's package, `make browser`)
opens the site of a small real run from file:// and the tests read what it shows, click its
filters and open its episodes.

Set LIFEBENCH_SCREENSHOTS=DIR to keep the screenshots of the leaderboard, an episode and
two side by side there (`make site-screenshots` writes the README's into docs/, with those
of a 100,000-episode site from tests/perf/perf_view.py)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from browser import Chromium, find_chromium
from conftest import ROOT, plugin_env
from lifebench.leaderboard.site import build_site
from lifebench.testing import run_cli
from site_fixture import MALFORMED, TRAINING, make_results, training_records, write_records

# one results site and one Chromium for the module: its tests run in one pytest worker
pytestmark = pytest.mark.xdist_group("site-browser")


@pytest.fixture(scope="module")
def results(tmp_path_factory, plugin_path) -> Path:
    return make_results(tmp_path_factory.mktemp("site-results") / "out", plugin_path)


@pytest.fixture(scope="module")
def site(results, plugin_path) -> Path:
    out = results.parent / "site"
    result = run_cli("view", str(results), "--output", str(out), env=plugin_env(plugin_path))
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def chromium():
    if find_chromium() is None:  # the project's set-up installs it (apt-get, as root)
        subprocess.run(["make", "-s", "-C", str(ROOT), "browser"], check=False)
    if find_chromium() is None:
        pytest.skip("no chromium on PATH and `make browser` could not install it "
                    "(`apt-get install chromium` needs root): the results site is not tested in a browser")
    with Chromium() as browser:
        yield browser


@pytest.fixture
def page(chromium):
    tab = chromium.page(width=1280, height=900)
    tab.call("Network.enable")
    yield tab
    tab.close()


def open_site(page, site: Path, route: str = "") -> None:
    page.goto((site / "index.html").as_uri() + route)
    page.wait_for("document.documentElement.dataset.readyMs")


def cli_csv(results: Path, plugin_path: Path, *args: str) -> list[dict[str, str]]:
    result = run_cli(*args, str(results), "--format", "csv", env=plugin_env(plugin_path))
    assert result.returncode == 0, result.stderr
    return list(csv.DictReader(io.StringIO(result.stdout)))


def cli_text(results: Path, plugin_path: Path, *args: str) -> str:
    result = run_cli(args[0], str(results), *args[1:], env=plugin_env(plugin_path))
    assert result.returncode == 0, result.stderr
    return result.stdout


GRID_JS = """[...document.querySelectorAll('table.grid')].map(t => ({
  title: t.dataset.title,
  headers: [...t.tHead.rows[0].cells].filter(c => !c.classList.contains('extra')).map(c => c.dataset.header),
  rows: [...t.tBodies[0].rows].map(r => [...r.cells].filter(c => !c.classList.contains('extra')).map(c => c.textContent))
}))"""


def test_the_grid_shows_the_leaderboards_numbers(page, site, results, plugin_path):
    open_site(page, site)
    tables = {t["title"]: t for t in page.evaluate(GRID_JS)}
    expected = cli_csv(results, plugin_path, "leaderboard")
    for row in expected:  # the CSV names a non-default config in its benchmark column
        name, _, config = row.pop("benchmark").partition(" [")
        row["benchmark"], row["config"] = name, config.rstrip("]") or "default"
    assert set(tables) == {row["benchmark"] for row in expected} == {"crafter", "plancraft", "textworld"}
    for table in tables.values():
        assert len(table["rows"]) == sum(1 for r in expected if r["benchmark"] == table["title"])
    for row in expected:
        table = tables[row["benchmark"]]
        shown = [dict(zip(table["headers"], cells)) for cells in table["rows"]]
        key = ("split", "method", "model", "budget")
        [match] = [s for s in shown if all(s[k] == row[k] for k in key)]
        assert match == {h: row[h] for h in match}, row["benchmark"]
        assert all(row[h] == "—" for h in row if h not in match and h not in ("benchmark", "config"))
    assert tables["crafter"]["headers"][0] == "config"
    assert tables["plancraft"]["rows"], "plancraft rows"
    # the page opens with the grid table, cell for cell what `lifebench leaderboard` prints
    head = page.evaluate(GRID_JS.replace("table.grid", "table.headline"))
    assert [t["title"] for t in head] == ["The grid: methods × benchmarks"]
    printed = cli_text(results, plugin_path, "leaderboard", "--format", "html")
    assert all(cell in printed for row in head[0]["rows"] for cell in row)
    assert head[0]["headers"][0] == "method" and head[0]["headers"][-1] == "mean rank"
    assert page.errors() == []
    requests = [e["params"]["request"]["url"] for e in page.browser.events.get(page.session, [])
                if e["method"] == "Network.requestWillBeSent"]
    assert requests and all(url.startswith("file://") for url in requests), requests


def test_sorting_a_column_orders_its_numbers(page, site):
    open_site(page, site)
    page.evaluate("""(() => { const t = [...document.querySelectorAll('table.grid')].find(t => t.dataset.title == 'plancraft');
        [...t.tHead.rows[0].cells].find(c => c.dataset.header == 'success').click(); })()""")
    first = page.evaluate("""(() => { const t = [...document.querySelectorAll('table.grid')].find(t => t.dataset.title == 'plancraft');
        const col = [...t.tHead.rows[0].cells].findIndex(c => c.dataset.header == 'success');
        return [...t.tBodies[0].rows].map(r => r.cells[col].textContent); })()""")
    assert first == sorted(first, key=float)
    page.evaluate("""(() => { const t = [...document.querySelectorAll('table.grid')].find(t => t.dataset.title == 'plancraft');
        [...t.tHead.rows[0].cells].find(c => c.dataset.header == 'success').click(); })()""")
    second = page.evaluate("""(() => { const t = [...document.querySelectorAll('table.grid')].find(t => t.dataset.title == 'plancraft');
        const col = [...t.tHead.rows[0].cells].findIndex(c => c.dataset.header == 'success');
        return [...t.tBodies[0].rows].map(r => r.cells[col].textContent); })()""")
    assert second == sorted(first, key=float, reverse=True)


def test_a_rows_provenance_names_its_run(page, site):
    open_site(page, site)
    page.evaluate("""[...document.querySelectorAll('table.grid')].find(t => t.dataset.title == 'textworld')
                     .tBodies[0].rows[0].querySelector('button.from').click()""")
    text = page.wait_for("(() => { const p = [...document.querySelectorAll('.provenance')].find(p => !p.hidden); "
                         "return p && p.textContent; })()")
    assert "lifebench run --benchmark textworld" in text
    assert "command line (no spec file)" in text and "lifebench 0.1.0" in text
    assert "endpoint: —" in text and "textworld 1.7.0" in text


def test_the_comparisons_are_lifebench_compares(page, site, results, plugin_path):
    open_site(page, site, "#comparisons")
    shown = page.wait_for("""(() => { const t = document.querySelector('table.comparisons'); return t &&
        [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent)); })()""")
    headers = page.evaluate("[...document.querySelector('table.comparisons').tHead.rows[0].cells].map(c => c.textContent)")
    expected = cli_csv(results, plugin_path, "compare", "--metric", "success", "--metric", "score")
    assert [dict(zip(headers, row)) for row in shown] == expected
    assert any(r["p_adjusted"] != r["p"] for r in expected)  # corrected over the grid


def test_the_plugins_tables_are_shown(page, site):
    open_site(page, site, "#tables")
    titles = page.wait_for("[...document.querySelectorAll('table.further')].map(t => t.dataset.title)")
    assert "Crafter: success rate per achievement (% of episodes)" in titles
    assert "plancraft val.small: success rate per task" in titles


def test_the_plots_are_drawn_from_the_figures_numbers(page, site):
    open_site(page, site, "#plots?group=plancraft%20val.small")
    page.wait_for("document.querySelectorAll('figure.chart-box').length >= 3")
    captions = page.evaluate("[...document.querySelectorAll('figcaption')].map(c => c.textContent)")
    assert any(c.startswith("Success vs step budget") for c in captions)
    assert any(c.startswith("Learning curve") for c in captions)
    assert any(c.startswith("Success vs tokens per episode") for c in captions)
    assert any(c.startswith("success per task") for c in captions)
    series = page.evaluate("[...document.querySelectorAll('figure.chart-box')[0].querySelectorAll('g.series')].map(g => g.dataset.label)")
    assert {"oracle", "random"} <= set(series) and series == sorted(series)
    front = page.evaluate("[...document.querySelectorAll('g.point.on-front')].map(g => g.dataset.label)")
    assert "oracle" in front and "random" not in front  # oracle: more success for the same 0 tokens


TRAINING_JS = """[...document.querySelectorAll('figure.training')].map(f => ({
  caption: f.querySelector(':scope > figcaption').textContent,
  stream: f.querySelector(':scope > p.small').textContent,
  charts: [...f.querySelectorAll('.small-multiples figcaption')].map(c => c.textContent),
  paths: [...f.querySelectorAll('.small-multiples path')].map(p => (p.getAttribute('d').match(/M/g) || []).length),
  note: (f.querySelector('.training-note') || {}).textContent || ''}))"""


def test_training_curves_are_drawn_per_stream_their_text_as_text(page, tmp_path):
    """A hand-made site (no run): two streams with curves, names holding markup, and
    malformed values said under them."""
    build_site([write_records(tmp_path / "out", training_records())], tmp_path / "site")
    open_site(page, tmp_path / "site", "#plots?group=toy%20s")
    page.wait_for("document.querySelectorAll('figure.training').length === 2")
    first, second = page.evaluate(TRAINING_JS)
    assert first == {"caption": TRAINING["title"], "stream": "trainer @m · seed 0 · 3 series",
                     "charts": sorted(TRAINING["series"]), "paths": [1, 1, 2],  # reward's gap: a second stroke
                     "note": TRAINING["note"]}
    assert second["stream"].endswith("seed 1 · 3 series") and second["note"] == ""
    assert page.evaluate("document.querySelectorAll('#view script, #view b').length") == 0
    notes = page.evaluate("[...document.querySelectorAll('#training-curves > p.note')].map(p => p.textContent)")
    assert len(notes) == len(MALFORMED) and all("extra.training_curves left out" in n for n in notes)
    assert page.evaluate("document.querySelector('select[name=group] option').textContent") == "toy s · training curves"
    assert page.errors() == []


def wait_count(page) -> int:
    return int(page.wait_for("document.querySelector('#episode-count') && document.querySelector('#episode-count').dataset.count"))


def set_filter(page, name: str, value: str) -> None:
    page.evaluate(f"""(() => {{ const s = document.querySelector('#episode-filters select[name={name}]');
        s.value = {json.dumps(value)}; s.dispatchEvent(new Event('change')); }})()""")


def column(page, header: str) -> list[str]:
    return page.evaluate(f"""(() => {{ const t = document.querySelector('table.episodes');
        const i = [...t.tHead.rows[0].cells].findIndex(c => c.textContent == {json.dumps(header)});
        return [...t.tBodies[0].rows].map(r => r.cells[i].textContent); }})()""")


def test_a_filter_narrows_the_episode_list(page, site, results):
    records = [json.loads(line) for line in (results / "episodes.jsonl").read_text().splitlines()]
    keys = {(r["method"], r["method_config_hash"], r["benchmark"], r["split"], r["instance_id"], r["seed"], r["trial"])
            for r in records}
    open_site(page, site, "#episodes")
    assert wait_count(page) == len(keys)
    set_filter(page, "method", "oracle")
    oracle = wait_count(page)
    assert 0 < oracle < len(keys) and oracle == sum(1 for k in keys if k[0] == "oracle")
    assert set(column(page, "method")) == {"oracle"}
    set_filter(page, "benchmark", "plancraft")
    set_filter(page, "seed", "1")
    assert wait_count(page) == 3 and set(column(page, "seed")) == {"1"}
    assert "method=oracle" in page.evaluate("location.hash")  # the state is in the URL
    set_filter(page, "seed", "")
    set_filter(page, "method", "")
    set_filter(page, "status", "agent_error")
    assert wait_count(page) == 1 and column(page, "status") == ["agent_error"]


def test_an_episode_opens_with_its_steps(page, site, results):
    open_site(page, site, "#episodes?benchmark=textworld&method=oracle")
    assert wait_count(page) == 2
    instance = column(page, "instance")[0]
    page.evaluate("document.querySelector('table.episodes tbody a').click()")
    page.wait_for("document.querySelectorAll('li.step').length > 1")
    actions = page.evaluate("[...document.querySelectorAll('li.step .action code')].map(c => c.textContent)")
    [line] = [json.loads(l) for p in (results / "trajectories").glob("textworld.ige-cooking.oracle-*.jsonl")
              for l in p.read_text().splitlines() if json.loads(l)["instance_id"] == instance]
    assert actions == ["> " + s["action"] for s in line["steps"][1:]]
    observations = page.evaluate("[...document.querySelectorAll('li.step pre.observation')].map(p => p.textContent)")
    assert observations == [s["observation"] for s in line["steps"]]
    facts = page.evaluate("document.querySelector('dl.facts').textContent")
    assert "success" in facts and "yes" in facts and instance in facts
    assert "max_score" in page.evaluate("document.querySelector('details.extra').textContent")
    page.evaluate("document.querySelector('.stepper button:nth-child(2)').click()")
    assert page.evaluate("document.querySelector('li.step.current').dataset.step") == "1"


def test_side_by_side_shows_both_episodes(page, site, results):
    open_site(page, site, "#episodes?benchmark=textworld&method=oracle")
    wait_count(page)
    page.evaluate("document.querySelector('table.episodes tbody a').click()")
    page.wait_for("!!document.querySelector('select[name=pair]')")
    other = page.evaluate("""(() => { const s = document.querySelector('select[name=pair]');
        const o = [...s.options].find(o => o.textContent.startsWith('random'));
        s.value = o.value; s.dispatchEvent(new Event('change')); return o.value; })()""")
    assert other
    page.wait_for("document.querySelectorAll('table.pair tbody tr').length > 1")
    heads = page.evaluate("[...document.querySelectorAll('table.pair .pair-head h3')].map(h => h.textContent)")
    assert len(heads) == 2 and "oracle" in heads[0] and "random" in heads[1]
    cells = page.evaluate("[...document.querySelectorAll('table.pair tbody tr')].map(r => r.cells.length)")
    assert set(cells) == {3}
    random_steps = page.evaluate("[...document.querySelectorAll('table.pair tbody tr')].filter(r => !r.cells[2].classList.contains('empty')).length")
    instance = page.evaluate("document.querySelector('table.pair .pair-head h3').textContent.split(' · ')[0]")
    [record] = [json.loads(line) for line in (results / "episodes.jsonl").read_text().splitlines()
                if f'"instance_id":"{instance}"' in line and '"method":"random"' in line]
    assert random_steps == record["steps"] + 1  # the reset, then every step


def test_runs_and_failures(page, site, results):
    open_site(page, site, "#runs")
    runs = json.loads((results / "manifest.json").read_text())["runs"]
    assert page.wait_for("document.querySelectorAll('details.run').length") == len(runs)
    page.wait_for("!!document.querySelector('table.failures')")
    rows = page.evaluate("""(() => { const t = document.querySelector('table.failures');
        const h = [...t.tHead.rows[0].cells].map(c => c.textContent);
        return [...t.tBodies[0].rows].map(r => Object.fromEntries([...r.cells].map((c, i) => [h[i], c.textContent]))); })()""")
    by_status = {r["status"]: r for r in rows}
    assert by_status["env_error"]["resolved"] == "yes" and "simulated environment crash" in by_status["env_error"]["error"]
    assert by_status["agent_error"]["resolved"] == "no"


def test_screenshots_of_the_main_pages(page, site, tmp_path):
    out = Path(os.environ.get("LIFEBENCH_SCREENSHOTS") or tmp_path)
    shots = []
    for name, route, ready in (
            ("leaderboard", "", "!!document.querySelector('table.grid')"),
            ("episode", "#episodes?benchmark=textworld&method=oracle", "!!document.querySelector('table.episodes')")):
        open_site(page, site, route)
        page.wait_for(ready)
        if name == "episode":
            page.evaluate("document.querySelector('table.episodes tbody a').click()")
            page.wait_for("document.querySelectorAll('li.step').length > 1")
        time.sleep(0.2)
        shots.append(page.screenshot(out / f"site-{name}.png"))
    page.evaluate("""(() => { const s = document.querySelector('select[name=pair]');
        s.value = [...s.options].find(o => o.textContent.startsWith('random')).value;
        s.dispatchEvent(new Event('change')); })()""")
    page.wait_for("document.querySelectorAll('table.pair tbody tr').length > 1")
    time.sleep(0.2)
    shots.append(page.screenshot(out / "site-pair.png"))
    assert all(p.stat().st_size > 10_000 for p in shots)
    assert page.errors() == []


def test_each_input_is_marked_by_its_replay_with_the_report_a_click_away(page, results, tmp_path):
    import shutil

    from lifebench.store.verification import Difference, Verification, sha256_of, write_report

    inputs = []
    for name in ("exact", "differed", "bare", "unverified"):
        folder = tmp_path / name
        shutil.copytree(results, folder, ignore=shutil.ignore_patterns("site*", "answers.sqlite*",
                                                                       "verification.json"))
        if name != "bare":  # a run keeps its answers; `--no-responses` left them out
            (folder / "answers.sqlite").write_bytes(b"")
        n = len((folder / "episodes.jsonl").read_text().splitlines())
        if name == "exact":
            write_report(folder / "verification.json", Verification(
                "exact", episodes=n, exact=n, records_sha256=sha256_of(folder / "episodes.jsonl")))
        if name == "differed":
            write_report(folder / "verification.json", Verification(
                "differed", episodes=n, exact=n - 1, differences_total=1,
                differences=[Difference("plancraft:val x trial 0", "success", True, False)],
                records_sha256=sha256_of(folder / "episodes.jsonl")))
        inputs.append(folder)
    site = build_site(inputs, tmp_path / "site").output
    open_site(page, site)
    marks = page.evaluate("[...document.querySelectorAll('ul.verifications li .mark')].map(m => m.textContent)")
    assert marks == [f"replayed exactly ({n}/{n})", "replayed, 1 difference", "not replayable",
                     "not verified"]
    page.evaluate("document.querySelectorAll('ul.verifications a.mark-link')[1].click()")
    page.wait_for("!!document.querySelector('#verification table.differences')")
    report = page.evaluate("document.getElementById('verification').textContent")
    assert "1 difference(s)" in report and "plancraft:val x trial 0" in report and "success" in report
    # a row's provenance says the same of the runs it comes from
    page.evaluate("location.hash = '#leaderboard'")
    page.wait_for("!!document.querySelector('button.from')")
    page.evaluate("document.querySelector('button.from').click()")
    note = page.evaluate("document.querySelector('.provenance:not([hidden])').textContent")
    assert "replay from its answers: " in note and any(m in note for m in marks)
    assert page.errors() == []
