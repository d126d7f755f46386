"""`verification.json`: what `lifebench verify` found when it replayed a results directory or a
submission from its answers, written beside it (`DIR/verification.json`, or
`NAME.verification.json` beside `NAME.tar.gz`) for `lifebench view`.

Its verdict is one of:
    exact           every episode compared replayed exactly
    tolerance       every one replayed, some within what their methods declare not
                    bit-reproducible (`tolerance_fields` names the fields)
    differed        a record differed, or a request was not among the answers (diverged)
    not_replayable  it keeps no answers (`lifebench export --submission --no-responses`, or a
                    results directory written before answers were kept)
    unverifiable    it cannot be replayed here (a plugin missing, another version of lifebench
                    or of a plugin, a corrupt archive): `reason` says which
and, on the site, a mark (`mark`): "replayed exactly (N/N)", "replayed within tolerance
(N/N)", "replayed, M differences", "not replayable" or "not verified" (no report of these
records).
"""

from __future__ import annotations

import datetime
import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from lifebench.api.untrusted import parse_json
from lifebench.store.files import atomic_write

VERIFICATION_FILE = "verification.json"
FORMAT = "lifebench-verification"
VERSION = 1
VERDICTS = ("exact", "tolerance", "differed", "not_replayable", "unverifiable")
DIFFERENCES_KEPT = 200  # the first ones; `differences_total` counts them all
NOT_VERIFIED = "not verified"
MAX_REPORT_CHARS = 16 << 20


@dataclass(frozen=True)
class Difference:
    """One field of one record (or one request) that the replay did not reproduce."""

    record: str  # which: benchmark:split instance, trial, method, seed (or the context build)
    field: str  # success, score, steps, llm_calls, tokens_in, tokens_out, call keys, actions,
    #             ... or "request" for a request not among the answers
    submitted: Any = None
    replayed: Any = None
    within_tolerance: bool = False

    def line(self) -> str:
        if self.field == "record":
            return f"{self.record}: {_shown(self.replayed)} (submitted: {_shown(self.submitted)})"
        if self.field == "request":
            return f"{self.record}: diverged: {_shown(self.replayed)}"
        how = "within tolerance" if self.within_tolerance else "differs"
        return (f"{self.record}: {self.field} {how}: submitted {_shown(self.submitted)}, "
                f"replayed {_shown(self.replayed)}")


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 240 else text[:237] + "..."


@dataclass
class Verification:
    verdict: str
    episodes: int = 0  # records compared
    exact: int = 0  # of them, replayed exactly
    within_tolerance: int = 0  # replayed within their methods' declared tolerance
    differences: list[Difference] = field(default_factory=list)
    differences_total: int = 0
    tolerance_fields: list[str] = field(default_factory=list)
    reason: str = ""  # why it could not be verified, in one line
    sample: Optional[dict[str, Any]] = None  # {"streams", "of", "seed", "chosen"}
    llm_only: bool = False  # only its runs of a model were replayed (`--llm-only`)
    notes: list[str] = field(default_factory=list)  # e.g. another CPU's BLAS kernels
    answers: int = 0
    seconds: float = 0.0
    subject: str = ""  # the submission's name, or the directory
    subject_sha256: Optional[str] = None  # the archive's, so a report is never shown for another
    records_sha256: Optional[str] = None  # of episodes.jsonl: a report of other records is stale
    lifebench: str = ""
    verified_utc: str = field(default_factory=lambda: datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec="seconds"))

    @property
    def exit_code(self) -> int:
        return {"exact": 0, "tolerance": 0, "differed": 1}.get(self.verdict, 2)

    def summary_line(self) -> str:
        """What `lifebench verify` prints last."""
        scope = f" (a sample of {self.sample['streams']} of {self.sample['of']} streams, seed " \
                f"{self.sample['seed']})" if self.sample else ""
        scope += " (its runs of a model)" if self.llm_only else ""
        if self.verdict == "exact":
            return f"{self.exact} of {self.episodes} episodes replayed exactly{scope}"
        if self.verdict == "tolerance":
            return (f"{self.episodes} of {self.episodes} episodes replayed within tolerance "
                    f"({self.exact} exactly; {self.within_tolerance} within what their methods "
                    f"declare not bit-reproducible: {', '.join(self.tolerance_fields)}){scope}")
        if self.verdict == "differed":
            return (f"{self.exact} of {self.episodes} episodes replayed exactly; "
                    f"{self.differences_total} difference(s){scope}")
        return ("not replayable: " if self.verdict == "not_replayable" else
                "cannot verify: ") + self.reason

    def mark(self) -> str:
        if self.verdict == "exact":
            return f"replayed exactly ({self.exact}/{self.episodes})"
        if self.verdict == "tolerance":
            return f"replayed within tolerance ({self.episodes}/{self.episodes})"
        if self.verdict == "differed":
            n = self.differences_total
            return f"replayed, {n} difference{'' if n == 1 else 's'}"
        if self.verdict == "not_replayable":
            return "not replayable"
        return f"not verified ({self.reason})" if self.reason else NOT_VERIFIED

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, **asdict(self),
                "summary": self.summary_line(), "mark": self.mark()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Verification":
        if not isinstance(data, dict) or data.get("format") != FORMAT \
                or data.get("verdict") not in VERDICTS:
            raise ValueError("not a lifebench verification report")
        names = set(cls.__dataclass_fields__)
        values = {k: v for k, v in data.items() if k in names}
        values["differences"] = [Difference(**d) for d in values.get("differences") or []
                                 if isinstance(d, dict)]
        return cls(**values)


@dataclass(frozen=True)
class Mark:
    """How the site marks a results directory (or an unpacked submission)."""

    verdict: str  # a VERDICTS value, or "not_verified"
    text: str
    report: Optional[dict[str, Any]] = None


def mark_of(directory: Path, answers_file: str) -> Mark:
    """The directory's mark: its report's, where it has one of these very records; else "not
    replayable" without `answers_file`, or "not verified"."""
    found = read_report(directory / VERIFICATION_FILE)
    records = directory / "episodes.jsonl"
    if found is not None and records.is_file() and found.records_sha256 == sha256_of(records):
        return Mark(found.verdict, found.mark(), found.to_dict())
    if not (directory / answers_file).is_file():
        return Mark("not_replayable", "not replayable")
    return Mark("not_verified", NOT_VERIFIED)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def report_path(subject: str | Path) -> Path:
    """Where the report of a results directory or a submission goes."""
    subject = Path(subject)
    if subject.is_dir():
        return subject / VERIFICATION_FILE
    return subject.with_name(subject.name.split(".")[0] + "." + VERIFICATION_FILE)


def write_report(path: Path, verification: Verification) -> None:
    atomic_write(path, json.dumps(verification.to_dict(), indent=2, default=str))


def read_report(path: Path) -> Optional[Verification]:
    """A report, or None where there is none or it cannot be read as one."""
    try:
        return Verification.from_dict(parse_json(path.read_bytes(), MAX_REPORT_CHARS))
    except (OSError, ValueError, TypeError):
        return None
