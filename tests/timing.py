"""The suite's time (tests/README.md, "Fast tests"), as a pytest plugin loaded by conftest.py.

- `@pytest.mark.slow(reason="...")` marks a test that takes over 30 s on a quiet 2-core
  machine; the reason (why no smaller instance shows the behaviour) is required.
- Slow tests are collected first, so that parallel workers (`make test` runs pytest-xdist)
  start them early instead of ending the run on a long tail.
- `--max-test-seconds S` (`make test-profile`) fails the run when a test not marked slow
  took more than S seconds (setup, call and teardown together). CI never passes it: its
  machine is shared, and a duration there says nothing about the test.
- `--profile-report FILE` (`make test-profile`) writes one JSON line per test: its phases'
  seconds, its CPU seconds (its process's, the children it waited for and the CLI commands
  it forked: CI's check takes the cores a test leaves idle, so CPU is what a test costs CI), its marks, the fixtures it
  set up (and their seconds) and the processes it started, by kind; `tests/perf/profile_table.py FILE` turns it into tests/README.md's tables.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--max-test-seconds", type=float, default=None, metavar="S",
                     help="fail when a test not marked slow takes more than S seconds")
    parser.addoption("--profile-report", default=None, metavar="FILE",
                     help="write each test's seconds, fixtures and started processes to FILE")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow(reason): over 30 s on a quiet 2-core machine; the reason says why "
                   "no smaller instance shows the behaviour")
    config.addinivalue_line(
        "markers", "real_model: talks to the embedded llama.cpp server with a real model (`make "
                   "local` installs it); CI runs these and never skips them")
    limit = config.getoption("--max-test-seconds")
    if limit is not None and not hasattr(config, "workerinput"):  # the controller judges
        config.pluginmanager.register(DurationLimit(limit), "lifebench-duration-limit")
    report = config.getoption("--profile-report")
    if report:
        if not hasattr(config, "workerinput"):  # the controller starts the file, workers add
            Path(report).parent.mkdir(parents=True, exist_ok=True)
            Path(report).write_text("")
        config.pluginmanager.register(Profiler(Path(report)), "lifebench-profiler")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        mark = item.get_closest_marker("slow")
        if mark is not None and not str(mark.kwargs.get("reason", "")).strip():
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.slow needs reason=\"...\"")
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable


class DurationLimit:
    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.seconds: dict[str, float] = defaultdict(float)
        self.slow: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] += report.duration
        if "slow" in report.keywords:
            self.slow.add(report.nodeid)

    def over(self) -> list[tuple[str, float]]:
        return sorted(((nodeid, s) for nodeid, s in self.seconds.items()
                       if s > self.limit and nodeid not in self.slow), key=lambda x: -x[1])

    def pytest_terminal_summary(self, terminalreporter) -> None:
        over = self.over()
        if over:
            terminalreporter.section(f"tests over {self.limit:g} s not marked slow")
            for nodeid, seconds in over:
                terminalreporter.write_line(f"{seconds:7.1f} s  {nodeid}")
            terminalreporter.write_line("make them smaller (tests/README.md, Fast tests) or mark "
                                        "them @pytest.mark.slow(reason=...)")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.over() and session.exitstatus == 0:
            session.exitstatus = 1


def process_kind(args) -> str:
    """What a started process is, from its command line."""
    argv = [str(a) for a in ([args] if isinstance(args, (str, bytes, os.PathLike)) else args)]
    if len(argv) == 1 and " " in argv[0]:
        argv = argv[0].split()  # a shell line
    text = " ".join(argv)
    name = os.path.basename(argv[0]) if argv else ""
    if "embedded_app" in text or "llama_cpp.server" in text or (name == "lifebench" and " serve" in text):
        return "llama.cpp server"
    if "lifebench.testing.cli_forks" in text:
        return "CLI fork parent"
    if "lifebench.testing.fakeserver" in text:
        return "scripted server process"
    if name == "lifebench" or "lifebench.cli" in text:
        return "lifebench CLI"
    if name == "java":
        return "JVM"
    if "chrom" in name:
        return "chromium"
    if " -m pip" in text:
        return "pip"
    if name.startswith("python") or name in ("sh", "bash"):
        return "python or shell"
    return name or "other"


def cpu_seconds() -> float:
    """This process's CPU seconds and those of the children it has waited for (a server a
    fixture keeps is charged to the test that stops it)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


class Profiler:
    """Per test: phases' seconds, marks, fixtures set up (with their seconds), processes
    started by the test's own process by kind. One JSON line per test, appended by every
    worker to the one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.current = None
        self.fixtures: dict[str, float] = {}
        self.processes: Counter = Counter()
        self.seconds: dict[str, float] = {}
        self.cpu_elsewhere = 0.0  # CPU os.times() does not see: forked commands' (less reaps)
        started = subprocess.Popen._execute_child
        profiler = self

        def counted(popen, args, *rest, **kw):
            if profiler.current is not None:
                profiler.processes[process_kind(args)] += 1
            return started(popen, args, *rest, **kw)

        subprocess.Popen._execute_child = counted
        from lifebench.testing.cli_forks import CLIForks

        forked = CLIForks.run

        def counted_fork(forks, args, *rest, **kw):  # a command forked, not started
            if profiler.current is not None:
                profiler.processes["lifebench CLI"] += 1
            before = forks.cpu_seconds
            try:
                return forked(forks, args, *rest, **kw)
            finally:
                profiler.cpu_elsewhere += forks.cpu_seconds - before

        CLIForks.run = counted_fork
        closed = CLIForks.close

        def uncounted_close(forks):  # reaping a parent charges its forks' CPU a second time
            before = cpu_seconds()
            try:
                return closed(forks)
            finally:
                profiler.cpu_elsewhere -= cpu_seconds() - before

        CLIForks.close = uncounted_close

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        began = time.perf_counter()
        yield
        if self.current is not None:
            name = f"{fixturedef.argname} ({fixturedef.scope})"
            self.fixtures[name] = self.fixtures.get(name, 0.0) + time.perf_counter() - began

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.current, self.fixtures, self.processes, self.seconds = item.nodeid, {}, Counter(), {}
        self.cpu_elsewhere, began = 0.0, cpu_seconds()
        yield
        cpu = round(cpu_seconds() - began + self.cpu_elsewhere, 2)
        marks = sorted({m.name for m in item.iter_markers()} & {"slow", "real_model"})
        line = {"test": item.nodeid, "file": item.nodeid.split("::")[0], "ended": round(time.time(), 2),
                "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "seconds": self.seconds, "cpu": cpu,
                "marks": marks, "fixtures": sorted(item.fixturenames),
                "fixture_setup": {k: round(v, 3) for k, v in self.fixtures.items() if v >= 0.001},
                "processes": dict(self.processes)}
        with self.path.open("a") as f:
            f.write(json.dumps(line) + "\n")
        self.current = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.when] = round(self.seconds.get(report.when, 0.0) + report.duration, 3)
