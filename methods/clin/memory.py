"""CLIN's memory: after each trial of an instance, a summariser rewrites the instance's
learnings from the trial's trace, its evaluation report and the learnings (with reports)
of the instance's last trials (CLIN ADAPT: same task, same world; nothing crosses to
another instance). Learnings are kept as the summariser wrote them: a numbered list."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional, Sequence

from lifebench.api import EpisodeOutcome, Prompt, PromptPart, Status, filled, fixed, history

from lifebench.methods.clin import prompts


@dataclass(frozen=True)
class Trial:
    learnings: str   # the summariser's numbered list after this trial
    report: str      # the evaluation report of this trial


def band(fraction: float) -> str:
    """CLIN's words for how far an attempt got (score as a fraction of the best)."""
    if fraction >= 1:
        return "the task was solved"
    if fraction >= 0.9:
        return "the agent did exceptionally well and fell only slightly short"
    if fraction >= 0.5:
        return "the agent did very well and made significant progress"
    if fraction >= 0.2:
        return "the agent did moderately well and made some critical progress"
    if fraction > 0:
        return "the agent did poorly and made some progress"
    return "the agent made no progress"


def report(outcome: EpisodeOutcome, score_range: Optional[tuple[float, float]]) -> str:
    """The evaluation report of a trial: its score on the benchmark's range (success alone
    where the score has none), how the trial ended, and CLIN's verbal band."""
    if outcome.success:
        fraction = 1.0
    elif score_range is not None:
        low, high = score_range
        fraction = max(0.0, min(1.0, (outcome.score - low) / (high - low)))
    else:
        fraction = 0.0
    parts = []
    if score_range is not None:
        parts.append(f"final score {outcome.score:g} (of {score_range[0]:g} to {score_range[1]:g})")
    parts.append("task completed" if outcome.success else "task not completed")
    if outcome.extra.get("fatal"):
        parts.append("ended by a critical mistake")
    elif outcome.status is Status.BUDGET_EXHAUSTED:
        parts.append("ran out of steps")
    return f"{', '.join(parts)}. This means: {band(fraction)}."


def trace(task_text: str, transitions: Sequence[tuple[str, str]]) -> list[PromptPart]:
    """The episode as text parts, one per line: the task and the last transition stay, the
    transitions before it are history the context window may drop (lifebench.api.prompt)."""
    lines = [f"Task: {task_text}"]
    lines += [f"Action: {action}\nObservation: {observation}" for action, observation in transitions]
    return [(fixed if i in (0, len(lines) - 1) else history)(line + ("\n" if i < len(lines) - 1 else ""))
            for i, line in enumerate(lines)]


def summary_prompt(trace_parts: Sequence[PromptPart], report_text: str,
                   previous: Sequence[Trial]) -> Prompt:
    entries = "\n".join(prompts.PREVIOUS_ENTRY.format(number=i + 1, learnings=t.learnings,
                                                      report=t.report)
                        for i, t in enumerate(previous))
    return filled(prompts.SUMMARY, "trace", trace_parts,
                  previous_note=prompts.PREVIOUS_NOTE if previous else "",
                  previous=prompts.PREVIOUS.format(entries=entries) if previous else "",
                  report=report_text)


class InstanceMemory:
    """Each instance's trials, oldest first."""

    def __init__(self) -> None:
        self.trials: dict[str, list[Trial]] = {}

    def learnings(self, instance_id: str) -> str:
        """The learnings the next trial of the instance is given ("" before any)."""
        kept = self.trials.get(instance_id)
        return kept[-1].learnings if kept else ""

    def last(self, instance_id: str, n: int) -> list[Trial]:
        return self.trials.get(instance_id, [])[-n:] if n > 0 else []

    def add(self, instance_id: str, trial: Trial) -> None:
        self.trials.setdefault(instance_id, []).append(trial)

    def state(self) -> dict[str, Any]:
        return {k: [asdict(t) for t in v] for k, v in self.trials.items()}

    def load(self, state: Optional[dict[str, Any]]) -> None:
        self.trials = {k: [Trial(**t) for t in v] for k, v in (state or {}).items()}
