"""What a replay did not reproduce: every submitted record against its replayed one, field by
field and exactly (success, score, status, steps, LLM calls, tokens, explore steps, each
call's request key), the trajectories' actions where both kept them, and the instance
contexts' builds. A difference in a field the record's method declares not bit-reproducible
(`Method.replay_tolerance`), within that tolerance, is counted apart: "within tolerance"."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from lifebench import registry
from lifebench.api.records import EpisodeRecord, RecordKey
from lifebench.store.contexts import ContextRecord, read_context_records
from lifebench.store.records_file import deduplicate, read_directory
from lifebench.store.results import TRAJECTORIES_DIR
from lifebench.store.verification import Difference

RECORD_FIELDS = ("status", "success", "score", "steps", "llm_calls", "tokens_in", "tokens_out",
                 "explore_steps", "extra.training_curves")
CONTEXT_FIELDS = ("status", "llm_calls", "tokens_in", "tokens_out", "explore_steps")


@dataclass
class Comparison:
    episodes: int = 0
    exact: int = 0
    within_tolerance: int = 0
    differences: list[Difference] = field(default_factory=list)
    tolerance_fields: set[str] = field(default_factory=set)


def label(record: EpisodeRecord) -> str:
    context = f" with {record.context}" if record.context else ""
    return (f"{record.benchmark}:{record.split} {record.instance_id} trial {record.trial}, "
            f"{record.method}{context} seed {record.seed} (budget {record.budget_steps})")


def compare(submitted: Path, replayed: Path, streams: dict[RecordKey, str],
            chosen: Optional[set[str]] = None) -> Comparison:
    """Every record of `submitted` (of the `chosen` streams, when given) against `replayed`;
    `streams`: each key's stream, as the manifest's runs make them."""
    done = Comparison()
    theirs = deduplicate(read_directory(submitted))
    ours = {r.key: r for r in deduplicate(read_directory(replayed))} \
        if (replayed / "episodes.jsonl").exists() else {}
    for record in theirs:
        stream = streams.get(record.key)
        if chosen is not None and stream not in chosen:
            continue
        done.episodes += 1
        if stream is None:
            done.differences.append(Difference(label(record), "record", "recorded",
                                               "made by none of the runs its manifest records"))
            continue
        found = record_differences(record, ours.get(record.key))
        if not found:
            done.exact += 1
        elif all(d.within_tolerance for d in found):
            done.within_tolerance += 1
            done.tolerance_fields.update(d.field for d in found)
        done.differences += found
    done.differences += action_differences(submitted, replayed, chosen)
    done.differences += context_differences(submitted, replayed, set(ours) if chosen else None)
    return done


def record_differences(submitted: EpisodeRecord, replayed: Optional[EpisodeRecord]) -> list[Difference]:
    name = label(submitted)
    if replayed is None:
        return [Difference(name, "record", submitted.status.value, "not replayed")]
    tolerance = _tolerance(submitted.method)
    out = []
    for field_name in RECORD_FIELDS:
        theirs, ours = submitted.value(field_name), replayed.value(field_name)
        theirs = theirs.value if hasattr(theirs, "value") else theirs
        ours = ours.value if hasattr(ours, "value") else ours
        if theirs != ours:
            within = field_name in tolerance and _close(theirs, ours, tolerance[field_name])
            out.append(Difference(name, field_name, theirs, ours, within))
    keys = ([c.key for c in submitted.llm_call_tokens], [c.key for c in replayed.llm_call_tokens])
    if all(keys[0]) and keys[0] != keys[1] and "llm_calls" not in tolerance:
        at = next((i for i, (a, b) in enumerate(zip(*keys)) if a != b), min(map(len, keys)))
        out.append(Difference(name, f"call {at + 1} request key",
                              keys[0][at] if at < len(keys[0]) else None,
                              keys[1][at] if at < len(keys[1]) else None))
    return out


def _tolerance(method: str) -> dict[str, float]:
    try:
        return dict(registry.method_class(method).replay_tolerance)
    except Exception:  # a method not installed: its records are compared exactly
        return {}


def _close(a: Any, b: Any, relative: float) -> bool:
    """Equal but for numbers within `relative` of each other, at any depth (a training
    curve's series)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], relative) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, relative) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(a - b) <= relative * max(abs(a), abs(b), 1.0)
    return a == b


def action_differences(submitted: Path, replayed: Path,
                       chosen: Optional[set[str]]) -> list[Difference]:
    """The first differing action of each episode whose trajectory both directories kept
    (its last attempt in each)."""
    out = []
    folder = submitted / TRAJECTORIES_DIR
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        stream = path.stem
        if chosen is not None and stream not in chosen:
            continue
        theirs, ours = _last_attempts(path), _last_attempts(replayed / TRAJECTORIES_DIR / path.name)
        for index, episode in sorted(theirs.items()):
            mine = ours.get(index)
            if mine is None:
                continue  # its record says it was not replayed
            a, b = _actions(episode), _actions(mine)
            if a != b:
                at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                out.append(Difference(f"{stream} episode {index} ({episode.get('instance_id')}, "
                                      f"trial {episode.get('trial')})", f"action {at + 1}",
                                      a[at] if at < len(a) else None, b[at] if at < len(b) else None))
    return out


def _last_attempts(path: Path) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    if not path.is_file():
        return found
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
            found[int(entry["episode_index"])] = entry
        except (ValueError, KeyError, TypeError):
            continue  # a torn line: its episode was played again
    return found


def _actions(episode: dict[str, Any]) -> list[Any]:
    return [s.get("action") for s in episode.get("steps") or [] if isinstance(s, dict)]


def context_differences(submitted: Path, replayed: Path,
                        replayed_keys: Optional[set[RecordKey]]) -> list[Difference]:
    """Each instance context both built, compared (a sampled replay builds only those its
    streams are given)."""
    theirs, ours = _built(submitted), _built(replayed)
    out = []
    for key, record in sorted(theirs.items()):
        mine = ours.get(key)
        if mine is None:
            if replayed_keys is None:
                out.append(Difference(f"context {key} ({record.instance_id})", "build",
                                      record.status.value, "not replayed"))
            continue
        for name in CONTEXT_FIELDS:
            a, b = getattr(record, name), getattr(mine, name)
            if a != b:
                out.append(Difference(f"context {key} ({record.instance_id})", name,
                                      getattr(a, "value", a), getattr(b, "value", b)))
        if record.llm_call_keys and record.llm_call_keys != mine.llm_call_keys:
            out.append(Difference(f"context {key} ({record.instance_id})", "request keys",
                                  len(record.llm_call_keys), len(mine.llm_call_keys)))
    return out


def _built(directory: Path) -> dict[str, ContextRecord]:
    """The context builds a directory made itself (not copied from another), latest first."""
    found: dict[str, ContextRecord] = {}
    for record in read_context_records(directory):
        if record.reused_from is None and (record.built or record.key not in found):
            found[record.key] = record
    return found
