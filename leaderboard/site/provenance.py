"""Where a result came from, as the site shows it: each run's manifest with its endpoint
reduced to a host name, and nothing that could be a credential.

lifebench never writes an API key (only the name of the variable holding it), but a
manifest also holds what a user typed: URLs (whose user, password and query could carry a
token) and free method arguments. So every URL becomes its host name, and the value of
every key that names a secret is replaced."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional, Sequence
from urllib.parse import urlsplit

from lifebench.store.results import ANSWERS_FILE
from lifebench.store.verification import mark_of

REDACTED = "[redacted]"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s,;\"']+")
_SECRET_KEY = re.compile(r"(^|_)(key|secret|password|passwd|token|auth|authorization|credentials?)$",
                         re.IGNORECASE)


def host_of(url: Optional[str]) -> Optional[str]:
    """The host name of a URL (with its port), or None."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname
        return f"{host}:{parts.port}" if host and parts.port else host
    except ValueError:
        return None


def _hosts_only(text: str) -> str:
    return _URL.sub(lambda m: host_of(m.group(0)) or REDACTED, text)


def sanitized(value: Any, key: str = "") -> Any:
    """`value` with every URL reduced to its host and every secret-named key's value
    replaced (`api_key_env`, the variable's name, stays)."""
    if key and _SECRET_KEY.search(key) and value not in (None, ""):
        return REDACTED
    if isinstance(value, dict):
        return {k: sanitized(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [sanitized(v) for v in value]
    if isinstance(value, str):
        return _hosts_only(value)
    return value


def spec_file(argv: list[str]) -> Optional[str]:
    """The spec file a `lifebench run` followed (its first argument ending in .toml)."""
    for arg in argv[2:] if len(argv) > 2 and argv[1] == "run" else argv:
        if isinstance(arg, str) and arg.endswith(".toml") and not arg.startswith("-"):
            return arg
    return None


def manifest_view(entry: dict[str, Any], directory: str) -> dict[str, Any]:
    """A manifest entry as the site shows it."""
    spec = entry.get("spec") if isinstance(entry.get("spec"), dict) else {}
    llm = spec.get("llm") if isinstance(spec.get("llm"), dict) else {}
    argv = [str(a) for a in entry.get("argv") or []]
    packages = entry.get("packages") if isinstance(entry.get("packages"), dict) else {}
    return sanitized({
        "directory": directory,
        "run_id": entry.get("run_id"),
        "started_utc": entry.get("started_utc"),
        "spec_file": spec_file(argv),
        "command": " ".join(["lifebench", *argv[1:]]) if argv else None,
        "model": spec.get("model"),
        "endpoint": host_of(llm.get("base_url")),
        "lifebench": packages.get("lifebench"),
        "packages": packages,
        "git_revision": entry.get("git_revision"),
        "git_dirty": entry.get("git_dirty"),
        "python": entry.get("python"),
        "platform": entry.get("platform"),
        "executor": entry.get("executor"),
        "workers": entry.get("workers"),
        "episodes_total": entry.get("episodes_total"),
        "episodes_already_done": entry.get("episodes_already_done"),
        "streams": len(entry.get("streams") or []),
        "spec": spec,
    })


def verification_marks(directories: Sequence[Path]) -> list[dict[str, Any]]:
    """Per input directory (a submission unpacked, or a results directory): whether it was
    replayed from its answers (`lifebench verify`) and what that found, with the report."""
    out = []
    for path in directories:
        folder = path if path.is_dir() else path.parent  # DIR or DIR/episodes.jsonl
        mark = mark_of(folder, ANSWERS_FILE)
        out.append(sanitized({"directory": str(path), "verdict": mark.verdict, "mark": mark.text,
                              "report": mark.report}))
    return out
