"""What `lifebench verify` calls a difference, on hand-made records: any change of a compared
field, each call's request key, and, where the record's method declares a field not
bit-reproducible (`Method.replay_tolerance`: InstructRAG's training curves), a change within
that tolerance counted apart ("replayed within tolerance")."""

from __future__ import annotations

import dataclasses

from lifebench.api import CallTokens, EpisodeRecord, Status
from lifebench.runner.replay_diff import record_differences
from lifebench.store.verification import Verification


def record(method: str = "instructrag", **changes) -> EpisodeRecord:
    base = EpisodeRecord(run_id="r", benchmark="plancraft", split="val", instance_id="VAL0000",
                         method=method, method_config_hash="abc", model="m", seed=0, trial=0,
                         episode_index=0, budget_steps=30, steps=4, success=True, score=1.0,
                         status=Status.OK, llm_calls=2, tokens_in=100, tokens_out=10,
                         llm_call_tokens=[CallTokens("actor", 50, 5, False, key="a" * 64),
                                          CallTokens("actor", 50, 5, False, key="b" * 64)],
                         extra={"training_curves": {"title": "t", "series": {"reward": [0.5, 0.25]}}})
    return dataclasses.replace(base, **changes)


def test_every_compared_field_and_request_key_is_a_difference():
    assert record_differences(record(), record()) == []
    [flipped] = record_differences(record(), record(success=False))
    assert (flipped.field, flipped.submitted, flipped.replayed, flipped.within_tolerance) == \
        ("success", True, False, False)
    other = record(llm_call_tokens=[CallTokens("actor", 50, 5, False, key="a" * 64),
                                    CallTokens("actor", 50, 5, False, key="c" * 64)])
    [key] = record_differences(record(), other)
    assert key.field == "call 2 request key" and key.replayed == "c" * 64
    [missing] = record_differences(record(), None)
    assert missing.field == "record" and missing.replayed == "not replayed"


def test_a_declared_tolerance_counts_a_difference_within_it_apart():
    def curves(reward):
        return {"training_curves": {"title": "t", "series": {"reward": reward}}}

    [close] = record_differences(record(), record(extra=curves([0.5, 0.2500001])))
    assert close.field == "extra.training_curves" and close.within_tolerance
    [far] = record_differences(record(), record(extra=curves([0.5, 0.26])))
    assert not far.within_tolerance
    # a method that declares nothing is compared exactly
    [exact] = record_differences(record("react"), record("react", extra=curves([0.5, 0.2500001])))
    assert not exact.within_tolerance
    found = Verification("tolerance", episodes=3, exact=2, within_tolerance=1,
                         tolerance_fields=["extra.training_curves"])
    assert found.exit_code == 0 and found.mark() == "replayed within tolerance (3/3)"
    assert "within what their methods declare not bit-reproducible: extra.training_curves" \
        in found.summary_line()
