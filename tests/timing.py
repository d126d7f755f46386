"""The suite's time (tests/README.md, "Fast tests"), as a pytest plugin loaded by conftest.py.

- `@pytest.mark.slow(reason="...")` marks a test that takes over 30 s on a quiet 2-core
  machine; the reason (why no smaller instance shows the behaviour) is required.
- Slow tests are collected first, so that parallel workers (`make test` runs pytest-xdist)
  start them early instead of ending the run on a long tail.
- `--max-test-seconds S` (`make test-profile`) fails the run when a test not marked slow
  took more than S seconds (setup, call and teardown together). CI never passes it: its
  machine is shared, and a duration there says nothing about the test.
"""

from __future__ import annotations

from collections import defaultdict

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--max-test-seconds", type=float, default=None, metavar="S",
                     help="fail when a test not marked slow takes more than S seconds")


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
