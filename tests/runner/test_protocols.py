"""Methods' declared protocols (`Method.protocol`) as the runner applies them: trials and
arguments per benchmark, smoke scale, and what the user gives winning over them."""

from __future__ import annotations

import pytest

from conftest import read_records
from lifebench.api import EvaluationProtocol
from lifebench.config.run import LLMConfig, RunConfig
from lifebench.runner.streams import Refusal, expand

LLM = LLMConfig(base_url="http://127.0.0.1:9/v1")  # expand sends nothing


def streams_of(refused=None, **given):
    config = RunConfig.from_sources(None, None, model="m", llm=LLM, limit=1, **given)
    return expand(config, refused)


def test_papers_trials_without_any_flag():
    streams = streams_of(benchmarks=("scienceworld",), methods=("react", "reflexion", "step", "clin"))
    assert {s.method: s.trials for s in streams} == {"react": 1, "reflexion": 3, "step": 5, "clin": 5}
    assert {s.method: s.scored_trial for s in streams} == {"react": None, "reflexion": "first_success",
                                                           "step": "max", "clin": "max"}
    assert {s.method for s in streams if s.stop_after_success} == {"reflexion"}
    given = streams_of(benchmarks=("scienceworld",), methods=("reflexion", "step"), trials=2)
    assert {s.trials for s in given} == {2}


def test_protocol_arguments_per_benchmark_and_the_users_win(capsys):
    """InstructRAG takes its support paths from ReAct's successes where no oracle exists;
    asked for the oracle's there, the cell is refused with its reason."""
    crafter, = streams_of(benchmarks=("crafter",), methods=("instructrag",))
    assert crafter.method_config.support_paths == "agent"
    plancraft, = streams_of(benchmarks=("plancraft",), splits=("val",), methods=("instructrag",))
    assert plancraft.method_config.support_paths == "oracle"
    refused: list[Refusal] = []
    streams = streams_of(refused, benchmarks=("crafter",), methods=("instructrag", "react"),
                         method_args={"instructrag": {"support_paths": "oracle"}})
    assert [s.method for s in streams] == ["react"]
    assert [(r.method, r.benchmark) for r in refused] == [("instructrag", "crafter")]
    assert "support paths come from the oracle" in refused[0].reason
    assert "skipping instructrag on crafter:seeds-100" in capsys.readouterr().err


def test_smoke_scale_is_its_own_config():
    full, = streams_of(benchmarks=("plancraft",), splits=("val",), methods=("instructrag",))
    smoke, = streams_of(benchmarks=("plancraft",), splits=("val",), methods=("instructrag",),
                        smoke=True)
    assert (full.method_config.iterations, smoke.method_config.iterations) == (200, 1)
    assert (full.smoke, smoke.smoke) == (False, True)
    assert full.method_config_hash != smoke.method_config_hash
    react, = streams_of(benchmarks=("plancraft",), splits=("val",), methods=("react",), smoke=True)
    assert not react.smoke  # nothing to scale down: not labelled smoke


def test_runs_without_protocol_changes_keep_their_ids():
    def run_id(**given):
        return RunConfig.from_sources(None, None, benchmarks=("plancraft",), **given).identity_hash()

    assert run_id(methods=("random", "oracle")) == run_id(methods=("random", "oracle"), trials=1)
    # Reflexion's protocol makes other records than one trial would: another id
    assert run_id(methods=("reflexion",), model="m") != run_id(methods=("reflexion",), model="m",
                                                               trials=1)


@pytest.mark.parametrize("fields,fragment", [
    ({"trials": 0}, "trials must be an integer >= 1"),
    ({"trials": True}, "trials must be an integer >= 1"),
    ({"scored_trial": "best"}, "scored_trial must be one of all, max, last, first"),
    ({"method_args": [("a", 1)]}, "method_args must be a dict"),
])
def test_protocol_declarations_are_checked(fields, fragment):
    with pytest.raises(ValueError, match=fragment):
        EvaluationProtocol(**fields)


def test_grid_refuses_what_a_plain_run_rejects():
    """Without a model, a plain run of an LLM method is an error; a grid refuses the cell."""
    from lifebench.api.errors import UserError

    config = RunConfig.from_sources(None, None, benchmarks=("plancraft",), splits=("val",),
                                    methods=("random", "react"), limit=1)
    with pytest.raises(UserError, match="needs an LLM"):
        expand(config)
    refused: list[Refusal] = []
    assert [s.method for s in expand(config, refused, grid=True)] == ["random"]
    assert refused[0].line() == ("react on plancraft:val: needs an LLM: give --model NAME and "
                                 "--base-url URL")


def test_reflexion_stops_an_instance_at_its_first_success_and_resumes_past_it(cli, llm_server, tmp_path):
    """Corridors of 2, 3 and 4 cells, 2 steps a trial, an agent that always goes right: the
    first corridor is solved at trial 0 and its trials 1 and 2 are not played; the others
    fail all three. Its score is the first success's, else the last trial's; a run resumed
    after the skipped trials (its memory saved at their positions) plays on from there."""
    srv = llm_server(script=["Thought: onwards.\nAction: right"])
    out = tmp_path / "out"

    def reflexion(limit: str):
        return cli("run", "--no-progress", "--method", "reflexion", "--model", "m", "--base-url",
                   srv.url, "--cache", "off", "--workers", "0", "--out", str(out), "--benchmark",
                   "corridor", "--split", "tiny", "--max-steps", "2", "--limit", limit,
                   "--method-arg", "examples=0")

    first = reflexion("1")
    assert first.returncode == 0, first.stderr
    assert "2 trials not played (an earlier trial of their instance succeeded)" in first.stdout
    resumed = reflexion("3")
    assert resumed.returncode == 0, resumed.stderr
    records = read_records(out)
    assert [(r["instance_id"], r["trial"], r["success"]) for r in records] == \
        [("corridor-2", 0, True)] + [(f"corridor-{n}", t, False) for n in (3, 4) for t in range(3)]
    again = reflexion("3")  # every trial settled: recorded, or not to be played
    assert again.returncode == 0 and "nothing to do" in again.stdout
    from lifebench.api.reporting import aggregate_trials
    from lifebench.store.records_file import read_directory

    scored = aggregate_trials(read_directory(out), "first_success")
    assert [(r.instance_id, r.trial) for r in scored] == [("corridor-2", 0), ("corridor-3", 2),
                                                         ("corridor-4", 2)]
