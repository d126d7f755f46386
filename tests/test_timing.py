"""tests/timing.py, the suite's time guard: `--max-test-seconds` fails a run on a test over
the limit unless it is marked slow, `slow` needs a reason, and slow tests run first."""

from __future__ import annotations

import json

import pytest

TESTS = """
import time
import pytest

def test_quick():
    pass

def test_long():
    time.sleep(0.3)

@pytest.mark.slow(reason="it has to wait")
def test_long_and_marked():
    time.sleep(0.3)
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest('pytest_plugins = ["timing"]')
    return pytester


def test_a_long_test_not_marked_slow_fails_the_profile(suite):
    suite.makepyfile(test_sample=TESTS)
    result = suite.runpytest("--max-test-seconds", "0.2")
    result.assert_outcomes(passed=3)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*tests over 0.2 s not marked slow*", "*test_sample.py::test_long"])
    assert "test_long_and_marked" not in result.stdout.str().split("not marked slow")[1]


def test_without_the_option_durations_never_fail(suite):
    suite.makepyfile(test_sample=TESTS)
    result = suite.runpytest()
    assert result.ret == 0


def test_slow_tests_run_first(suite):
    suite.makepyfile(test_sample=TESTS)
    result = suite.runpytest("-v")
    names = [line.split("::")[1].split()[0] for line in result.outlines if "PASSED" in line]
    assert names == ["test_long_and_marked", "test_quick", "test_long"]


def test_slow_needs_a_reason(suite):
    suite.makepyfile(test_sample="import pytest\n\n@pytest.mark.slow\ndef test_x():\n    pass\n")
    result = suite.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "@pytest.mark.slow needs reason" in result.stderr.str() + result.stdout.str()


def test_the_profile_charges_a_test_the_cpu_of_the_processes_it_waited_for(suite):
    """CI's check takes the cores a test leaves idle, so a test's CPU (its children's
    included) is what it costs; a sleeping test costs next to none."""
    suite.makepyfile(test_sample="""
import subprocess, sys, time

def test_busy_child():
    subprocess.run([sys.executable, "-c", "import time\\nend = time.process_time() + 0.4\\n"
                    "while time.process_time() < end: pass"], check=True)

def test_asleep():
    time.sleep(0.4)
""")
    report = suite.path / "profile.jsonl"
    result = suite.runpytest("--profile-report", str(report))
    assert result.ret == 0
    cpu = {json.loads(line)["test"].split("::")[1]: json.loads(line)["cpu"]
           for line in report.read_text().splitlines()}
    assert cpu["test_busy_child"] >= 0.35 and cpu["test_asleep"] < 0.2
