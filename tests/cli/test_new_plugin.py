"""`lifebench new method|benchmark NAME`: the package it writes installs (into a private
--target directory, never into the venv), its own tests pass against the real harness, and
`lifebench run` runs the new plugin; the CI recipe's regression check passes on it.
Also: the tiny `corridor` benchmark that lifebench.testing ships for plugins' tests."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import read_records, run_cli
from lifebench.testing import llm_server

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

METHOD_HOOKS = ("setup", "prepare", "explore", "begin_episode", "act", "end_episode",
                "episode_extra", "state", "load_state")
BENCHMARK_HOOKS = ("instructions", "splits", "load_instances", "make_env", "oracle",
                   "gold_length", "check_available")


def _env(site: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)}


def _generate(tmp_path_factory, kind: str, name: str) -> tuple[Path, Path, float]:
    root = tmp_path_factory.mktemp(f"new-{kind}")
    source, site = root / "src", root / "site"
    started = time.monotonic()
    made = run_cli("new", kind, name, "--dir", str(source), cwd=root)
    assert made.returncode == 0, made.stderr
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "--target", str(site), str(source)],
                   check=True, cwd=root, env={**os.environ, "PIP_NO_INDEX": "1"})
    return source, site, time.monotonic() - started


@pytest.fixture(scope="module")
def method_plugin(tmp_path_factory):
    return _generate(tmp_path_factory, "method", "my-planner")


@pytest.fixture(scope="module")
def benchmark_plugin(tmp_path_factory):
    return _generate(tmp_path_factory, "benchmark", "tiny-count")


def _package_checks(source: Path, kind: str, name: str, module: str, class_name: str) -> None:
    project = tomllib.loads((source / "pyproject.toml").read_text())
    assert project["project"]["name"] == f"lifebench-{name}"
    assert project["project"]["entry-points"][f"lifebench.{kind}s"] == {name: f"{module}:{class_name}"}
    workflow = (source / ".github" / "workflows" / "ci.yml").read_text()
    for step in ("pip install", "pip install -e .", "pytest", "lifebench check --baseline baseline"):
        assert step in workflow
    assert "$" not in workflow.replace("$LIFEBENCH", "")  # every template field was filled
    yaml = pytest.importorskip("yaml")
    steps = yaml.safe_load(workflow)["jobs"]["test"]["steps"]
    assert steps[-1]["run"].splitlines()[-1] == "lifebench check --baseline baseline --candidate candidate"
    readme = (source / "README.md").read_text()
    assert f"lifebench new {kind} {name}" in readme and "--submission" in readme
    assert (source / "tests" / "conftest.py").read_text().count("lifebench.testing.fixtures") == 1


def _run_own_tests(source: Path, site: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                            cwd=source, capture_output=True, text=True, timeout=600,
                            env={**os.environ, **_env(site)})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout


def _class_of(site: Path, module: str, class_name: str) -> type:
    sys.path.insert(0, str(site))
    try:
        return getattr(importlib.import_module(module), class_name)
    finally:
        sys.path.remove(str(site))


def test_new_method_package_installs_and_its_tests_pass(method_plugin):
    source, site, _ = method_plugin
    _package_checks(source, "method", "my-planner", "lifebench_my_planner", "MyPlannerMethod")
    cls = _class_of(site, "lifebench_my_planner", "MyPlannerMethod")
    for hook in METHOD_HOOKS:  # every hook is in the class, documented
        assert hook in vars(cls) and vars(cls)[hook].__doc__, hook
    _run_own_tests(source, site)


def test_new_method_runs_with_lifebench_run_and_passes_the_ci_check(method_plugin, tmp_path):
    _, site, _ = method_plugin
    listed = run_cli("list", "methods", env=_env(site))
    assert "my-planner" in listed.stdout.split()
    with llm_server(script=["right"]) as server:
        for out in ("baseline", "candidate"):  # the CI recipe: a run, then check vs baseline
            result = run_cli("run", "--benchmark", "corridor", "--split", "small",
                             "--method", "my-planner", "--model", "ci", "--base-url", server.url,
                             "--cache", "off", "--no-progress", "--out", str(tmp_path / out),
                             env=_env(site))
            assert result.returncode == 0, result.stderr
    records = read_records(tmp_path / "candidate")
    assert len(records) == 8 and all(r["success"] for r in records)
    assert [r["steps"] for r in records] == list(range(2, 10))
    check = run_cli("check", "--baseline", str(tmp_path / "baseline"),
                    "--candidate", str(tmp_path / "candidate"), env=_env(site))
    assert check.returncode == 0, check.stdout + check.stderr
    manifest = json.loads((tmp_path / "candidate" / "manifest.json").read_text())
    packages = manifest["runs"][0]["packages"]  # the plugin's version is recorded
    assert packages.get("lifebench-my-planner") == "0.1.0" or \
        packages.get("lifebench_my_planner") == "0.1.0", packages


def test_new_benchmark_package_installs_and_its_tests_pass(benchmark_plugin):
    source, site, _ = benchmark_plugin
    _package_checks(source, "benchmark", "tiny-count", "lifebench_tiny_count", "TinyCountBenchmark")
    cls = _class_of(site, "lifebench_tiny_count", "TinyCountBenchmark")
    for hook in BENCHMARK_HOOKS:
        assert hook in vars(cls) and vars(cls)[hook].__doc__, hook
    _run_own_tests(source, site)


def test_new_benchmark_runs_the_random_method(benchmark_plugin, tmp_path):
    _, site, _ = benchmark_plugin
    listed = run_cli("list", "benchmarks", env=_env(site))
    assert "tiny-count" in listed.stdout.split()
    result = run_cli("run", "--benchmark", "tiny-count", "--method", "random", "--no-progress",
                     "--out", str(tmp_path / "out"), env=_env(site))
    assert result.returncode == 0, result.stderr
    records = read_records(tmp_path / "out")
    assert sorted(r["instance_id"] for r in records) == ["0-to-2", "1-to-4", "2-to--1", "5-to-3", "7-to-7"]
    assert all(r["status"] in ("ok", "budget_exhausted") for r in records)
    board = run_cli("leaderboard", str(tmp_path / "out"), "--no-plots", env=_env(site))
    assert board.returncode == 0 and "tiny-count" in board.stdout


@pytest.mark.parametrize("args, message", [
    (["method", "My_Method"], "plugin name 'My_Method'"),
    (["benchmark", "9lives"], "plugin name '9lives'"),
    (["method", "fine-name\n"], "plugin name 'fine-name\\n'"),  # not a name with a newline
])
def test_new_refuses_a_bad_name_in_one_line(tmp_path, args, message):
    result = run_cli("new", *args, "--dir", str(tmp_path / "p"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert not (tmp_path / "p").exists()


def test_new_refuses_a_dir_that_is_a_file_in_one_line(tmp_path):
    (tmp_path / "p").write_text("keep")
    result = run_cli("new", "method", "x", "--dir", str(tmp_path / "p"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "is a file, not a folder" in result.stderr and "Traceback" not in result.stderr
    assert (tmp_path / "p").read_text() == "keep"


def test_new_never_writes_over_a_directory(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "mine.txt").write_text("keep")
    result = run_cli("new", "method", "x", "--dir", str(tmp_path / "p"))
    assert result.returncode == 2 and "not empty" in result.stderr
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == ["mine.txt"]


def test_corridor_is_runnable_but_not_listed(tmp_path):
    listed = run_cli("list", "benchmarks")
    assert "corridor" not in listed.stdout.split()
    result = run_cli("run", "--benchmark", "corridor", "--split", "tiny", "--method", "oracle,random",
                     "--no-progress", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    records = read_records(tmp_path / "out")
    oracle = [r for r in records if r["method"] == "oracle"]
    assert sorted((r["instance_id"], r["steps"], r["success"]) for r in oracle) == \
        [("corridor-2", 2, True), ("corridor-3", 3, True), ("corridor-4", 4, True)]
    assert len(records) == 6


def test_new_method_runs_on_a_real_benchmark_unchanged(method_plugin, tmp_path):
    """The generated method on Plancraft, its LLM the local server playing the planner's
    next action for the observation it is sent: no edit to lifebench or to the plugin."""
    _, site, _ = method_plugin
    with llm_server(policy="plancraft") as server:
        result = run_cli("run", "--benchmark", "plancraft", "--split", "val.small", "--limit", "2",
                         "--method", "my-planner", "--model", "m", "--base-url", server.url,
                         "--cache", "off", "--no-progress", "--out", str(tmp_path / "out"),
                         env=_env(site))
    assert result.returncode == 0, result.stderr
    records = read_records(tmp_path / "out")
    assert len(records) == 2 and all(r["status"] == "ok" and r["success"] for r in records), records


FIVE = {"plancraft": "val.small", "alfworld": "valid_unseen", "textworld": "ige-cooking",
        "crafter": "seeds-100", "scienceworld": "step18-v1"}


def test_new_method_runs_on_all_five_benchmarks_unchanged(method_plugin, tmp_path):
    """The issue's must-show: a plugin made by `lifebench new method` runs on every benchmark
    of lifebench (one instance each, two steps), installed as it was written."""
    _, site, _ = method_plugin
    splits = [a for b, s in FIVE.items() for a in ("--split", f"{b}:{s}")]
    with llm_server(script=["look"]) as server:
        result = run_cli("run", "--benchmark", ",".join(FIVE), *splits, "--limit", "1",
                         "--max-steps", "2", "--method", "my-planner", "--model", "m",
                         "--base-url", server.url, "--cache", "off", "--no-progress",
                         "--workers", "0", "--out", str(tmp_path / "out"), env=_env(site),
                         timeout=900)
    assert result.returncode == 0, result.stderr
    records = read_records(tmp_path / "out")
    assert sorted(r["benchmark"] for r in records) == sorted(FIVE)
    assert all(r["status"] in ("ok", "budget_exhausted") and r["steps"] >= 1 and r["llm_calls"] >= 1
               for r in records), [(r["benchmark"], r["status"], r.get("error")) for r in records]
