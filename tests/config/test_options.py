"""One place per option: flags, spec-file keys, defaults and help come from the config's
fields, and every value is coerced and checked the same way from either source."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from lifebench.api import Budget, UserError
from lifebench.config.options import add_arguments, from_sources, options, toml_keys
from lifebench.config.run import ExecutionConfig, LLMConfig, RunConfig


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser, RunConfig)
    add_arguments(parser, ExecutionConfig)
    return parser.parse_args(list(argv))


def test_every_option_has_one_flag_or_key_and_help():
    flags = [o.flag for cls in (RunConfig, ExecutionConfig) for o in options(cls) if o.flag]
    assert len(flags) == len(set(flags))
    assert all(o.spec.help for cls in (RunConfig, ExecutionConfig) for o in options(cls))
    assert {"--llm-timeout", "--base-url", "--budget", "--no-progress"} <= set(flags)
    assert "llm_timeout" in toml_keys(RunConfig) and "max_steps" in toml_keys(RunConfig)


def test_help_shows_the_default_from_the_field():
    parser = argparse.ArgumentParser()
    add_arguments(parser, RunConfig)
    text = parser.format_help()
    assert "(default: 120.0)" in text and "(default: 1800.0)" in text


def test_flags_override_the_file_and_values_are_typed():
    file_values = {"benchmarks": ["plancraft"], "methods": ["random"], "seeds": [0, 1],
                   "max_steps": [10], "llm_timeout": 30, "trials": 2}
    args = parse("--seeds", "3,4", "--max-steps", "default,20", "--llm-retries", "1")
    config = from_sources(RunConfig, file_values, args)
    assert config.seeds == (3, 4) and config.trials == 2
    assert config.budgets == (Budget(None), Budget(20))
    assert config.llm == dataclasses.replace(LLMConfig(), timeout_s=30.0, max_retries=1)


@pytest.mark.parametrize("argv,message", [
    (["--trials", "2,3"], "--trials: expected an integer"),
    (["--limit", "1,2"], "--limit: expected an integer"),
    (["--limit", "0"], "--limit must be at least 1"),
    (["--seeds", "1,1"], "--seeds: duplicate values"),
    (["--budget", "0"], "--budget/--max-steps"),
    (["--timeout", "0"], "--timeout must be positive"),
    (["--llm-concurrency", "0"], "--llm-concurrency must be at least 1"),
    (["--cache", "maybe"], "--cache: 'maybe' is not one of rw, replay, off"),
])
def test_bad_values_name_their_flag(argv, message):
    with pytest.raises(UserError, match=message):
        from_sources(RunConfig, None, parse(*argv))


@pytest.mark.parametrize("cls,values,message", [
    (ExecutionConfig, {"out": 5}, "--out: expected text"),
    (RunConfig, {"run_id": {"x": 1}}, "--run-id: expected text"),
    (RunConfig, {"run_id": [1, 2]}, "--run-id: expected text"),
    (RunConfig, {"trials": [2, 3]}, "--trials: expected an integer"),
])
def test_bad_spec_file_values_are_refused(cls, values, message):
    with pytest.raises(UserError, match=message):
        from_sources(cls, values)


def test_the_manifest_records_the_config_as_asked():
    config = from_sources(RunConfig, {"benchmarks": "plancraft", "methods": "random",
                                      "max_steps": [5]})
    recorded = config.to_dict()
    assert recorded["budgets"] == [5] and recorded["llm"]["cache"] == "rw"
    assert "method_arg" not in recorded


def test_the_workers_default_is_the_environments_then_the_cores(monkeypatch, cli, tmp_path):
    import os

    from lifebench.config.run import WORKERS_ENV, default_workers

    monkeypatch.delenv(WORKERS_ENV, raising=False)
    assert default_workers() == max(1, os.cpu_count() or 1)
    monkeypatch.setenv(WORKERS_ENV, "3")
    assert default_workers() == 3 and from_sources(ExecutionConfig, args=parse("--workers", "1")).workers == 1
    from conftest import one_line_error

    refused = cli("run", "--benchmark", "corridor", "--split", "tiny", "--method", "random",
                  "--out", str(tmp_path / "out"), env={WORKERS_ENV: "many"})
    one_line_error(refused, f"{WORKERS_ENV}='many'", "unset it")
    assert not (tmp_path / "out").exists()
