"""Runs of an LLM method (the test plugin's `parrot`) against the real local server:
faults, replay, secrets. Nothing is patched."""

from __future__ import annotations

from pathlib import Path


from conftest import CANARY, key_of, read_records, without_timings


def run_parrot(cli, srv, out: Path, cache: Path, *more: str, env=None):
    return cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val.small",
               "--method", "parrot", "--model", "fake-model", "--base-url", srv.url,
               "--limit", "6", "--max-steps", "4", "--workers", "2", "--out", str(out),
               "--cache-path", str(cache), "--llm-retries", "2", *more,
               env={"OPENAI_API_KEY": CANARY, **(env or {})})


def test_faults_replay_and_secrets(cli, llm_server, tmp_path):
    srv = llm_server(script=["think: what is in my inventory?", "move: from [I1] to [A1] with quantity 1"],
                   fault_rate=0.2, seed=5, faults=("429", "500", "malformed", "drop"))
    cache = tmp_path / "llm.sqlite"
    out = tmp_path / "run"
    first = run_parrot(cli, srv, out, cache)
    assert first.returncode in (0, 1), first.stderr
    records = read_records(out)
    results = [r for r in records if r["status"] in ("ok", "budget_exhausted")]
    failures = [r for r in records if r["status"] not in ("ok", "budget_exhausted")]
    assert {r["status"] for r in failures} <= {"llm_error"}
    # every episode ends once, as a result or as an llm_error after its retries
    final = {}
    for r in records:
        final[key_of(r)] = r["status"]
    assert len(final) == 6 and len(results) == len({key_of(r) for r in results})
    assert all(r["llm_calls"] == r["steps"] and r["tokens_in"] > 0 for r in results)
    assert all(r["llm_usage"]["actor"]["calls"] == r["llm_calls"] for r in results)
    # tokens per call, in order, adding up to the record's totals
    for r in results:
        calls = r["llm_call_tokens"]
        assert len(calls) == r["llm_calls"] and {c["role"] for c in calls} == {"actor"}
        assert sum(c["tokens_in"] for c in calls) == r["tokens_in"]
        assert sum(c["tokens_out"] for c in calls) == r["tokens_out"]
    assert srv.stats()["faults"] > 0

    # Replay: the same records, and no request reaches the server.
    before = srv.stats()["requests"]
    again = run_parrot(cli, srv, tmp_path / "replay", cache, "--cache", "replay")
    replayed = {key_of(r): without_timings(r) for r in read_records(tmp_path / "replay")
                if r["status"] in ("ok", "budget_exhausted")}
    original = {key_of(r): without_timings(r) for r in results}
    for key, record in original.items():
        mine = dict(replayed[key])
        assert mine.pop("llm_usage")["actor"]["cached"] == mine["llm_calls"]
        record.pop("llm_usage")
        replayed_calls, original_calls = mine.pop("llm_call_tokens"), record.pop("llm_call_tokens")
        assert all(c["cached"] for c in replayed_calls)
        assert [(c["tokens_in"], c["tokens_out"]) for c in replayed_calls] == \
            [(c["tokens_in"], c["tokens_out"]) for c in original_calls]
        for r in (mine, record):  # which attempt succeeded, what the server did: the run's history
            r.pop("attempt", None)
            r["extra"].pop("endpoint_faults", None)
        assert mine == record
    assert srv.stats()["requests"] == before, again.stderr

    # The key is nowhere: results, manifest, trajectories, cache, output.
    for path in [*out.rglob("*"), *(tmp_path / "replay").rglob("*"), cache]:
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path
    assert CANARY not in first.stdout + first.stderr + again.stdout + again.stderr


def test_a_dead_endpoint_is_llm_error_and_nothing_is_lost(cli, llm_server, tmp_path):
    srv = llm_server(script=["move: from [I1] to [A1] with quantity 1"])
    dead = "http://127.0.0.1:9/v1"  # nothing listens on port 9
    out = tmp_path / "run"
    result = cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val.small",
                 "--method", "parrot", "--model", "m", "--base-url", dead, "--limit", "2",
                 "--max-steps", "2", "--workers", "0", "--out", str(out), "--retries", "0",
                 "--llm-retries", "1", "--cache", "off")
    assert result.returncode == 1
    records = read_records(out)
    assert records and all(r["status"] == "llm_error" for r in records)
    assert "connection failed" in records[0]["error"]
    # the same command against a live llm_server continues from there
    result = cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val.small",
                 "--method", "parrot", "--model", "m", "--base-url", srv.url, "--limit", "2",
                 "--max-steps", "2", "--workers", "0", "--out", str(out), "--cache", "off")
    assert result.returncode == 0, result.stderr
    assert sum(r["status"] == "budget_exhausted" for r in read_records(out)) == 2


def test_bad_llm_options_are_one_line_errors(cli, tmp_path):
    base = ["run", "--no-progress", "--benchmark", "plancraft", "--method", "parrot",
            "--out", str(tmp_path / "o")]
    for extra, fragment in ((["--model", "m"], "--base-url"),
                            (["--model", "m", "--base-url", "localhost:8000"], "not an http"),
                            (["--model", "m", "--base-url", "http://x/v1", "--cache", "maybe"],
                             "--cache: 'maybe' is not one of rw, replay, off")):
        result = cli(*base, *extra)
        assert result.returncode == 2 and fragment in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_cache_command(cli, llm_server, tmp_path):
    srv = llm_server(script=["think: hm"])
    cache = tmp_path / "c.sqlite"
    run_parrot(cli, srv, tmp_path / "run", cache, "--llm-retries", "0")
    shown = cli("cache", "stats", "--path", str(cache))
    assert shown.returncode == 0 and " responses of 1 model(s)" in shown.stdout
    cleared = cli("cache", "clear", "--path", str(cache))
    assert cleared.returncode == 0 and "removed" in cleared.stdout
    assert "0 responses" in cli("cache", "stats", "--path", str(cache)).stdout
    missing = cli("cache", "stats", "--path", str(tmp_path / "none.sqlite"))
    assert missing.returncode == 2


def test_planner_policy_solves_plancraft_through_an_llm_method(cli, llm_server, tmp_path):
    """The server's Plancraft policy answers each observation with the planner's next
    action; a method that plays the model's answers then solves the small split."""
    srv = llm_server(policy="plancraft")
    out = tmp_path / "run"
    result = cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val.small",
                 "--method", "parrot", "--model", "planner", "--base-url", srv.url,
                 "--workers", "2", "--out", str(out), "--cache", "off")
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert len(records) == 110 and all(r["success"] for r in records)
    assert sum(r["extra"]["impossible_truth"] for r in records) == 20, "impossible tasks too"


def test_planner_policy_answers_with_tool_calls_when_offered_tools(llm_server):
    from lifebench.benchmarks.plancraft import PlancraftBenchmark
    from lifebench.config.run import LLMConfig
    from lifebench.llm.client import LLMClient

    srv = llm_server(policy="plancraft")
    client = LLMClient("planner", LLMConfig(base_url=srv.url))
    bench = PlancraftBenchmark()
    env = bench.make_env(bench.instances("val.small")[0], 0)
    obs = env.reset()
    tools = [{"type": "function", "function": {"name": "move", "parameters": {}}}]
    reply = client.chat([{"role": "user", "content": obs.text}], tools=tools)
    call = reply.tool_calls[0]
    expected = bench.oracle(env).next_action(obs)
    assert f"{call.name}: from {call.arguments['slot_from']} to {call.arguments['slot_to']} " \
           f"with quantity {call.arguments['quantity']}" == expected


def test_price_table_gives_a_cost_and_a_bad_one_is_refused(cli, llm_server, tmp_path):
    srv = llm_server(script=["think: hm"])
    prices = tmp_path / "prices.json"
    prices.write_text('{"fake-model": [1.0, 2.0]}')
    out = tmp_path / "run"
    result = run_parrot(cli, srv, out, tmp_path / "c.sqlite", "--prices", str(prices))
    assert result.returncode == 0, result.stderr
    for r in read_records(out):
        assert r["cost_usd"] == round((r["tokens_in"] * 1.0 + r["tokens_out"] * 2.0) / 1e6, 6)
    prices.write_text("[1, 2]")
    bad = run_parrot(cli, srv, tmp_path / "bad", tmp_path / "c.sqlite", "--prices", str(prices))
    assert bad.returncode == 2 and "--prices" in bad.stderr


def test_seeds_are_independent_samples_and_a_rerun_replays(cli, llm_server, tmp_path):
    """With the cache on, seed 1 is not served seed 0's answers: its requests reach the
    server (carrying its seed); re-running both seeds makes no request at all."""
    srv = llm_server(script=["think: what is in my inventory?"])
    cache = tmp_path / "llm.sqlite"
    alone = run_parrot(cli, srv, tmp_path / "seed0", cache, "--seeds", "0", "--cache", "rw")
    assert alone.returncode == 0, alone.stderr
    per_seed = srv.stats()["requests"]
    assert per_seed > 0 and {r["seed"] for r in srv.requests()} == {0}
    both = run_parrot(cli, srv, tmp_path / "both", cache, "--seeds", "0,1", "--cache", "rw")
    assert both.returncode == 0, both.stderr
    assert srv.stats()["requests"] == 2 * per_seed, "seed 1 asked the server; seed 0 replayed"
    assert sorted(r["seed"] for r in srv.requests()) == [0] * per_seed + [1] * per_seed
    again = run_parrot(cli, srv, tmp_path / "again", cache, "--seeds", "0,1", "--cache", "rw")
    assert again.returncode == 0, again.stderr
    assert srv.stats()["requests"] == 2 * per_seed, "a re-run of both seeds makes no request"
    assert all(r["llm_usage"]["actor"]["cached"] == r["llm_calls"] for r in read_records(tmp_path / "again"))
    # an endpoint that takes no seed: the field is not sent, the cache still tells seeds apart
    quiet = run_parrot(cli, srv, tmp_path / "quiet", tmp_path / "other.sqlite", "--seeds", "0,1",
                       "--no-llm-seed")
    assert quiet.returncode == 0, quiet.stderr
    assert srv.stats()["requests"] == 4 * per_seed
    assert all("seed" not in r for r in srv.requests()[-2 * per_seed:])


def test_a_methods_own_llm_seed_keeps_the_stream_seeds_independent(cli, llm_server, tmp_path):
    """`--method-arg llm_seed=7` names a seed for ReAct's requests; two stream seeds still
    send two seeds (7 mixed with each), never 7 for both."""
    from lifebench.llm.client import request_seed

    srv = llm_server(policy="scripted")
    result = cli("run", "--no-progress", "--benchmark", "corridor", "--split", "tiny", "--method",
                 "react", "--model", "m", "--base-url", srv.url, "--cache", "off", "--workers", "0",
                 "--seeds", "0,1", "--limit", "1", "--method-arg", "llm_seed=7",
                 "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert {r["seed"] for r in srv.requests()} == {request_seed(7, 0), request_seed(7, 1)}
    assert request_seed(7, 0) != request_seed(7, 1) and request_seed(None, 3) == 3
    assert request_seed(7, None) == 7
