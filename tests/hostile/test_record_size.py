"""Every record the harness writes, it can read back: a full preparation's 68,506 calls go
aside (the record keeps its totals and points to them); a record that could not fit is
refused in one line at write time; a line written before this, over the reader's limit,
is read with its per-call list left out and a note."""

from __future__ import annotations

import dataclasses
import json

import pytest

from lifebench.api import CallTokens, EpisodeRecord, RoleUsage
from lifebench.api.untrusted import MAX_CHARS
from lifebench.store.aside import RecordTooLarge
from lifebench.store.records_file import read_directory
from lifebench.store.results import ResultsStore

CALLS = 68_506  # what InstructRAG's full preparation on ALFWorld charged to one record


def record(calls: int, **extra) -> EpisodeRecord:
    return EpisodeRecord(
        run_id="r", benchmark="alfworld", split="valid_unseen", instance_id="i0",
        method="instructrag", method_config_hash="h", model="m", seed=0, trial=0,
        episode_index=0, budget_steps=50, steps=3, success=True, score=1.0, status="ok",
        llm_calls=calls, tokens_in=1000 * calls, tokens_out=10 * calls,
        llm_usage={"train": RoleUsage(calls, 1000 * calls, 10 * calls)},
        llm_call_tokens=[CallTokens("train", 1000, 10, False, "stop", 512) for _ in range(calls)],
        extra=extra)


def test_a_preparations_calls_go_aside_and_the_record_reads_back(tmp_path):
    with ResultsStore(tmp_path) as store:
        store.open()
        store.commit("s1", record(CALLS), None, None)
    [line] = (tmp_path / "episodes.jsonl").read_text().splitlines()
    assert len(line) < MAX_CHARS
    [read] = read_directory(tmp_path)
    assert read.llm_calls == CALLS and read.llm_usage["train"].calls == CALLS  # totals kept
    assert read.llm_call_tokens == []
    assert read.extra["aside"] == {"llm_call_tokens": {"file": "aside/s1.jsonl", "count": CALLS}}
    [aside] = (tmp_path / "aside" / "s1.jsonl").read_text().splitlines()
    moved = json.loads(aside)
    assert (moved["episode_index"], len(moved["llm_call_tokens"])) == (0, CALLS)
    assert moved["llm_call_tokens"][0]["tokens_in"] == 1000


def test_a_record_that_cannot_fit_is_refused_at_write_time_in_one_line(tmp_path):
    with ResultsStore(tmp_path) as store:
        store.open()
        with pytest.raises(RecordTooLarge) as refused:
            store.commit("s1", record(1, notes="x" * (MAX_CHARS + 1)), None, None)
    message = str(refused.value)
    assert len(message.splitlines()) == 1 and "a harness bug" in message and "'notes'" in message
    assert not (tmp_path / "episodes.jsonl").read_text()  # nothing half written


def test_an_oversized_line_written_earlier_is_read_with_a_note(tmp_path, capsys):
    big = record(CALLS)
    (tmp_path / "episodes.jsonl").write_text(big.to_json() + "\n")
    [read] = read_directory(tmp_path)
    assert read.llm_calls == CALLS and read.llm_call_tokens == []
    assert "is read without its per-call token list (68,506 calls)" in capsys.readouterr().err
    small = dataclasses.replace(big, llm_call_tokens=[])
    assert dataclasses.replace(read, llm_call_tokens=[]) == small
