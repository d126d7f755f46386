"""The harness against a real server with a real model: the embedded endpoint (llama-cpp-
python's server with SmolLM2-135M-Instruct, `lifebench.llm.embedded`), on the tiny corridor
benchmark so that prompts stay short on 2 cores. Every assertion is on the harness's
behaviour (what it learned from the server, what it recorded, what it replays), never on the
model's words. CI installs the server (`make local`) and runs these; they are never skipped
there."""

from __future__ import annotations

import json
import os
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import read_records

pytestmark = [pytest.mark.real_model, pytest.mark.xdist_group("real_model")]

# replies capped at 48 tokens (a 135M model otherwise talks to each role's cap, 256 tokens at
# ~40 tokens/s on 2 cores): what is asserted is the harness's behaviour, not the replies
CORRIDOR = ["--benchmark", "corridor", "--split", "tiny", "--limit", "1", "--cache", "off",
            "--workers", "0", "--no-progress", "--max-tokens", "48"]


def _needs_server():
    from lifebench.llm import embedded

    if not embedded.server_installed():
        why = f"the embedded server is not installed: {embedded.INSTALL_HINT}"
        if os.environ.get("CI"):
            pytest.fail(why)  # CI installs it (make test needs `make local`): never skipped there
        pytest.skip(why)
    return embedded


def _start(n_ctx: int):
    embedded = _needs_server()
    server = embedded.ServerProcess(embedded.ServerOptions(
        embedded.embedded_weights(), embedded.EMBEDDED_MODEL, n_ctx=n_ctx))
    server.start()
    return server


@pytest.fixture(scope="module")
def served():
    server = _start(4096)
    yield server
    server.close()


def endpoint_of(out) -> dict:
    return json.loads((out / "manifest.json").read_text())["runs"][-1]["llm_endpoint"]


@pytest.fixture(scope="module")
def react_run(served, tmp_path_factory):
    """ReAct, a few steps on a real server: the run the checks below read."""
    from lifebench.testing import run_cli

    out = tmp_path_factory.mktemp("real") / "react"
    result = run_cli("run", *CORRIDOR, "--method", "react", "--model", served.options.model,
                     "--base-url", served.url, "--max-steps", "3", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def test_doctor_shows_the_window_and_the_tool_decision(served, cli, tmp_path):
    result = cli("doctor", "--model", served.options.model, "--base-url", served.url,
                 "--profile", str(tmp_path / "profile.json"))
    assert result.returncode == 0, result.stdout + result.stderr
    rows = dict((cell.strip() for cell in line.strip("| ").split(" | "))
                for line in result.stdout.splitlines() if line.startswith("| ") and "---" not in line)
    assert rows["context window"] == "4,096 tokens (/props)"
    assert rows["token counts"] == "the server's (/extras/tokenize/count)"
    # llama-cpp-python takes `tools` but its server parses no calls from this model's
    # template: the embedded model gets the text protocol
    assert rows["tool calling"].startswith("no (answered without calling the tool")
    assert json.loads((tmp_path / "profile.json").read_text())["tools"] is False


def test_react_plays_with_the_servers_own_token_counts(react_run):
    records = read_records(react_run)
    assert [r["status"] for r in records] in (["ok"], ["budget_exhausted"])
    assert records[0]["llm_calls"] >= records[0]["steps"] >= 1
    endpoint = endpoint_of(react_run)
    assert endpoint["context_window"] == 4096 and endpoint["context_window_source"] == "/props"
    assert endpoint["token_counts"]["source"] == "/extras/tokenize/count"
    assert endpoint["prompt_framing"]["source"] == "/apply-template"
    # each fitted count is the server's, or a little more: fitting is safe and not wasteful
    calls = [c for r in records for c in r["llm_call_tokens"]]
    assert calls and all(c["tokens_in"] <= c["tokens_fitted"] <= 1.1 * c["tokens_in"] for c in calls), calls


def test_how2_plays_the_text_protocol_on_the_embedded_model(served, cli, tmp_path):
    out = tmp_path / "how2"
    result = cli("run", *CORRIDOR, "--method", "how2", "--model", served.options.model,
                 "--base-url", served.url, "--max-steps", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert [r["status"] for r in read_records(out)] in (["ok"], ["budget_exhausted"])
    decision = endpoint_of(out)["tool_calling"]
    assert decision["protocol"] == "text" and decision["source"] == "probe"
    assert decision["probe"]["status"] == 200 and decision["probe"]["tokens_in"] > 0


def test_a_run_on_the_real_server_replays_exactly_offline(react_run, cli, tmp_path):
    archive = tmp_path / "react.tar.gz"
    exported = cli("export", "--submission", str(archive), str(react_run))
    assert exported.returncode == 0, exported.stderr
    verified = cli("verify", str(archive), "--workers", "0")  # nothing is sent: no server named
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "1 of 1 episodes replayed exactly" in verified.stdout, verified.stdout
    report = json.loads((tmp_path / "react.verification.json").read_text())
    assert report["verdict"] == "exact"


class _Recorder(BaseHTTPRequestHandler):
    """A loopback proxy that keeps every chat request and its answer."""

    upstream = ""
    kept: list = []

    def _forward(self, body=None):
        request = urllib.request.Request(self.upstream + self.path, data=body, method=self.command,
                                         headers={k: v for k, v in self.headers.items()
                                                  if k.lower() not in ("host", "content-length")})
        try:
            with urllib.request.urlopen(request, timeout=300) as answer:
                status, data = answer.status, answer.read()
        except urllib.error.HTTPError as error:
            status, data = error.code, error.read()
        if body is not None and self.path.endswith("/chat/completions"):
            self.kept.append((json.loads(body), self.headers.get("X-Lifebench-Role"), json.loads(data)))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._forward()

    def do_POST(self):
        self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def log_message(self, *args):
        pass


def test_a_lifelong_methods_memory_carries_across_episodes(served, cli, tmp_path):
    """Reflexion, two trials on a corridor too long for the step budget: the first trial
    fails, its reflection is asked for, kept, and given to the second trial's actor."""
    handler = type("Recorder", (_Recorder,), {"upstream": served.url.rsplit("/v1", 1)[0], "kept": []})
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        out = tmp_path / "reflexion"
        result = cli("run", *CORRIDOR, "--instances", "corridor-3", "--method", "reflexion",
                     "--trials", "2", "--max-steps", "2", "--model", served.options.model,
                     "--base-url", f"http://127.0.0.1:{proxy.server_address[1]}/v1",
                     "--out", str(out))
    finally:
        proxy.shutdown()
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert [(r["trial"], r["success"]) for r in records] == [(0, False), (1, False)]
    reflections = [(request, reply) for request, role, reply in handler.kept if role == "reflection"]
    assert reflections, [role for _, role, _ in handler.kept]
    written = reflections[0][1]["choices"][0]["message"]["content"].strip()
    first_reflection = [role for _, role, _ in handler.kept].index("reflection")
    later_actor = [request for request, role, _ in handler.kept[first_reflection + 1:] if role == "actor"]
    assert later_actor, "the second trial asked nothing"
    shown = "\n".join(str(m.get("content")) for m in later_actor[0]["messages"])
    assert written[:200] in shown
    # and it is the method's saved memory, what a resumed stream starts from
    [stream] = (out / "state").iterdir()
    saved = json.loads(max(stream.iterdir(), key=lambda p: int(p.stem)).read_text())
    assert saved["state"]["reflections"]["corridor-3"][0] == written


def test_a_prompt_over_a_small_window_is_a_context_overflow(cli, tmp_path):
    server = _start(256)  # ReAct's system prompt alone is longer
    try:
        out = tmp_path / "overflow"
        result = cli("run", *CORRIDOR, "--method", "react", "--model", server.options.model,
                     "--base-url", server.url, "--max-steps", "2", "--out", str(out))
    finally:
        server.close()
    assert result.returncode == 0, result.stderr
    assert [r["status"] for r in read_records(out)] == ["context_overflow"]


# the command `serve` runs below: it notes the URL and model it was given, then kills the
# server beside it (its parent's other child) and waits to be stopped
KILL_SIBLING = """
import os, signal, sys, time
from lifebench.testing.processes import child_pids
with open(sys.argv[3], "a") as f:
    f.write(sys.argv[1] + " " + sys.argv[2] + "\\n")
for pid in child_pids(os.getppid()) - {os.getpid()}:
    os.kill(pid, signal.SIGKILL)
time.sleep(120)
"""


def _is_server(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"lifebench.llm.embedded_app" in f.read()
    except OSError:  # it ended while we looked
        return False


def _embedded_servers() -> set[int]:
    from lifebench.testing.processes import parents

    return {pid for pids in parents().values() for pid in pids if _is_server(pid)}


def test_serve_runs_a_command_beside_it_restarts_once_and_leaves_nothing(cli, tmp_path):
    import sys

    _needs_server()
    before = _embedded_servers()
    done = cli("serve", "--n-ctx", "512", "--", sys.executable, "-c",
               "import os, sys; print(sys.argv[1:], os.environ['LIFEBENCH_MODEL']); sys.exit(3)",
               "{url}", "{model}")
    assert done.returncode == 3, done.stderr  # the command's exit code
    url = done.stderr.split(" at ")[1].split()[0]
    assert f"['{url}', 'SmolLM2-135M-Instruct'] SmolLM2-135M-Instruct" in done.stdout
    noted = tmp_path / "noted"
    killed = cli("serve", "--n-ctx", "512", "--", sys.executable, "-c", KILL_SIBLING, "{url}",
                 "{model}", str(noted))
    assert killed.returncode == 1, killed.stderr
    lines = noted.read_text().splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]  # run again, on the same port
    said = killed.stderr.splitlines()
    assert "starting it again on port" in said[1] and "it had been started 2 times" in said[2]
    assert _embedded_servers() <= before  # no server left behind


def test_serve_stops_on_sigterm_and_with_its_parent(tmp_path):
    import signal
    import subprocess
    import time

    from lifebench.testing.processes import alive, descendant_pids

    _needs_server()
    before = _embedded_servers()
    alone = subprocess.Popen([os.path.join(os.path.dirname(os.sys.executable), "lifebench"),
                              "serve", "--n-ctx", "512"], stdout=subprocess.PIPE, text=True)
    assert alone.stdout.readline().startswith("LIFEBENCH_BASE_URL=http://127.0.0.1:")
    alone.send_signal(signal.SIGTERM)
    assert alone.wait(60) == 0
    # its parent killed outright: serve hears it and stops its server
    shell = subprocess.Popen(["sh", "-c", f"{os.path.dirname(os.sys.executable)}/lifebench serve "
                              f"--n-ctx 512 & wait"], stdout=subprocess.PIPE, text=True)
    assert shell.stdout.readline().startswith("LIFEBENCH_BASE_URL=")
    tree = descendant_pids(shell.pid)
    shell.kill()
    shell.wait()
    deadline = time.monotonic() + 60
    while alive(tree) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(tree) and _embedded_servers() <= before


def test_a_run_resumes_after_the_server_dies_under_it(tmp_path):
    """`lifebench serve -- lifebench run ...` (what `make bench` does): the server killed
    after the first record; serve stops the run, starts the server again on its port and
    runs the command again, which resumes: every instance has one result, and exit 0."""
    import signal
    import subprocess
    import time

    from lifebench.testing.processes import descendant_pids

    _needs_server()
    lifebench = os.path.join(os.path.dirname(os.sys.executable), "lifebench")
    out = tmp_path / "run"
    run = [lifebench, "run", *CORRIDOR[:4], "--limit", "3", *CORRIDOR[6:], "--method", "react",
           "--max-steps", "3", "--model", "{model}", "--base-url", "{url}", "--out", str(out)]
    serving = subprocess.Popen([lifebench, "serve", "--n-ctx", "2048", "--", *run],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        records = out / "episodes.jsonl"
        deadline = time.monotonic() + 180
        while not (records.exists() and records.read_text().strip()) and time.monotonic() < deadline:
            assert serving.poll() is None, serving.stderr.read()
            time.sleep(0.2)
        servers = [pid for pid in descendant_pids(serving.pid) if _is_server(pid)]
        assert len(servers) == 1
        os.kill(servers[0], signal.SIGKILL)
        _, stderr = serving.communicate(timeout=300)
    finally:
        if serving.poll() is None:
            serving.kill()
    assert serving.returncode == 0, stderr
    assert "starting it again on port" in stderr
    results = [r["instance_id"] for r in read_records(out) if r["status"] in ("ok", "budget_exhausted")]
    assert sorted(results) == ["corridor-2", "corridor-3", "corridor-4"]
