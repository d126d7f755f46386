"""A small real results directory for the results site's tests: `lifebench run` of random
and oracle on Plancraft val.small (3 instances, 2 seeds) and TextWorld (2 games), random on
Crafter (1 world of 50 steps: its plugin tables), and the test plugin's `faulty` method on
Plancraft with one failure a retry resolves (env_error) and one it cannot (agent_error)."""

from __future__ import annotations

from pathlib import Path

from conftest import plugin_env
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
