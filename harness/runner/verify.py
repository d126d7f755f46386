"""`lifebench verify`'s verdict on one results directory: replay it from its answers
(`lifebench.runner.replay`), compare every record (`lifebench.runner.replay_diff`), and
say it as a `Verification` (`lifebench.store.verification`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import lifebench
from lifebench.llm import answers as answers_file
from lifebench.llm.client import missed_request
from lifebench.runner.replay import Unverifiable, replay
from lifebench.runner.replay_diff import compare
from lifebench.store.results import ANSWERS_FILE
from lifebench.store.records_file import EPISODES_FILE
from lifebench.store.verification import DIFFERENCES_KEPT, Difference, Verification, sha256_of


def verify_directory(directory: Path, scratch: Path, workers: int, sample: Optional[int] = None,
                     seed: int = 0, llm_only: bool = False) -> Verification:
    """Replay `directory` into `scratch` and compare; an Unverifiable's reason as the
    verdict's when it cannot be replayed here."""
    started = time.monotonic()
    try:
        done = replay(directory, scratch, workers, sample, seed, llm_only)
    except Unverifiable as exc:
        return Verification("unverifiable" if exc.replayable else "not_replayable",
                            reason=exc.reason, lifebench=lifebench.__version__)
    streams = {key: stream for run in done.runs for key, stream in run.streams.items()}
    found = compare(directory, scratch, streams, done.streams)
    differences = [Difference(f"run {run}" + (f", stream {stream}" if stream else ""), "request",
                              "answered", f"not among the answers: {missed_request(message)}")
                   for run, stream, message in done.diverged] + found.differences
    exact_only = [d for d in differences if not d.within_tolerance]
    verdict = "differed" if exact_only else ("tolerance" if found.within_tolerance else "exact")
    chosen = sorted(done.streams) if sample is not None and done.streams is not None else None
    return Verification(
        verdict, episodes=found.episodes, exact=found.exact,
        within_tolerance=found.within_tolerance, differences=differences[:DIFFERENCES_KEPT],
        differences_total=len(exact_only) if exact_only else len(differences),
        tolerance_fields=sorted(found.tolerance_fields),
        sample={"streams": len(chosen), "of": done.streams_total, "seed": seed, "chosen": chosen}
        if chosen is not None else None, llm_only=llm_only, notes=done.notes,
        answers=answers_file.summary(directory / ANSWERS_FILE).answers,
        records_sha256=sha256_of(directory / EPISODES_FILE),
        seconds=round(time.monotonic() - started, 1), lifebench=lifebench.__version__)
