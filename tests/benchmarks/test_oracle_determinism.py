"""Every oracle plays the same actions whatever Python's hash seed: its trajectories are
the benchmark's, not the process's (Plancraft's planner broke ties by string-set order)."""

from __future__ import annotations

import json

import pytest

from conftest import read_records


def trajectories(out) -> list[list]:
    lines = [json.loads(line) for path in sorted((out / "trajectories").glob("*.jsonl"))
             for line in path.read_text().splitlines()]
    return sorted([t["instance_id"], [s.get("action") for s in t["steps"]]] for t in lines)


@pytest.mark.parametrize("benchmark,split,limit", [
    ("plancraft", "val", "60"), ("textworld", "ige-cooking", "3"), ("alfworld", "valid_unseen", "3"),
    ("scienceworld", "step18-v1", "2"),
])
def test_oracle_trajectories_do_not_depend_on_the_hash_seed(cli, tmp_path, benchmark, split, limit):
    runs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"h{hash_seed}"
        result = cli("run", "--no-progress", "--benchmark", benchmark, "--split", split,
                     "--method", "oracle", "--limit", limit, "--workers", "0", "--out", str(out),
                     env={"PYTHONHASHSEED": hash_seed})
        assert result.returncode == 0, result.stderr
        runs.append(trajectories(out))
        assert all(r["status"] == "ok" for r in read_records(out)) or benchmark == "scienceworld"
    assert runs[0] == runs[1] and len(runs[0]) == int(limit)
