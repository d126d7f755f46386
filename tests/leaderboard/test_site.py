"""`lifebench view`'s builder without a browser: the files it writes, where episodes'
trajectories are found, what provenance may show (never a secret), the refusals, and
`--serve` on 127.0.0.1. The page itself is tested in Chromium (test_site_browser.py)."""

from __future__ import annotations

import csv
import io
import json
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from conftest import CANARY, ROOT
from lifebench.api import EpisodeRecord
from lifebench.leaderboard.site import build_site
from lifebench.leaderboard.site.build import ASSETS
from lifebench.leaderboard.site.episodes import stream_id
from lifebench.leaderboard.site.provenance import host_of, sanitized, spec_file
from lifebench.leaderboard.site.series import pareto_front
from lifebench.testing import run_cli


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    """Plancraft val.small, random, two budgets (one the default) and two seeds."""
    out = tmp_path_factory.mktemp("view") / "out"
    result = run_cli("run", "--benchmark", "plancraft", "--split", "val.small", "--method", "random",
                     "--limit", "2", "--seeds", "0,1", "--budget", "5,default", "--workers", "0",
                     "--no-progress", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def load_script(path: Path, target: str) -> dict:
    """The JSON a data script hands to the page."""
    text = path.read_text()
    assert text.startswith(target + ("JSON.parse(" if target.endswith("=") else "(JSON.parse("))
    literal = text[text.index("JSON.parse(") + len("JSON.parse("): text.rindex(")" if target.endswith("=") else "))")]
    return json.loads(json.loads(literal))


def test_every_episodes_stream_file_holds_its_record_and_trajectory(small_run, tmp_path):
    records = [EpisodeRecord.from_dict(json.loads(l)) for l in (small_run / "episodes.jsonl").read_text().splitlines()]
    names = {p.stem for p in (small_run / "trajectories").glob("*.jsonl")}
    assert {stream_id(r) for r in records} == names  # the runner's own stream ids
    site = build_site([small_run], tmp_path / "site")
    assert site.episodes == len(records) == 8 and site.streams == 4
    index = load_script(tmp_path / "site" / "data" / "episodes.js", "LB.episodesLoaded")
    assert index["count"] == 8 and sorted(index["values"]["budget"]) == ["5", "default"]
    for row in range(index["count"]):
        stream = load_script(tmp_path / "site" / "data" / "streams" / f"{index['columns']['stream'][row]}.js",
                             "LB.streamLoaded")
        position = str(index["columns"]["episode_index"][row])
        record = stream["records"][position]
        assert record["instance_id"] == index["values"]["instance"][index["columns"]["instance"][row]]
        [attempt] = stream["trajectories"][position]
        assert len(attempt["steps"]) == record["steps"] + 1


def test_the_summary_is_the_leaderboards(small_run, tmp_path):
    build_site([small_run], tmp_path / "site")
    data = load_script(tmp_path / "site" / "data" / "summary.js", "window.LB_DATA=")
    rows = list(csv.reader(io.StringIO(run_cli("leaderboard", str(small_run), "--format", "csv").stdout)))
    [table] = data["grid"]["tables"]
    assert [["plancraft", *row] for row in table["rows"]] == rows[1:]
    cells = [data["grid"]["cells"][i] for i in table["cells"]]
    assert [c["filter"]["budget"] for c in cells] == ["5", "default"]
    assert all(c["runs"] == [0] and c["harness_versions"] == ["0.1.0"] for c in cells)
    assert data["manifests"][0]["command"].startswith("lifebench run --benchmark plancraft")


def test_no_trajectories_is_said_and_directories_combine(small_run, tmp_path):
    out = tmp_path / "out"
    assert run_cli("run", "--benchmark", "plancraft", "--split", "val.small", "--method", "oracle",
                   "--limit", "1", "--workers", "0", "--no-progress", "--no-trajectories",
                   "--out", str(out)).returncode == 0
    site = build_site([small_run, out], tmp_path / "site")
    assert site.episodes == 9 and site.streams == 5
    index = load_script(tmp_path / "site" / "data" / "episodes.js", "LB.episodesLoaded")
    [row] = [i for i in range(index["count"]) if index["values"]["method"][index["columns"]["method"][i]] == "oracle"]
    stream = load_script(tmp_path / "site" / "data" / "streams" / f"{index['columns']['stream'][row]}.js",
                         "LB.streamLoaded")
    assert stream["directory"] == str(out)
    assert stream["has_trajectories"] is False and stream["trajectories"] == {}


def test_provenance_shows_hosts_never_secrets(small_run, tmp_path):
    manifest = json.loads((small_run / "manifest.json").read_text())
    run = manifest["runs"][0]
    run["spec"]["llm"]["base_url"] = f"https://user:{CANARY}@llm.example.org:8443/v1?api_key={CANARY}"
    run["spec"]["method_args"] = {"react": {"api_key": CANARY, "token": CANARY, "max_tokens": 300}}
    run["argv"] = run["argv"] + ["--base-url", f"http://me:{CANARY}@10.0.0.5:8000/v1"]
    copy = tmp_path / "out"
    copy.mkdir()
    (copy / "episodes.jsonl").write_text((small_run / "episodes.jsonl").read_text())
    (copy / "manifest.json").write_text(json.dumps(manifest))
    build_site([copy], tmp_path / "site")
    written = "".join(p.read_text() for p in (tmp_path / "site" / "data").rglob("*.js"))
    assert CANARY not in written and "user:" not in written
    data = load_script(tmp_path / "site" / "data" / "summary.js", "window.LB_DATA=")
    [shown] = data["manifests"]
    assert shown["endpoint"] == "llm.example.org:8443"
    assert shown["command"].endswith("--base-url 10.0.0.5:8000")
    assert shown["spec"]["method_args"]["react"] == {"api_key": "[redacted]", "token": "[redacted]",
                                                     "max_tokens": 300}
    assert shown["spec"]["llm"]["api_key_env"] == "OPENAI_API_KEY"  # a variable's name stays


def test_provenance_helpers():
    assert host_of("http://localhost:8000/v1") == "localhost:8000" and host_of(None) is None
    assert sanitized({"url": "see https://a.b/c?key=1 now"}) == {"url": "see a.b now"}
    assert spec_file([".venv/bin/lifebench", "run", "specs/how2-table1.toml", "--out", "x"]) == "specs/how2-table1.toml"
    assert spec_file(["lifebench", "run", "--benchmark", "plancraft"]) is None


def test_pareto_front():
    # (tokens, success): b dominates c; a and b are on the front; d ties a on cost but does worse
    assert pareto_front([(0, 0.2), (100, 0.9), (200, 0.8), (0, 0.1)]) == [True, True, False, False]


def test_view_refuses_a_folder_that_is_not_a_site(small_run, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    result = run_cli("view", str(small_run), "--output", str(tmp_path / "mine"))
    assert result.returncode == 2 and "holds no lifebench site" in result.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    # a site is rewritten in place
    assert run_cli("view", str(small_run), "--output", str(tmp_path / "site")).returncode == 0
    again = run_cli("view", str(small_run), "--output", str(tmp_path / "site"))
    assert again.returncode == 0 and "8 episodes" in again.stdout
    assert run_cli("view", str(small_run), "--port", "9").returncode == 2


def test_the_page_needs_no_network():
    """Every script and style is ours and relative: no CDN, no URL but the SVG namespace."""
    files = [p for p in ASSETS.rglob("*") if p.is_file()]
    assert {p.suffix for p in files} == {".html", ".css", ".js"}
    for path in files:
        urls = set(re.findall(r"(?:https?:)?//[\w.-]+\.\w+[^\s\"')]*", path.read_text()))
        assert urls <= {"http://www.w3.org/2000/svg"}, (path.name, urls)
    html = (ASSETS / "index.html").read_text()
    assert all(not src.startswith(("http", "//", "/")) for src in re.findall(r'(?:src|href)="([^"#]+)"', html))
    package_data = (ROOT / "pyproject.toml").read_text()
    assert '"lifebench.leaderboard" = ["site/assets/*", "site/assets/**/*"]' in package_data


def test_serve_answers_on_localhost_only(small_run, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "lifebench.cli", "view", str(small_run), "--output",
                             str(tmp_path / "site"), "--serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        url = re.search(r"at (http://\S+)", lines[1]).group(1)
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.status == 200 and b"data/summary.js" in response.read()
        with urllib.request.urlopen(url.replace("index.html", "data/summary.js"), timeout=10) as response:
            assert response.read().startswith(b"window.LB_DATA=")
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "stopped serving" in out
