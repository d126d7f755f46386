"""`plugin_tables` and a method's `table_peers`: the peers' records on the method's splits
reach its table makers after its own; without peers a method's tables see only its own."""

from __future__ import annotations

from typing import Sequence

import pytest

from lifebench import registry
from lifebench.api import EpisodeRecord, Method, Table, UserError
from lifebench.leaderboard.plugins import plugin_tables

SEEN: dict[str, list[tuple[str, str, str]]] = {}


def seen_by(name: str):
    def make(records: Sequence[EpisodeRecord]) -> list[Table]:
        SEEN[name] = [(r.method, r.benchmark, r.split) for r in records]
        return [Table.of(name, ["episodes"], [[len(records)]])]
    return make


class Lead(Method):
    name = "lead"
    tables = (seen_by("lead"),)
    table_peers = ("peer", "lead")  # itself: never twice

    def act(self, observation):
        return "look"


class Peer(Method):
    name = "peer"
    tables = (seen_by("peer"),)

    def act(self, observation):
        return "look"


def record(method: str, benchmark: str, split: str, instance: str = "a") -> EpisodeRecord:
    return EpisodeRecord(run_id="r", benchmark=benchmark, split=split, instance_id=instance,
                         method=method, method_config_hash="h", model="m", seed=0, trial=0,
                         episode_index=0, budget_steps=5, steps=1, success=True, score=1.0,
                         status="ok")


@pytest.fixture
def fake_methods(monkeypatch):
    classes = {"lead": Lead, "peer": Peer}

    def method_class(name: str) -> type:
        if name not in classes:
            raise UserError(f"no method {name!r}")
        return classes[name]

    monkeypatch.setattr(registry, "method_class", method_class)
    SEEN.clear()


def test_a_method_gets_its_peers_records_on_its_own_splits_after_its_own(fake_methods):
    records = [record("peer", "bench", "s1"), record("lead", "bench", "s1"),
               record("peer", "bench", "s2"),  # a split lead did not run on
               record("peer", "other", "s1"),  # the same split name, another benchmark
               record("stranger", "bench", "s1"),  # not a peer (and not installed)
               record("lead", "bench", "s1", instance="b")]
    titles = [t.title for t in plugin_tables(records)]
    assert titles == ["lead", "peer"]
    assert SEEN["lead"] == [("lead", "bench", "s1"), ("lead", "bench", "s1"),
                            ("peer", "bench", "s1")]
    # no peers declared: its own records only, as before
    assert SEEN["peer"] == [("peer", "bench", "s1"), ("peer", "bench", "s2"),
                            ("peer", "other", "s1")]


def test_peers_without_records_there_change_nothing(fake_methods):
    plugin_tables([record("lead", "bench", "s1"), record("peer", "bench", "s9")])
    assert SEEN["lead"] == [("lead", "bench", "s1")]


def test_table_peers_is_checked_when_the_class_is_made():
    assert Method.table_peers == ()
    with pytest.raises(TypeError, match="table_peers must be a tuple of names"):
        type("Bad", (Method,), {"name": "bad", "table_peers": "react",
                                "act": lambda self, o: "look"})
    with pytest.raises(TypeError, match="did you mean 'table_peers'"):
        type("Typo", (Method,), {"name": "typo", "table_peer": ("react",),
                                 "act": lambda self, o: "look"})
