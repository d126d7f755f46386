"""A small real results directory for the results site's tests: `lifebench run` of random
and oracle on Plancraft val.small (3 instances, 2 seeds) and TextWorld (2 games), random on
Crafter (1 world of 50 steps: its plugin tables), and the test plugin's `faulty` method on
Plancraft with one failure a retry resolves (env_error) and one it cannot (agent_error).
And hand-made records whose streams carry training curves, valid and malformed."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from conftest import plugin_env
from lifebench.api import EpisodeRecord
from lifebench.testing import run_cli

RUNS = (
    ("--benchmark", "plancraft", "--split", "val.small", "--method", "random,oracle",
     "--limit", "3", "--seeds", "0,1"),
    ("--benchmark", "textworld", "--method", "random,oracle", "--limit", "2"),
    ("--benchmark", "crafter", "--method", "random", "--limit", "1",
     "--benchmark-arg", "crafter.length=50"),
)


def faulty_runs(markers: Path) -> tuple[tuple[str, ...], ...]:
    common = ("--benchmark", "plancraft", "--split", "val.small", "--method", "faulty",
              "--limit", "2", "--method-arg", f"marker_dir={markers}")
    return (common + ("--method-arg", "mode=raise_env", "--method-arg", "at=0"),
            common + ("--method-arg", "mode=raise_agent", "--method-arg", "at=1",
                      "--method-arg", "times=5"))


def make_results(out: Path, plugin_path: Path) -> Path:
    """Run the fixture grid into `out` (exit 1 is expected of the agent_error run)."""
    markers = out.parent / "markers"
    markers.mkdir(parents=True, exist_ok=True)
    for args in RUNS + faulty_runs(markers):
        result = run_cli("run", *args, "--workers", "0", "--no-progress", "--out", str(out),
                         env=plugin_env(plugin_path), timeout=600)
        assert result.returncode in (0, 1), result.stderr
    return out


# Training curves (`extra.training_curves`) on hand-made records of an uninstalled benchmark
# ("toy": the contract's defaults), for the site's and the figures' tests.
TRAINING = {"title": "meta-training <b>bold</b>", "x_label": "iteration",
            "series": {"reward": [0.1, 0.3, None, 0.5], "pre-training loss": [2.0, 1.5, 1.2, 1.1],
                       "</script><script>alert(1)</script>": [1, 2, 3, 4]},
            "note": "stopped at iteration 4: reward plateau (window 10)"}
MALFORMED = {  # method name -> its first record's value
    "as-text": "reward went up",
    "not-numbers": {"title": "t", "x_label": "i", "series": {"reward": [0.1, "high", {"x": 1}]}},
    "too-long": {"title": "t", "x_label": "i", "series": {"reward": [0] * 300_000}},
    "too-many": {"title": "t", "x_label": "i", "series": {f"s{i}": [1] for i in range(21)}},
}


def toy_record(method: str, seed: int, index: int, extra: Optional[dict] = None) -> EpisodeRecord:
    return EpisodeRecord(run_id="r", benchmark="toy", split="s", instance_id=f"i{index}",
                         method=method, method_config_hash="h", model="m", seed=seed, trial=0,
                         episode_index=index, budget_steps=10, steps=3, success=index % 2 == 0,
                         score=float(index % 2 == 0), status="ok", extra=extra or {})


def training_records() -> list[EpisodeRecord]:
    """`trainer` (seeds 0 and 1) with curves on its first record (a later record's are not
    its stream's), `plain` without any, and one stream per malformed value."""
    later = {"training_curves": {**TRAINING, "title": "not the first record's"}}
    records = [toy_record("trainer", 0, 0, {"training_curves": TRAINING}),
               toy_record("trainer", 0, 1, later),
               toy_record("trainer", 1, 0, {"training_curves": {**TRAINING, "note": None}}),
               toy_record("trainer", 1, 1), toy_record("plain", 0, 0), toy_record("plain", 0, 1)]
    records += [toy_record(method, 0, 0, {"training_curves": value}) for method, value in MALFORMED.items()]
    return records


def write_records(out: Path, records: list[EpisodeRecord]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "episodes.jsonl").write_text("".join(r.to_json() + "\n" for r in records))
    return out
