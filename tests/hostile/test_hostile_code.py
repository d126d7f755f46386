"""Code a model writes (AutoManual's plans), from the checks to the OS: what no plan may
contain is refused before any process starts; what may run is bounded (time, memory,
recursion, output); and a plan no check looked at reaches no file, no network and no new
process inside the confinement."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lifebench.methods.automanual.api import GENERIC
from lifebench.methods.automanual.child import check_code
from lifebench.methods.automanual.sandbox import CodeProcess, RunEnded, SandboxLimits
from sandbox_checks import run_confined

MALICIOUS = [
    "import os\nos.system('echo pwned')",
    "from subprocess import run",
    "data = open('/etc/passwd').read()",
    "os = __import__('os')",
    "eval('1 + 1')",
    "exec('x = 1')",
    "().__class__.__bases__[0].__subclasses__()",
    "getattr(agent, '_channel')",
    "'{0.__class__.__mro__}'.format(agent)",
    "'{0[0]}'.format(agent.look)",
    "'{:{0.__class__}}'.format(1)",
    "template = '{0.__class__}'\ntemplate.format(1)",
    "g = (x for x in [1])\nframe = g.gi_frame",
    "agent.look.__globals__",
    "globals()['__builtins__']",
    "class Escape:\n    pass",
    "try:\n    agent.look()\nexcept:\n    pass",
    # class and mapping patterns capture attributes without an attribute node
    "match '':\n    case str(__class__=t, __doc__=d):\n        print(t, d)",
    "match agent:\n    case object(look=f):\n        print(f)",
    "match {'a': 1}:\n    case {'a': v, **rest}:\n        print(rest)",
    "name = '__class__'",                      # a dunder for a getattr-like path
    "with agent as a:\n    pass",
    "def gen():\n    yield 1",
    "try:\n    1 / 0\nexcept* ZeroDivisionError:\n    pass",
    # an exception's traceback leads to frames, and frames to globals
    "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    f = e.__traceback__.tb_frame.f_back.f_globals",
    "__import__('socket').create_connection(('example.com', 80))",
    "agent.look.__self__",
    # every binding follows the rules of a load: an `as` name once restored the real
    # built-ins (the handler deletes it on exit; the next exec fills `__builtins__` again)
    "try:\n    1 / 0\nexcept ZeroDivisionError as __builtins__:\n    pass",
    "try:\n    1 / 0\nexcept ZeroDivisionError as eval:\n    pass",
    "for __builtins__ in [0]:\n    pass",
    "if (__builtins__ := 0):\n    pass",
    "def f():\n    global __builtins__\n    __builtins__ = 0",
    "def f():\n    x = 1\n    def g():\n        nonlocal x\n        global open\n    return g",
    "def open():\n    pass",
    "def f(__builtins__=None):\n    pass",
    "def f(*, exec=None):\n    pass",
    "g = lambda compile: compile",
    "xs = [0 for __class__ in range(2)]",
    # a `return`, `break` or `continue` leaving a `finally` swallows the exception in flight
    "def f():\n    try:\n        agent.act('look')\n    finally:\n        return 1",
    "while True:\n    try:\n        agent.act('look')\n    finally:\n        break",
    "for i in range(3):\n    try:\n        agent.act('look')\n    finally:\n        if i:\n            continue",
    "for i in range(3):\n    try:\n        pass\n    finally:\n        for j in [1]:\n            pass\n        else:\n            break",
]


@pytest.mark.parametrize("code", MALICIOUS)
def test_malicious_code_is_refused_before_it_runs(code):
    assert check_code(code), code
    process = CodeProcess(GENERIC.action_names, {}, [], SandboxLimits(timeout_s=5))
    try:
        ended = process.run(code)
        assert isinstance(ended, RunEnded) and ended.error.startswith("Refused: ")
        assert process.proc is None  # the parent refused it: no process was even started
    finally:
        process.close()


def test_the_sandbox_output_reaching_a_prompt_is_capped():
    process = CodeProcess(GENERIC.action_names, {}, [], SandboxLimits(timeout_s=10))
    try:  # an 8 MB error text and a print flood: each cut with a marker, read in linear time
        started = time.monotonic()
        assert process.run("raise ValueError('x' * 8_000_000)") is None
        ended = process.next_event()
        assert ended.error.startswith("ValueError: xxx") and "more characters" in ended.error
        assert len(ended.error) < 4_200 and time.monotonic() - started < 10
        assert process.run("for i in range(100000):\n    print('y' * 100)") is None
        ended = process.next_event()
        assert len(ended.printed) < 4_200 and "more characters" in ended.printed
    finally:
        process.close()


ESCAPED_PLAN = """
import os, socket
for what, attempt in [
        ("read", lambda: open("/etc/hostname").read()),
        ("read", lambda: open("SECRET").read()),
        ("write", lambda: open("/tmp/escaped", "w").write("x")),
        ("write", lambda: open("/work/escaped", "w").write("x")),
        ("connect", lambda: socket.create_connection(("127.0.0.1", PORT), timeout=2)),
        ("fork", lambda: os.fork()),
        ("exec", lambda: os.execv("/bin/sh", ["sh"]))]:
    try:
        attempt()
        print(what, "ESCAPED")
    except OSError as exc:
        print(what, "failed", exc.errno)
print(harden_in_force)
"""


def test_a_plan_past_the_checks_still_reaches_no_file_and_no_network(tmp_path):
    """Every escape attempt of a plan that no check looked at fails."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))  # a port that would accept
    try:
        secret = tmp_path / "secret.txt"  # a file outside the view, readable by anyone
        secret.write_text("the parent's file")
        secret.chmod(0o644)
        lines = run_confined(ESCAPED_PLAN.replace("PORT", str(listener.getsockname()[1]))
                             .replace("SECRET", str(secret)))
    finally:
        listener.close()
    assert len(lines) == 8 and not any("ESCAPED" in line for line in lines), lines
    assert lines[-1] == "['not dumpable', 'no new privileges', 'seccomp']"
    assert not Path("/tmp/escaped").exists()


FORK_BOMB = """
import os, threading
children = 0
try:
    while children < 10_000:
        os.fork()
        children += 1
except OSError as exc:
    print("fork failed", exc.errno, "after", children)
try:
    threading.Thread(target=print).start()
    print("thread ESCAPED")
except (OSError, RuntimeError) as exc:
    print("thread failed")
"""


def test_a_fork_bomb_past_the_checks_starts_no_process():
    import errno

    lines = run_confined(FORK_BOMB)
    assert lines == [f"fork failed {errno.EPERM} after 0", "thread failed"], lines


# Plans the checks let through that ask for more than the limits give: each ends as the
# plan's own error (the next plan runs in the same process) or is stopped and restarted.
EXHAUSTING = [
    ("for i in range(10**18):\n    pass", "stopped"),
    ("n = 10**10**8", "stopped"),                          # a huge power: CPU, not memory
    ("x = list(range(10**12))", "MemoryError"),
    ("x = [0] * 10**11", "MemoryError"),
    ("s = 'ab'.center(10**12)", "MemoryError"),
    ("print(f'{1:{10**9}}')", "MemoryError"),             # a format width of a billion
    ("def down(n):\n    return down(n + 1)\ndown(0)", "RecursionError"),
]


def test_plans_that_exhaust_time_memory_or_the_stack_end_as_their_own_errors():
    # 512 MB: the billion-wide format fails at its first allocation, not after filling a
    # gigabyte, which under load took longer than the time cap
    process = CodeProcess(GENERIC.action_names, {}, [], SandboxLimits(timeout_s=1.5, memory_mb=512))
    try:
        for code, outcome in EXHAUSTING:
            assert check_code(code) == [], code  # past the checks: the limits must hold
            assert process.run(code) is None
            ended = process.next_event()
            assert isinstance(ended, RunEnded), code
            if outcome == "stopped":
                assert ended.killed and "without acting" in ended.error, (code, ended)
            else:
                assert ended.error.startswith(outcome) and not ended.killed, (code, ended)
        assert process.run("print('still here')") is None
        assert process.next_event().printed == "still here\n"
    finally:
        process.close()
