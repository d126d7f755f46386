"""Confinement, rounds 2 and 3 (issues 50 and 61): no plan can stop the stream, and no
sandbox can reach another. Each attack of the issues is a case here (and a row of
README.md's table):

- plan code that misbehaves (acts while its functions are defined again, prints a lone
  surrogate, keeps running after a stop, writes what the protocol does not allow) ends its
  own run at most: the episode is played, the next run gets a fresh process;
- what a plan puts into prompts, trajectories and records is bounded;
- code past the language layers, run in the real confinement (`sandbox_checks.py`), sees
  no other sandbox, cannot signal it or take its descriptors, leaves no IPC object, process
  or file behind, and meets a seccomp filter that refuses pidfds, io_uring and x32 calls;
  both as root (the child runs as nobody) and as an unprivileged user (a user namespace);
- round 3: a stop caught at any depth of recursion, a worker SIGKILLed mid-plan, a child
  that stops reading its input and forges the end of a run, and locks, leases and watches
  on the files two sandboxes both see: each ends within its bound, leaves no process, or
  gets EPERM.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from conftest import read_records
from lifebench.api import RoleParams, StreamContext, TaskInfo
from lifebench.api.untrusted import encodable_value
from lifebench.config.run import LLMConfig
from lifebench.llm.client import LLMClient
from lifebench.methods.automanual import AutoManualConfig, AutoManualMethod, confine, sandbox
from lifebench.methods.automanual.api import GENERIC
from lifebench.methods.automanual.bounds import MAX_ACTION_CHARS, MAX_FEEDBACK_CHARS, MAX_RUN_CHARS
from lifebench.methods.automanual.sandbox import (ActionRequest, CodeProcess, RunEnded,
                                                  SandboxLimits, SandboxUnavailable)
from lifebench.methods.automanual.trial import PlanTrial, TrialOver
from lifebench.registry import get_benchmark
from lifebench.runner.episode import play_episode
from sandbox_checks import NOBODY, observe, run_unprivileged


def fence(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code}\n```"


def client(srv) -> LLMClient:
    return LLMClient("m", LLMConfig(base_url=srv.url, cache="off", max_retries=0))


# -- plans that misbehave: the method's failure, never the stream's

def test_a_function_that_acts_while_it_is_defined_again_fails_only_its_definition():
    """A default argument runs when the parent defines the plan's functions in a fresh
    process; if it acts, that definition fails (a helper error) and the process starts: no
    action reaches the parent while it waits for "defined"."""
    helpers = ["def first(seen=agent.act('look')):\n    return seen",
               "@agent.act\ndef second():\n    return 2",  # defined again without its decorator
               "def third(n=agent.act):\n    return 3"]
    process = CodeProcess(GENERIC.action_names, {}, helpers, SandboxLimits(timeout_s=20))
    try:
        assert process.run("print(second(), third())") is None
        assert process.next_event() == RunEnded(printed="2 3\n")
        assert process.helper_errors == ["ActionError: the agent cannot act while functions are "
                                         "being defined (a default argument or a decorator that acts)"]
    finally:
        process.close()


def test_a_lone_surrogate_leaves_the_child_as_valid_text():
    process = CodeProcess(GENERIC.action_names, {}, [], SandboxLimits(timeout_s=20))
    try:
        assert process.run("print(chr(0xD800))\nagent.act(chr(0xDFFF) + 'x')\n"
                           "raise ValueError(chr(0xD800))") is None
        request = process.next_event()
        assert request.args == ("\ufffdx",) and encodable_value(request.call)[1] == 0
        process.answer("ok")
        ended = process.next_event()
        assert ended.printed == "\ufffd\n" and ended.error.startswith("ValueError: \ufffd (line 3")
        assert not ended.killed and ended.misbehaved is None
    finally:
        process.close()


def test_a_stop_does_not_wait_for_the_plan():
    """Told to stop, the child sends the plan's end and exits: a `finally` that loops for
    ever never runs (and one that returns is refused by the checks)."""
    process = CodeProcess(GENERIC.action_names, {}, [], SandboxLimits(timeout_s=20))
    try:
        assert process.run("try:\n    agent.act('look')\nfinally:\n    while True:\n        pass") is None
        assert isinstance(process.next_event(), ActionRequest)
        assert process.stop("the episode is over") == RunEnded(stopped="the episode is over")
    finally:
        process.close()


def hostile_child(replies: str) -> str:
    """The source of a child that got past layers 1-2 and speaks the protocol as it likes:
    to each message type it writes the bytes `replies` lists for it (Python source of a
    dict; READY and ACTION are defined), none: it stays silent."""
    return (f"import json, os, sys\nREADY = {READY!r}\nACTION = {ACTION!r}\nreplies = {replies}\n"
            f"for line in sys.stdin.buffer:\n"
            f"    for data in replies.get(json.loads(line)['type'], []):\n"
            f"        os.write(1, data)\n")


READY = b'{"type": "ready"}\n'
ACTION = b'{"type": "action", "name": "act", "args": ["look"], "call": "agent.act(\'look\')"}\n'
# (name, replies, the reason recorded, how the run is driven: "define", "run" or "stop")
PROTOCOL_BREAKS = [
    ("an action while its functions are defined", '{"init": [READY], "define": [ACTION]}',
     "it sent 'action' while its functions were being defined", "define"),
    ("bytes that are not UTF-8", """{"init": [READY], "run": [b'\\xff\\xfe{"type": "finished"}\\n']}""",
     "a message that is not JSON text: not UTF-8 text (byte 0)", "run"),
    ("a lone surrogate", """{"init": [READY], "run": [
        b'{"type": "finished", "error": null, "printed": "\\\\ud800", "stopped": null}\\n']}""",
     "a message that is not valid text (a lone surrogate)", "run"),
    ("JSON nested 100,000 deep", """{"init": [READY], "run": [b"[" * 100_000 + b"\\n"]}""",
     "a message that is not JSON text: the JSON parser gave up (RecursionError)", "run"),
    ("a malformed action", """{"init": [READY], "run": [b'{"type": "action", "name": "act", "args": 7}\\n']}""",
     "a malformed or unexpected message 'action'", "run"),
    ("an action after the stop", '{"init": [READY], "run": [ACTION], "stop": [ACTION]}',
     "an action after the stop", "stop"),
    ("a message over 1 MiB", f'{{"init": [READY], "run": [b"x" * {sandbox.MAX_MESSAGE_BYTES + 2}]}}',
     f"a message over {sandbox.MAX_MESSAGE_BYTES} bytes", "run"),
]


@pytest.mark.parametrize("name,replies,reason,drive", PROTOCOL_BREAKS, ids=[c[0] for c in PROTOCOL_BREAKS])
def test_a_child_that_breaks_the_protocol_ends_only_its_run(monkeypatch, name, replies, reason, drive):
    monkeypatch.setattr(sandbox, "child_source", lambda: hostile_child(replies))
    process = CodeProcess(GENERIC.action_names, {}, ["def helper():\n    pass"] if drive == "define" else [],
                          SandboxLimits(timeout_s=20))
    try:
        ended = process.run("agent.act('look')")
        if drive != "define":
            assert ended is None
            ended = process.next_event()
        if drive == "stop":
            assert isinstance(ended, ActionRequest)
            ended = process.stop("the episode is over")
            assert ended.stopped == "the episode is over"
        assert isinstance(ended, RunEnded) and ended.killed and ended.misbehaved == reason, ended
        assert ended.error.startswith("Execution stopped: it ")
        assert process.proc is None and process.restarts == 1  # the next run starts afresh
    finally:
        process.close()


def test_a_silent_child_is_stopped_and_one_that_never_starts_is_the_machines_failure(monkeypatch):
    monkeypatch.setattr(sandbox, "child_source", lambda: hostile_child('{"init": [READY], "run": [ACTION]}'))
    process = CodeProcess(GENERIC.action_names, {}, [], SandboxLimits(timeout_s=0.3))
    try:  # it acts, then says nothing after the stop: stopped at the time cap, whatever the load
        assert process.run("agent.act('look')") is None
        assert isinstance(process.next_event(), ActionRequest)
        ended = process.stop("the episode is over")
        assert ended.killed and ended.stopped == "the episode is over" and ended.misbehaved is None
    finally:
        process.close()
    monkeypatch.setattr(sandbox, "child_source", lambda: "import sys; sys.exit(3)")
    with pytest.raises(SandboxUnavailable) as raised:
        CodeProcess(GENERIC.action_names, {}, [], SandboxLimits(timeout_s=20)).run("x = 1")
    assert str(raised.value) == "the sandbox process did not start: it ended before it was ready"

    def no_namespaces(root):
        def fail():
            raise OSError(1, "unshare")
        return fail

    monkeypatch.setattr(confine, "preexec", no_namespaces)
    with pytest.raises(SandboxUnavailable) as raised:
        CodeProcess(GENERIC.action_names, {}, [], SandboxLimits(timeout_s=20)).run("x = 1")
    assert str(raised.value) == ("the sandbox process could not start: the confinement could not "
                                 "be set up (namespaces, the view or the user): Exception "
                                 "occurred in preexec_fn.")


def test_a_misbehaving_plan_is_the_methods_failure_and_the_episode_is_played(monkeypatch, llm_server):
    """Every run's process breaks the protocol: each attempt ends, the episode is recorded
    as played (status ok, success false), the reason in its extra."""
    monkeypatch.setattr(sandbox, "child_source", lambda: hostile_child(
        """{"init": [READY], "run": [b'{"type": "finished", "printed": "\\\\udfff"}\\n']}"""))
    srv = llm_server(script=["Look.\n" + fence("agent.act('look')")])
    benchmark = get_benchmark("plancraft", None)
    instance = benchmark.instances("val.small")[0]
    method = AutoManualMethod(AutoManualConfig(test_attempts=2))
    method.setup(StreamContext(benchmark=benchmark, split="val.small", seed=0, budget=None,
                               model="m", llm=client(srv)))
    task = TaskInfo(benchmark="plancraft", split="val.small", instance=instance, seed=0, trial=0,
                    episode_index=0, budget_steps=5, instructions=benchmark.instructions)
    outcome = play_episode(benchmark, instance, method, task, timeout_s=120)
    assert outcome.status == "ok" and not outcome.success and outcome.error is None
    assert outcome.extra["automanual_misbehaved"] == \
        ["a message that is not valid text (a lone surrogate)"] * 2
    assert outcome.extra["automanual_end"] == "its 2 code attempts ended without finishing the task"


# -- bounded output

def test_action_text_and_a_runs_output_are_bounded_in_prompts(llm_server):
    """Four 450,000-character actions, a 100,000-character print and error: each action's
    text is cut at 2,000 characters, and what the run shows the next prompt at 16,000."""
    srv = llm_server(script=["Long.\n" + fence("for letter in 'abcd':\n    agent.act(letter * 450_000)\n"
                                               "print('p' * 100_000)\nraise ValueError('e' * 100_000)"),
                             "No more code."])
    trial = PlanTrial(client(srv), "planner", RoleParams(), "SYSTEM", "RULES", "", GENERIC, 2, 50,
                      SandboxLimits(timeout_s=20))
    try:
        commands = [trial.advance("start")] + [trial.advance(f"seen {n}") for n in range(3)]
        assert commands == [letter * MAX_ACTION_CHARS + " ... (448000 more characters cut)"
                            for letter in "abcd"]
        with pytest.raises(TrialOver):
            trial.advance("seen 4")
    finally:
        trial.close()
    request = srv.requests()[-1]
    feedback = request["messages"][-1]["content"]
    assert len(feedback) <= MAX_RUN_CHARS and "characters left out" in feedback
    assert feedback.startswith("What your code did (attempt 1):\nobs_1: Act: agent.act('aaa")
    assert "Execution error: ValueError: eee" in feedback and "Printed:\nppp" in feedback
    assert len(json.dumps(request)) < 2 * MAX_RUN_CHARS


# -- through the CLI: the stream goes on

def test_a_define_time_action_and_a_lone_surrogate_do_not_stop_the_stream(cli, llm_server, tmp_path):
    """The issue's runs, in one: a rule whose example's default argument acts (defined in
    every tested episode's fresh process) and a plan that prints chr(0xD800) and plays a
    5,000-character action. Every episode is played and recorded; exit 0."""
    noop = get_benchmark("plancraft").noop_action
    srv = llm_server(script=[
        {"match": r"You maintain a rule system", "replies": [fence(json.dumps([
            {"op": "write_rule", "type": "Special Phenomena/Mechanism", "rule": "Look first.",
             "example": "def look_first(seen=agent.act('look')):\n    return seen"}]), "json")]},
        {"match": r"The task failed:", "replies": ["It failed."]},
        {"match": r"You turn an agent's rules into a manual", "replies": ["no markdown"]},
        {"match": r"You have 1 code replies", "replies": ["Wait.\n" + fence(f"agent.act({noop!r})")]},
        {"match": r"You have 2 code replies", "replies": [
            "Probe.\n" + fence("print('SURROGATE', chr(0xD800))\nagent.act('x' * 5_000)")]},
    ])
    out = tmp_path / "out"
    result = cli("run", "--no-progress", "--method", "automanual", "--model", "m", "--base-url",
                 srv.url, "--cache-path", str(tmp_path / "llm-cache.sqlite"), "--workers", "0",
                 "--out", str(out), "--benchmark", "plancraft",
                 "--split", "val.small", "--limit", "3", "--method-arg", "build_tasks=1",
                 "--method-arg", "build_attempts=1", "--method-arg", "test_attempts=2",
                 timeout=600)
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert len(records) == 3 and all(r["status"] == "ok" and not r["error"] for r in records)
    assert all(r["extra"]["automanual_helper_errors"] == 1 and r["extra"]["automanual_misbehaved"] == []
               for r in records)
    prompts = [m["content"] for r in srv.requests() for m in r["messages"]]
    shown = [p for p in prompts if "SURROGATE" in p and "Printed:" in p]
    assert len(shown) == 3 and all("SURROGATE \ufffd" in p for p in shown)
    assert all(encodable_value(p)[1] == 0 for p in prompts)
    played = [json.loads(line) for path in (out / "trajectories").glob("*.jsonl")
              for line in path.read_text().splitlines()]
    actions = [s["action"] for t in played for s in t["steps"] if s.get("action")]
    assert len(actions) == 6 and all(a == "x" * MAX_ACTION_CHARS + " ... (3000 more characters cut)"
                                     for a in actions)


# -- code past the language layers, in the real confinement (one worker observes both
# paths once: its tests share a group)

OBSERVED = pytest.mark.xdist_group("sandbox-observed")


_OBSERVATIONS: dict[str, dict] = {}  # per path, once per worker: pytest re-creates a
# module-scoped parametrized fixture each time the order of tests switches its parameter


@pytest.fixture(params=["root", "unprivileged"])
def seen(request):
    """What `sandbox_checks.observe` saw, as this process (root in CI: the child runs as
    nobody) and in a process that dropped its privileges first (a user namespace)."""
    if request.param == "root" and os.getuid() != 0:
        pytest.skip("the test process is not root")
    if request.param not in _OBSERVATIONS:
        if request.param == "root":
            _OBSERVATIONS["root"] = observe()
        else:
            _OBSERVATIONS["unprivileged"] = run_unprivileged() if os.getuid() == 0 else observe()
    seen = dict(_OBSERVATIONS[request.param])
    if "unavailable" in seen:
        pytest.skip(seen["unavailable"])
    seen["path"] = request.param
    return seen


@OBSERVED
def test_the_child_runs_as_nobody_or_in_a_user_namespace(seen):
    user = "uid nobody" if seen["path"] == "root" else "a user namespace"
    assert seen["confinement"].endswith(user) and "PID, IPC, network and mount" in seen["confinement"]
    inside = seen["two_sandboxes"]["hardened"]
    assert inside["uid"] == (NOBODY if seen["path"] == "root" else 0)
    assert seen["escapes"] == {"read /etc/hostname": "ENOENT", "read a host file": "ENOENT",
                               "write /work": "EROFS", "connect": "EPERM", "socketpair": "EPERM",
                               "fork": "EPERM", "exec": "EPERM"}


@OBSERVED
def test_from_inside_one_sandbox_another_is_invisible_unsignalable_and_untouchable(seen):
    two = seen["two_sandboxes"]
    assert two["victim_pids"] == 3  # the outer process, the namespace's init, the plan's
    for mode, pidfd in (("hardened", "EPERM"), ("namespaces_only", "ESRCH")):
        inside = two[mode]
        assert inside["pid"] == 2 and inside["visible"] == [1, 2], inside  # the init, itself
        assert inside["process_group"] == 1
        assert list(inside["other"].values()) == [
            {"kill 0": "ESRCH", "SIGKILL": "ESRCH", "pidfd_open": pidfd}] * 3
    # the victim's plan ran on, unharmed
    assert two["victim_after"] == ["victim ran on: the room\n", None, False]


@OBSERVED
def test_no_dumpable_window_and_seccomp_refuses_pidfds_io_uring_and_x32(seen):
    hardened = seen["two_sandboxes"]["hardened"]
    bare = seen["two_sandboxes"]["namespaces_only"]
    assert hardened["dumpable_at_start"] == bare["dumpable_at_start"] == 0
    assert hardened["in_force"] == ["not dumpable", "no new privileges", "seccomp"]
    assert (hardened["pidfd_getfd"], hardened["io_uring_setup"], hardened["x32 getpid"]) == \
        ("EPERM", "EPERM", "EPERM")
    # what the filter adds: without it, io_uring would start, and x32 is merely absent here
    assert (bare["io_uring_setup"], bare["x32 getpid"]) == ("ok", "ENOSYS")


@OBSERVED
def test_ipc_objects_die_with_their_sandbox(seen):
    ipc = seen["ipc"]
    assert ipc["made"] == {"queue": True, "sent": True, "segment": True}  # no seccomp there
    assert ipc["left_on_host"] == [] and ipc["later_sandbox"] == "ENOENT"
    assert ipc["hardened_msgget"] == "EPERM"


@OBSERVED
def test_nothing_of_a_sandbox_remains_and_a_killed_plan_ends_only_its_run(seen):
    life = seen["lifecycle"]
    assert life["processes"] == 3 and life["left_processes"] == []
    assert life["roots"] == 2 and life["left_roots"] == []
    killed, error, misbehaved = life["killed"]
    assert killed and misbehaved is None and re.search(r"process ended .*or was killed", error)
    assert life["fresh"] == ["fresh\n", None]


# -- round 3 (issue 61): no stop survived, no orphan, no blocking write, no forged field,
# no channel between sandboxes

@OBSERVED
def test_a_plan_recursing_at_any_depth_is_gone_within_a_second_of_the_stop(seen):
    """Acting at every depth from the recursion limit down, and catching whatever the stop
    raises, it used to compute on until its 10 s timeout."""
    stop = seen["stop"]
    assert stop["slowest_s"] < 1 and stop["exited"], stop
    assert "stopped" in stop["ends"] and "other" not in stop["ends"], stop


@OBSERVED
def test_a_killed_worker_leaves_no_sandbox_process(seen):
    for plan in ("busy", "waiting"):
        killed = seen["worker_killed"][plan]
        assert killed["pids"] == 3 and killed["left"] == [], (plan, killed)


@OBSERVED
def test_a_child_that_stops_reading_ends_its_run_and_forges_no_field(seen):
    reading = seen["stops_reading"]
    # the forged end: `stopped` is the parent's to say (not stopped), the prints cut
    assert reading["forged"] == {"stopped": None, "printed": MAX_FEEDBACK_CHARS + len(
        " ... (6000 more characters cut)"), "killed": False}
    after = reading["next_run"]
    assert after["killed"] and after["left"] == [], after
    assert after["misbehaved"].startswith("it did not read its input")
    assert after["seconds"] <= reading["timeout_s"] + 5, after


@OBSERVED
def test_seccomp_refuses_locks_leases_watches_and_open_tree_attr(seen):
    hardened = seen["two_sandboxes"]["hardened"]
    bare = seen["two_sandboxes"]["namespaces_only"]
    refused = ("flock", "F_SETLK", "F_OFD_SETLK", "F_SETLEASE", "F_SETLEASE, high bits set",
               "F_NOTIFY", "inotify_init1", "fanotify_init", "open_tree_attr")
    assert {name: hardened[name] for name in refused} == dict.fromkeys(refused, "EPERM")
    assert hardened["F_GETFL"] == "ok"
    # what the filter adds: without it, a lock on the shared view is taken
    assert (bare["flock"], bare["F_SETLK"], bare["inotify_init1"]) == ("ok", "ok", "ok")
