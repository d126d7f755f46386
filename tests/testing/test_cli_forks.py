"""`lifebench.testing.cli_forks`: a forked command is a process of its own (its exit status,
output, directory, environment, `PYTHONPATH` and hash seed), a hung one is killed at its
deadline, and `run_cli` answers the same forked as started."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from lifebench.testing import cli_forks, run_cli

PROBE = """
import hashlib, json, os, sys
what = sys.argv[1]
if what == "hang":
    import time; time.sleep(600)
if what == "die":
    os.kill(os.getpid(), 9)
if what == "busy":  # CPU in a child of its own, which it waits for
    import subprocess
    subprocess.run([sys.executable, "-c", "import time\\nend = time.process_time() + 0.4\\n"
                    "while time.process_time() < end: pass"], check=True)
print(json.dumps({"cwd": os.getcwd(), "marker": os.environ.get("PROBE_MARKER"),
                  "hash": hash("lifebench"), "pid": os.getpid(), "argv": sys.argv[1:],
                  "first_paths": sys.path[:2]}))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[2]))
"""


@pytest.fixture(scope="module")
def forks():
    forks = cli_forks.CLIForks(["json"])
    yield forks
    forks.close()


@pytest.fixture
def probe_env(tmp_path):
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "forkprobe.py").write_text(PROBE)
    return {**os.environ, "PYTHONPATH": str(modules), "PROBE_MARKER": "the request's"}, modules


def test_a_forked_command_is_a_process_of_its_own(forks, probe_env, tmp_path):
    env, modules = probe_env
    runs = [forks.run(("show", "3"), env, str(tmp_path), 30, module="forkprobe") for _ in range(2)]
    seen = []
    for code, out, err in runs:
        assert code == 3 and err == "to stderr\n"
        seen.append(json.loads(out))
    first, second = seen
    assert first["cwd"] == second["cwd"] == str(tmp_path)
    assert first["marker"] == "the request's" and first["argv"] == ["show", "3"]
    assert first["first_paths"] == [str(tmp_path), str(modules)]
    assert os.getpid() not in (first["pid"], second["pid"]) and first["pid"] != second["pid"]
    assert first["hash"] != second["hash"], "consecutive commands share a hash seed"


def test_a_hung_command_is_killed_at_its_deadline_and_a_killed_one_reports_its_signal(
        forks, probe_env, tmp_path):
    env, _ = probe_env
    with pytest.raises(subprocess.TimeoutExpired):
        forks.run(("hang", "0"), env, str(tmp_path), 1.0, module="forkprobe")
    code, _, _ = forks.run(("die", "0"), env, str(tmp_path), 30, module="forkprobe")
    assert code == -signal.SIGKILL
    code, out, _ = forks.run(("show", "0"), env, str(tmp_path), 30, module="forkprobe")
    assert code == 0 and json.loads(out)["argv"] == ["show", "0"]  # the parents live on


def test_a_commands_cpu_and_its_childrens_are_counted(forks, probe_env, tmp_path):
    """(what `make test-profile` charges a test for the commands it forked)"""
    env, _ = probe_env
    before = forks.cpu_seconds
    code, _, _ = forks.run(("busy", "0"), env, str(tmp_path), 30, module="forkprobe")
    assert code == 0 and forks.cpu_seconds - before >= 0.35


@pytest.mark.parametrize("args", [("list", "methods"), ("run", "--benchmark", "nosuch")])
def test_run_cli_answers_the_same_forked_as_started(args, monkeypatch, tmp_path):
    monkeypatch.setenv(cli_forks.ENV, "on")
    forked = run_cli(*args, cwd=tmp_path)
    monkeypatch.setenv(cli_forks.ENV, "off")
    started = run_cli(*args, cwd=tmp_path)
    assert forked == started
    assert cli_forks.preload_modules({"PYTHONHASHSEED": "1"}) is None  # a start's variable
