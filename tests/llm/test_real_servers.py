"""What real open-model servers do, against the local server imitating each (vLLM, Ollama,
llama.cpp, OpenAI error bodies; reasoning models with and without a reasoning parser; cut
replies; context windows; refused fields). Real ReAct runs on Plancraft; nothing is patched."""

from __future__ import annotations

import json

import pytest

from conftest import one_line_error, read_records
from lifebench.llm.reasoning import split_tagged
from lifebench.llm.server_errors import (error_line, is_context_overflow, rejects_field,
                                         rejects_tools, wants_max_completion_tokens)

PLANCRAFT = ["--benchmark", "plancraft", "--split", "val.small", "--limit", "2"]


def react(cli, srv, out, *more):
    return cli("run", "--no-progress", *PLANCRAFT, "--method", "react", "--model", "qwen3",
               "--base-url", srv.url, "--cache", "off", "--workers", "0", "--out", str(out),
               "--max-steps", "6", *more)


@pytest.mark.parametrize("style", ["tags", "closing-tag", "reasoning_content", "reasoning"])
def test_reasoning_is_never_an_action_and_is_kept_beside_it(cli, llm_server, tmp_path, style):
    srv = llm_server(policy="plancraft", reasoning=style, reasoning_words=30)
    out = tmp_path / "run"
    result = react(cli, srv, out, "--max-tokens", "400")
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert len(records) == 2 and all(r["success"] for r in records)
    for r in records:  # one call per step: the reasoning never cost a format retry
        assert r["llm_calls"] == r["steps"] and r["extra"]["format_retries"] == 0
        assert all(c["reasoning_tokens"] == 30 and c["finish"] == "stop" for c in r["llm_call_tokens"])
        assert r["llm_calls_cut"] == 0
    [trajectory] = (out / "trajectories").iterdir()
    steps = [s for line in trajectory.read_text().splitlines() for s in json.loads(line)["steps"][1:]]
    assert steps and all(s["reasoning"].startswith("Let me think step by step") for s in steps)
    assert all("think" not in s["action"] for s in steps)


def test_replies_cut_at_max_tokens_are_counted_and_said(cli, llm_server, tmp_path):
    srv = llm_server(policy="plancraft", reasoning="reasoning_content", reasoning_words=30)
    out = tmp_path / "run"
    result = react(cli, srv, out, "--max-tokens", "20")
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert all(r["llm_calls_cut"] == r["llm_calls"] > 0 and not r["success"] for r in records)
    assert all(c["finish"] == "length" and c["max_tokens"] == 20
               for r in records for c in r["llm_call_tokens"])
    assert "note: 100.0% of LLM calls" in result.stdout and "cut at max_tokens=20: raise it " \
        "with --max-tokens" in result.stdout
    board = cli("leaderboard", str(out), "--no-plots")
    assert "val.small react (qwen3): 100.0% of LLM calls" in board.stdout
    # --max-tokens is part of each stream's identity: a run with another cap is new work
    again = react(cli, srv, out, "--max-tokens", "400")
    assert again.returncode == 0 and len(read_records(out)) == 4
    assert len({r["method_config_hash"] for r in read_records(out)}) == 2


@pytest.mark.parametrize("how", ["--no-trim", "no window known"])
def test_an_overflowing_prompt_ends_its_episode_once_without_retry(cli, llm_server, tmp_path, how):
    # "no window known": the server lists no model, so its window is not reported
    srv = llm_server(policy="plancraft", flavour="vllm", max_model_len=900,
                     models=("qwen3",) if how == "--no-trim" else ())
    out = tmp_path / "run"
    result = react(cli, srv, out, "--retries", "2", "--max-steps", "30",
                   *([how] if how.startswith("--") else []))
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert len(records) == 2, "never retried as an infrastructure failure"
    overflowed = [r for r in records if r["status"] == "context_overflow"]
    assert overflowed and all(not r["success"] for r in overflowed)
    assert all("maximum context length is 900 tokens" in r["error"] for r in overflowed)
    assert "ended at the model's context window (context_overflow" in result.stdout
    assert srv.stats()["requests"] == sum(r["llm_calls"] for r in records) + len(overflowed)
    board = cli("leaderboard", str(out), "--no-plots")
    assert f"{len(overflowed)} of 2 episodes ended at the model's context window" in board.stdout


def test_a_refused_seed_and_max_tokens_are_dropped_once_and_said(cli, llm_server, tmp_path):
    srv = llm_server(policy="plancraft", rejects=("seed", "max_tokens"))
    result = react(cli, srv, tmp_path / "run")
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: ")]
    assert len(notes) == 2 and "does not take `seed`" in notes[0] \
        and "takes max_completion_tokens" in notes[1]
    asked = srv.requests()
    assert sum(1 for r in asked if "seed" in r) == 1  # the one refused
    assert all("max_completion_tokens" in r for r in asked[2:])
    assert all(r["status"] == "ok" for r in read_records(tmp_path / "run"))
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())["runs"][-1]
    assert manifest["llm_endpoint"]["adapted"] == ["max_completion_tokens sent for max_tokens",
                                                   "seed not sent (the endpoint refused it)"]


def since(srv, before: int) -> list[dict]:
    """The completions the server answered after its `before`-th."""
    new = srv.stats()["requests"] - before
    return srv.requests()[-new:] if new > 0 else []


def test_a_server_without_tool_calling_stops_the_run_or_takes_them_as_text(cli, llm_server, tmp_path):
    srv = llm_server(policy="plancraft", rejects=("tools",))
    how2 = ["run", "--no-progress", *PLANCRAFT, "--method", "how2", "--model", "m",
            "--base-url", srv.url, "--cache", "off", "--workers", "0", "--max-steps", "4"]
    one_line_error(cli(*how2, "--out", str(tmp_path / "native"), "--no-probe"),
                   "does not do tool calling", "--enable-auto-tool-choice",
                   "--llm-tool-protocol text")
    text = cli(*how2, "--out", str(tmp_path / "text"), "--llm-tool-protocol", "text")
    assert text.returncode == 0, text.stderr
    asked = [r for r in srv.requests() if "tools" not in r]
    assert asked and "You can call these tools" in asked[-1]["messages"][0]["content"]
    # no protocol chosen, no profile: one probe offering a tool decides before the first
    # episode; the run uses the text protocol, says so in one line, keyed as the text run
    before = srv.stats()["requests"]
    probed = cli(*how2, "--out", str(tmp_path / "probed"))
    assert probed.returncode == 0, probed.stderr
    assert "m at " in probed.stderr and "does no tool calling (probe): methods that offer " \
        "tools use --llm-tool-protocol text" in probed.stderr
    offered = [r for r in since(srv, before) if "tools" in r]
    assert len(offered) == 1 and offered[0]["max_tokens"] == 16  # the probe, and only it
    assert {r["method_config_hash"] for r in read_records(tmp_path / "probed")} == \
        {r["method_config_hash"] for r in read_records(tmp_path / "text")}
    decision = json.loads((tmp_path / "probed" / "manifest.json").read_text())["runs"][-1][
        "llm_endpoint"]["tool_calling"]
    assert decision["protocol"] == "text" and decision["source"] == "probe"
    assert decision["probe"]["status"] == 400 and decision["probe"]["seconds"] >= 0
    # a resumed run (one more instance) reuses the recorded decision: no second probe
    before = srv.stats()["requests"]
    resumed = cli(*how2, "--limit", "3", "--out", str(tmp_path / "probed"))
    assert resumed.returncode == 0, resumed.stderr
    assert since(srv, before) and not any("tools" in r for r in since(srv, before))
    assert "an earlier run into this --out (probe)" in resumed.stderr
    # under --cache replay nothing is sent: no probe (the cache miss is the run's one line)
    before = srv.stats()["requests"]
    replay = cli(*how2, "--cache", "replay", "--cache-path", str(tmp_path / "empty.sqlite"),
                 "--out", str(tmp_path / "replay"))
    assert replay.returncode == 2 and "cache miss in replay mode" in replay.stderr
    assert srv.stats()["requests"] == before
    # with the doctor's profile of this endpoint (where `run` looks: results/ of the working
    # directory), the run falls back to the text protocol by itself, keyed as the text run
    from lifebench.testing import run_cli
    run_cli("doctor", "--model", "m", "--base-url", srv.url, cwd=tmp_path)
    assert json.loads((tmp_path / "results" / "endpoint-profile.json").read_text())["tools"] is False
    fallback = run_cli(*how2, "--out", str(tmp_path / "fallback"), cwd=tmp_path)
    assert fallback.returncode == 0, fallback.stderr
    assert "does no tool calling (results/endpoint-profile.json): methods that offer tools use " \
        "--llm-tool-protocol text" in fallback.stderr
    assert {r["method_config_hash"] for r in read_records(tmp_path / "fallback")} == \
        {r["method_config_hash"] for r in read_records(tmp_path / "text")}
    explicit = run_cli(*how2, "--out", str(tmp_path / "explicit"), "--llm-tool-protocol", "native",
                       cwd=tmp_path)  # a protocol chosen is kept
    one_line_error(explicit, "does not do tool calling")


BODIES = {
    "openai": b'{"error": {"message": "This model\'s maximum context length is 8192 tokens.",'
              b' "type": "invalid_request_error", "code": "context_length_exceeded"}}',
    "vllm": b'{"object": "error", "message": "This model\'s maximum context length is 8192 tokens.'
            b' However, you requested 9000 tokens", "type": "BadRequestError", "code": 400}',
    "ollama": b'{"error": "prompt too long; exceeded max context length by 12 tokens"}',
    "llamacpp": b'{"error": {"code": 400, "message": "the request exceeds the available context '
                b'size, try increasing it", "type": "exceed_context_size_error"}}',
    "fastapi": b'{"detail": [{"loc": ["body", "messages"], "msg": "Input is too long"}]}',
    "html": b"<html><body><h1>413 Request Entity Too Large</h1>\n<p>prompt is too long</p></body></html>",
}


def test_error_bodies_of_every_shape_are_one_readable_line():
    lines = {name: error_line(body) for name, body in BODIES.items()}
    assert lines["vllm"].startswith("This model's maximum context length is 8192")
    assert lines["ollama"] == "prompt too long; exceeded max context length by 12 tokens"
    assert lines["llamacpp"].startswith("the request exceeds the available context size")
    assert lines["fastapi"] == "Input is too long"
    assert lines["html"] == "413 Request Entity Too Large prompt is too long"
    assert all(is_context_overflow(line) for line in lines.values()), lines
    assert not is_context_overflow("Unrecognized request argument supplied: seed")
    assert rejects_field("Unrecognized request argument supplied: seed", "seed")
    assert rejects_field("extra fields not permitted: 'seed'", "seed")
    assert not rejects_field("the seed 3 was used", "seed")
    assert rejects_tools('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser')
    assert rejects_tools("registry.ollama.ai/library/gemma:2b does not support tools")
    assert wants_max_completion_tokens("Unsupported parameter: 'max_tokens' is not supported with "
                                       "this model. Use 'max_completion_tokens' instead.")
    assert not wants_max_completion_tokens("'max_tokens' or 'max_completion_tokens' is too large: 8000")


@pytest.mark.parametrize("content, reasoning, answer", [
    ("<think>\nplan it\n</think>\n\nmove: a", "plan it", "move: a"),
    ("<THINKING>x</THINKING> <reasoning>y</reasoning>act", "x\n\ny", "act"),
    ("<think>cut in the midd", "cut in the midd", ""),
    ("opened by the template</think>\nmove: b", "opened by the template", "move: b"),
    ("<|begin_of_thought|>t<|end_of_thought|>done", "t", "done"),
    ("plain answer with no tags", "", "plain answer with no tags"),
])
def test_reasoning_in_the_content_is_split_off(content, reasoning, answer):
    assert split_tagged(content) == (reasoning, answer)


def alfworld_react(cli, srv, out, *more):
    return cli("run", "--no-progress", "--benchmark", "alfworld", "--split", "valid_unseen",
               "--limit", "2", "--method", "react", "--model", "qwen3", "--base-url", srv.url,
               "--cache", "off", "--workers", "0", "--max-steps", "40", "--out", str(out), *more)


def test_long_episodes_are_played_to_their_budget_with_fitted_prompts(cli, llm_server, tmp_path):
    """An 8k model on long episodes, scaled down: a 1,000-token window reported by
    /v1/models, counted by the server's /tokenize; ReAct's turns outgrow it by step 7."""
    srv = llm_server(script=["Thought: I look around.\nAction: look"], flavour="vllm",
                     max_model_len=1000, models=("qwen3",))
    out = tmp_path / "fitted"
    result = alfworld_react(cli, srv, out)
    assert result.returncode == 0, result.stderr
    assert "qwen3 at " in result.stderr and "served, context window 1,000 tokens (/v1/models); " \
        "prompts are fitted to it" in result.stderr
    records = read_records(out)
    assert [r["status"] for r in records] == ["budget_exhausted"] * 2
    assert all(r["steps"] == r["llm_calls"] == 40 and r["llm_calls_trimmed"] > 20 for r in records)
    asked = srv.requests()
    assert all(srv_tokens(m) <= 1000 for m in asked)
    trimmed = [r["messages"] for r in asked if any("left out here to fit" in str(m["content"])
                                                   for m in r["messages"])]
    assert trimmed and srv.stats()["tokenized"] > 0
    first = asked[0]["messages"]
    for messages in trimmed:  # the system prompt, the examples and the latest observation stay
        assert messages[:3] == first[:3] and messages[0]["role"] == "system"
        assert messages[-1]["role"] == "user" and messages[-2]["content"].endswith("Action: look")
        roles = [m["role"] for m in messages[1:]]
        assert all(a != b for a, b in zip(roles, roles[1:])), roles
        assert all(set(m) == {"role", "content"} for m in messages), "no mark reaches the server"
    manifest = json.loads((out / "manifest.json").read_text())["runs"][-1]
    endpoint = manifest["llm_endpoint"]
    assert {k: endpoint[k] for k in ("model", "served", "context_window", "context_window_source")} \
        == {"model": "qwen3", "served": True, "context_window": 1000, "context_window_source": "/v1/models"}
    # what fitted the prompts, for a replay (docs/verify.md): the server's own counts
    assert endpoint["token_counts"]["source"] == "/tokenize" and endpoint["token_counts"]["texts"] > 0
    # the same with --no-trim: each episode ends at the window, once, and the run exits 0
    plain = alfworld_react(cli, srv, tmp_path / "plain", "--no-trim", "--retries", "2")
    assert plain.returncode == 0, plain.stderr
    records = read_records(tmp_path / "plain")
    assert [r["status"] for r in records] == ["context_overflow"] * 2
    assert all(r["steps"] < 40 for r in records)


def test_llama_server_is_read_in_its_own_dialect(cli, llm_server, tmp_path):
    """llama.cpp's llama-server, imitated: its window only in /props, its /tokenize taking
    `content` and answering token ids, its /apply-template rendering a template that adds a
    default system prompt, tools taken but never parsed into calls. The run learns it all
    before its first episode; each call's fitted count is at least the server's, and within
    10% of it."""
    srv = llm_server(script=["move: from [I1] to [I2] with quantity 1"], flavour="llamacpp",
                     max_model_len=2000, models=("qwen3",), tool_calls=False)
    out = tmp_path / "react"
    result = react(cli, srv, out, "--max-steps", "8")
    assert result.returncode == 0, result.stderr
    assert "context window 2,000 tokens (/props); prompts are fitted to it; tokens counted by " \
        "its /tokenize" in result.stderr
    endpoint = json.loads((out / "manifest.json").read_text())["runs"][-1]["llm_endpoint"]
    assert endpoint["context_window_source"] == "/props" and endpoint["token_counter"] == "/tokenize"
    framing = endpoint["prompt_framing"]
    assert framing["source"] == "/apply-template" and framing["without_system"] > 0
    assert endpoint["token_counts"]["source"] == "/tokenize"
    records = read_records(out)
    calls = [c for r in records for c in r["llm_call_tokens"]]
    assert len(calls) == 16 and all(r["llm_calls_trimmed"] for r in records)
    assert all(c["tokens_in"] <= c["tokens_fitted"] <= 1.1 * c["tokens_in"] for c in calls), calls
    # a prompt without a system message: the template's default one is counted too
    from lifebench.llm.server_tokens import Framing
    from lifebench.testing.fakeserver import _words, render_chatml
    alone = [{"role": "user", "content": "Craft a stick."}]
    assert Framing.from_manifest(framing).tokens(alone) + 3 >= _words(render_chatml(alone))
    # How² offers tools: the probe's reply called none, so it plays the text protocol
    how2 = cli("run", "--no-progress", *PLANCRAFT, "--limit", "1", "--method", "how2", "--model",
               "qwen3", "--base-url", srv.url, "--cache", "off", "--workers", "0", "--max-steps",
               "2", "--out", str(tmp_path / "how2"))
    assert how2.returncode == 0, how2.stderr
    decision = json.loads((tmp_path / "how2" / "manifest.json").read_text())["runs"][-1][
        "llm_endpoint"]["tool_calling"]
    assert decision["protocol"] == "text" and decision["probe"]["status"] == 200
    assert decision["probe"]["answer"].startswith("answered without calling the tool")


def srv_tokens(request: dict) -> int:
    return sum(len(str(m.get("content") or "").split()) for m in request["messages"]) + \
        (request.get("max_tokens") or 0)


def test_a_model_the_server_does_not_serve_is_one_line(cli, llm_server, tmp_path):
    srv = llm_server(policy="plancraft", models=("qwen3-8b", "llama-3.1-8b"))
    result = cli("run", "--no-progress", *PLANCRAFT, "--method", "react", "--model", "qwen3",
                 "--base-url", srv.url, "--out", str(tmp_path / "o"))
    one_line_error(result, "does not serve model 'qwen3'", "qwen3-8b, llama-3.1-8b")
    assert srv.stats()["requests"] == 0


def test_the_window_policy_keeps_fixed_parts_and_drops_the_oldest_history():
    from lifebench.api import Prompt, fixed, history, mark_history
    from lifebench.llm.window import fit_messages

    def words(text):
        return len(text.split())

    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "w " * 20}
             for i in range(9)]
    transcript = Prompt([fixed("Task: craft a bed.\n")] +
                        [history(f"step {i}: " + "x " * 20 + "\n") for i in range(6)] +
                        [fixed("Now: the latest observation.")])
    messages = [{"role": "system", "content": "rules " * 30}, {"role": "user", "content": transcript},
                {"role": "assistant", "content": "ok"}, *mark_history(turns)]
    whole = fit_messages(messages, 10_000, 100, words)
    assert whole.left_out == 0 and whole.messages[1]["content"] == str(transcript)
    fitted = fit_messages(messages, 300, 50, words)
    sent = fitted.messages
    assert fitted.left_out > 0 and fitted.tokens <= 300 - 50
    assert sent[0]["content"] == "rules " * 30 and sent[-1] == {k: v for k, v in turns[-1].items()}
    text = sent[1]["content"]  # the oldest steps go first, a marker where they were
    assert text.startswith("Task: craft a bed.\n[6 earlier items were left out here")
    assert text.endswith("Now: the latest observation.")
    roles = [m["role"] for m in sent]
    assert all(a != b for a, b in zip(roles[2:], roles[3:]))
    # nothing fits: sent as built, all history left out (the server will say it overflows)
    assert fit_messages(messages, 50, 40, words).messages[0]["content"] == "rules " * 30


def test_doctor_reports_what_the_endpoint_does_and_writes_a_profile(cli, llm_server, tmp_path):
    srv = llm_server(policy="plancraft", flavour="vllm", max_model_len=32768, models=("qwen3",),
                     reasoning="tags", rejects=("seed", "tools"))
    profile = tmp_path / "profile.json"
    result = cli("doctor", "--model", "qwen3", "--base-url", srv.url, "--profile", str(profile))
    assert result.returncode == 0, result.stderr
    rows = dict((cell.strip() for cell in line.strip("| ").split(" | "))
                for line in result.stdout.splitlines() if line.startswith("| ") and "---" not in line)
    assert rows["model served"] == "yes" and rows["context window"] == "32,768 tokens (/v1/models)"
    assert rows["tool calling"].startswith("no (") and rows["seed accepted"] == "no"
    assert rows["token counts"] == "the server's (/tokenize)"
    assert rows["reasoning output"] == "tags"
    assert rows["endpoint faults"] == "none in its probes"
    assert "advice: tool calling is off" in result.stdout
    saved = json.loads(profile.read_text())
    assert saved["format"] == "lifebench-endpoint-profile" and saved["tools"] is False
    assert saved["prefill_tokens_per_s"] > 0 and saved["decode_tokens_per_s"] > 0
    # a name it does not serve, and a dead endpoint: the table says so, exit 1
    other = cli("doctor", "--model", "llama", "--base-url", srv.url, "--profile", str(profile))
    assert other.returncode == 1 and "problem: model 'llama' is not served; the endpoint " \
        "serves: qwen3" in other.stdout
    dead = cli("doctor", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--profile",
               str(profile))
    assert dead.returncode == 1 and "| reachable        | no" in dead.stdout
    # a server failing some of its probes: counted as a run counts them, by kind
    faulty = llm_server(policy="plancraft", models=("m",), fault_rate=0.5, faults=("500",), seed=2)
    shaky = cli("doctor", "--model", "m", "--base-url", faulty.url, "--profile", str(profile))
    assert f"| endpoint faults  | {faulty.stats()['faults']} server error" in shaky.stdout, shaky.stdout


def test_the_tool_protocol_is_part_of_the_identity_of_methods_that_offer_tools():
    from lifebench.config.run import LLMConfig, RunConfig
    from lifebench.runner.streams import expand

    def hashes(protocol: str) -> dict[str, str]:
        config = RunConfig(benchmarks=("plancraft",), splits=("val.small",), methods=("react", "how2"),
                           limit=1, model="m",
                           llm=LLMConfig(base_url="http://127.0.0.1:9/v1", tool_protocol=protocol))
        return {s.method: s.method_config_hash for s in expand(config)}

    native, text = hashes("native"), hashes("text")
    assert native["react"] == text["react"], "ReAct offers no tools: the protocol changes nothing"
    assert native["how2"] != text["how2"]
