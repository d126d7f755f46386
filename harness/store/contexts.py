"""Instance contexts in a results directory (written by its one writer, like the records).

    contexts.jsonl         one ContextRecord per build attempt, appended and fsync'd
    contexts/<key>.json    a built context: its document and the provider's artefacts

Commit order: the document file, then the line. The line is the commit point: a document
without a line is ignored, and built again. A context is identified by its key (see
`lifebench.runner.streams.ContextBuild.key`): one successful line per key is ever used,
whichever run wrote it, so a context is built once per results directory, and once for
every run that names this directory in `--context-cache`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from lifebench.api.errors import UserError
from lifebench.api.records import RoleUsage, Status
from lifebench.api.untrusted import parse_json
from lifebench.store.files import ResultsWriteError, atomic_write

CONTEXTS_FILE = "contexts.jsonl"
CONTEXTS_DIR = "contexts"
CONTEXT_SCHEMA_VERSION = 2
MAX_PAYLOAD_CHARS = 50_000_000  # a context file: a document and what its build kept


@dataclass
class ContextRecord:
    """One attempt at building one instance's context."""

    key: str
    benchmark: str
    benchmark_config_hash: str
    instance_id: str
    provider: str
    build_hash: str  # the provider config's hash without its use-time fields
    config: dict[str, Any]  # that config, every field
    model: Optional[str]
    seed: int
    status: Status
    run_id: str
    harness_version: str
    attempt: int = 0
    error: Optional[str] = None
    explore_budget: int = 0
    explore_steps: int = 0  # env steps taken, replays included
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    llm_usage: dict[str, RoleUsage] = field(default_factory=dict)
    cost_usd: Optional[float] = None
    wall_s: float = 0.0
    # Against the benchmark's ground truth, when it has one: the final document's coverage
    # ({"locations", "objects", "all"}), and (steps, coverage["all"]) at each report.
    coverage: dict[str, float] = field(default_factory=dict)
    coverage_curve: list[tuple[int, float]] = field(default_factory=list)
    # The stream whose first episode of this instance is charged the exploration (the first
    # stream of the run that built it, in the run's order); None for a context copied from
    # another directory (`reused_from`), which costs this directory nothing.
    charge_to: Optional[str] = None
    reused_from: Optional[str] = None
    schema_version: int = CONTEXT_SCHEMA_VERSION
    # schema 2: its LLM calls' request keys, in order (their answers: the results
    # directory's answers file); [] in lines of schema 1
    llm_call_keys: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.status = Status(self.status)

    @property
    def built(self) -> bool:
        return self.status is Status.OK

    def to_json(self) -> str:
        data = dataclasses.asdict(self)
        data["status"] = self.status.value
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ContextRecord":
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        values["llm_usage"] = {r: RoleUsage(**u) for r, u in (values.get("llm_usage") or {}).items()}
        values["coverage_curve"] = [tuple(p) for p in values.get("coverage_curve") or []]
        return cls(**values)


class ContextStore:
    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        self.path = self.out / CONTEXTS_FILE

    def records(self) -> dict[str, ContextRecord]:
        """The latest line of each key, a successful one winning over any failure."""
        found: dict[str, ContextRecord] = {}
        for record in read_context_records(self.out):
            if not (found.get(record.key) and found[record.key].built):
                found[record.key] = record
        return found

    def payload(self, key: str) -> Optional[dict[str, Any]]:
        """A built context's file: {"key", "document", "artefacts"}; None when absent."""
        path = self.out / CONTEXTS_DIR / f"{key}.json"
        try:
            payload = parse_json(path.read_text(), max_chars=MAX_PAYLOAD_CHARS)
            if not isinstance(payload.get("document"), str):
                raise ValueError("no document")
            return payload
        except FileNotFoundError:
            return None
        except (ValueError, AttributeError):
            raise UserError(f"instance context {path} is corrupt; delete it and its lines in "
                            f"{self.path} to build it again") from None

    def commit(self, record: ContextRecord, document: Optional[str],
               artefacts: Optional[dict[str, Any]]) -> None:
        path = self.out / CONTEXTS_DIR / f"{record.key}.json"
        try:
            if record.built:
                path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(path, json.dumps({"key": record.key, "document": document or "",
                                               "artefacts": artefacts or {}}, sort_keys=True))
            path = self.path
            with open(self.path, "a") as f:
                f.write(record.to_json() + "\n")
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise ResultsWriteError(path, exc) from None


def read_context_records(directory: str | Path) -> list[ContextRecord]:
    """Every line of a directory's contexts.jsonl ([] when it has none). A torn last line
    (a crash mid-write) is skipped; any other bad line is an error naming the file."""
    path = Path(directory) / CONTEXTS_FILE
    if not path.exists():
        return []
    lines = path.read_text().split("\n")
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(ContextRecord.from_dict(parse_json(line)))
        except (ValueError, TypeError, KeyError) as exc:
            if number == len(lines):  # no newline after it: torn by a crash
                continue
            raise UserError(f"{path} line {number} is not a context record ({exc}); fix or "
                            f"delete that line to build the context again") from None
    return out
