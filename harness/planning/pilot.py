"""The pilot (`--plan --pilot N`): the first N instances of every cell played on the
endpoint planned for, each method with its protocol, as real results of the run.

Its episodes go into the run's results directory, so the full run resumes them and plays
none of them again. A method that prepares does so at smoke scale unless asked for the full
preparation (`--pilot-full-preparation`); its episodes after a smoke-scale preparation
belong to another stream (the smoke config's), so they go into a directory of their own,
`OUT/pilot-smoke-preparation`, and the full run plays those instances again after its own
preparation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from lifebench.api.errors import UserError
from lifebench.api.records import EpisodeRecord
from lifebench.config.run import ExecutionConfig, RunConfig
from lifebench.runner.run import execute, results_dir
from lifebench.runner.streams import expand
from lifebench.store.contexts import ContextRecord, read_context_records
from lifebench.store.records_file import EPISODES_FILE, read_records_file

SMOKE_DIRECTORY = "pilot-smoke-preparation"


@dataclass(frozen=True)
class PilotOptions:
    instances: int
    full_preparation: bool = False
    tool_decision: Optional[dict[str, Any]] = None  # how the run's tool protocol was decided


@dataclass
class PilotRun:
    """What the pilot played and what it cost."""

    records: list[EpisodeRecord]  # every attempt it wrote, in both directories
    builds: list[ContextRecord]  # the instance contexts it built (every attempt)
    elapsed_s: float
    in_flight: int  # episodes played at once: workers x concurrency
    endpoint: str
    smoke_methods: tuple[str, ...]  # prepared at smoke scale (their episodes apart)
    smoke_directory: Optional[Path]

    def smoke_records(self) -> list[EpisodeRecord]:
        """Every record in the smoke-preparation directory (an earlier pilot's included)."""
        path = self.smoke_directory / EPISODES_FILE if self.smoke_directory else None
        return read_records_file(path).records if path is not None and path.is_file() else []

    def cost(self) -> dict[str, Any]:
        spent = [*self.records, *self.builds]
        return {"episodes": sum(r.is_result for r in self.records), "attempts": len(self.records),
                "context_builds": len(self.builds), "calls": sum(r.llm_calls for r in spent),
                "tokens_in": sum(r.tokens_in for r in spent),
                "tokens_out": sum(r.tokens_out for r in spent),
                "elapsed_s": round(self.elapsed_s, 2), "in_flight": self.in_flight,
                "endpoint": self.endpoint, "smoke_methods": list(self.smoke_methods),
                "smoke_directory": str(self.smoke_directory) if self.smoke_directory else None}


def check_pilot(config: RunConfig, instances: Optional[int], full_preparation: bool,
                planning: bool) -> None:
    """One line for a pilot that cannot be played as asked."""
    if instances is None:
        if full_preparation:
            raise UserError("--pilot-full-preparation applies to a pilot: give --plan --pilot N")
        return
    if not planning:
        raise UserError("--pilot N is part of a plan: give --plan --pilot N")
    if instances < 1:
        raise UserError(f"--pilot {instances}: give the number of instances to play per "
                        f"cell, 1 or more (2 or more for an interval)")
    if not (config.model and config.llm.base_url):
        raise UserError("--pilot plays episodes on the endpoint planned for: give --model NAME "
                        "and --base-url URL")


def run_pilot(config: RunConfig, execution: ExecutionConfig, grid: bool,
              options: PilotOptions) -> PilotRun:
    """Play the pilot into the run's results directory (and the smoke-preparation one)."""
    out = results_dir(config, execution)
    limit = min(options.instances, config.limit) if config.limit else options.instances
    # The full run's id, so the pilot's records read as the run's own.
    pilot = dataclasses.replace(config, limit=limit, run_id=config.resolved_run_id)
    smoke = () if options.full_preparation or config.smoke else _smoke_methods(config)
    started = time.monotonic()
    records: list[EpisodeRecord] = []
    builds: list[ContextRecord] = []
    plain = tuple(m for m in config.methods if m not in smoke)
    if plain:
        _played(dataclasses.replace(pilot, methods=plain), execution, out, grid,
                options.tool_decision, records, builds)
    apart = out / SMOKE_DIRECTORY if smoke else None
    if apart is not None:
        small = dataclasses.replace(pilot, methods=smoke, smoke=True, run_id=None)
        _played(small, dataclasses.replace(execution, out=str(apart)), apart, grid,
                options.tool_decision, records, builds)
    return PilotRun(records, builds, time.monotonic() - started,
                    max(execution.workers, 1) * max(execution.concurrency, 1),
                    str(config.llm.base_url), smoke, apart)


def _smoke_methods(config: RunConfig) -> tuple[str, ...]:
    """The methods whose smoke config differs from the full one on one of the benchmarks."""
    return tuple(m for m in config.methods
                 if any(config.protocol(m, b).smoke_args for b in config.benchmarks))


def _played(config: RunConfig, execution: ExecutionConfig, out: Path, grid: bool,
            tool_decision: Optional[dict[str, Any]], records: list[EpisodeRecord],
            builds: list[ContextRecord]) -> None:
    """Run `config` into `out`, adding the records and context builds it wrote to those
    given (none for a part whose cells are all refused: the plan says why)."""
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            expand(config, None, grid)
        except UserError:
            return
    path = out / EPISODES_FILE
    before = len(read_records_file(path).records) if path.is_file() else 0
    built = len(read_context_records(out))
    execute(config, execution, grid, tool_decision)
    records += read_records_file(path).records[before:] if path.is_file() else []
    builds += read_context_records(out)[built:]
