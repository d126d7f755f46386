"""`build_site`: the results site of one or more results directories, written into one
folder (`index.html`, `assets/`, `data/`)."""

from __future__ import annotations

import shutil
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import lifebench
from lifebench.api.errors import UserError
from lifebench.api.records import EpisodeRecord
from lifebench.leaderboard.grid import benchmark_grids, server_notes
from lifebench.leaderboard.headline import check_baseline
from lifebench.leaderboard.site.episodes import (MethodLabels, episode_index, failure_rows,
                                                 order_key, stream_id, stream_payloads)
from lifebench.leaderboard.site.inputs import SiteInputs, load_inputs
from lifebench.leaderboard.site.jsdata import write_script
from lifebench.leaderboard.site.provenance import manifest_view, verification_marks
from lifebench.leaderboard.site.series import figures
from lifebench.leaderboard.site.summary import (comparisons_json, further_tables, grid_json,
                                               headline_json)

ASSETS = Path(__file__).resolve().parent / "assets"
MARKER = ".lifebench-site"  # a folder holding it is a site this module may rewrite
MAX_FAILURE_ROWS = 5000


@dataclass(frozen=True)
class SiteSummary:
    output: Path
    episodes: int
    streams: int
    failures: int
    bytes: int

    @property
    def index(self) -> Path:
        return self.output / "index.html"


def _prepare(output: Path) -> None:
    """An empty folder, or a site written before (its data is replaced)."""
    try:
        if output.exists() and any(output.iterdir()) and not (output / MARKER).exists():
            raise UserError(f"{output} is not empty and holds no lifebench site; give an empty "
                            f"or new --output folder")
        for name in ("data", "assets"):
            shutil.rmtree(output / name, ignore_errors=True)
        (output / "data" / "streams").mkdir(parents=True, exist_ok=True)
        (output / MARKER).write_text("written by `lifebench view`; rewritten by the next\n")
    except OSError as exc:
        raise UserError(f"cannot write the site into {output}: {exc.strerror or exc}; give "
                        f"another --output") from None


def _streams(inputs: SiteInputs, ordered: list[EpisodeRecord]
             ) -> tuple[dict[tuple[int, str], list[EpisodeRecord]], dict[tuple[int, str], list[EpisodeRecord]]]:
    streams: dict[tuple[int, str], list[EpisodeRecord]] = {}
    for r in ordered:
        streams.setdefault((inputs.directory(r), stream_id(r)), []).append(r)
    failures: dict[tuple[int, str], list[EpisodeRecord]] = defaultdict(list)
    for f in inputs.failures:
        failures[(inputs.directory(f), stream_id(f))].append(f)
    return streams, failures


def _failures(inputs: SiteInputs, rows: dict, labels: MethodLabels) -> dict[str, Any]:
    standing = {r.key: r for r in inputs.records}
    by_status: dict[str, int] = defaultdict(int)
    for f in inputs.failures:
        by_status[f.status.value] += 1
    cells = [cell for _, cells in benchmark_grids(inputs.records) for cell in cells]
    return {"recorded": len(inputs.failures),
            "unresolved_episodes": sum(1 for r in inputs.records if not r.is_result),
            "by_status": dict(sorted(by_status.items())),
            "server_notes": server_notes(cells),
            "rows": failure_rows(inputs.failures, standing, rows, labels, MAX_FAILURE_ROWS)}


def build_site(directories: Sequence[str | Path], output: str | Path, trials: Optional[str] = None,
               metrics: Sequence[str] = ("success", "score"), correction: str = "holm",
               baseline: Optional[str] = None) -> SiteSummary:
    inputs = load_inputs(list(directories))
    check_baseline(inputs.records, baseline)
    out = Path(output)
    labels = MethodLabels(inputs.records)
    ordered = sorted(inputs.records, key=order_key)
    streams, failures = _streams(inputs, ordered)
    numbers = {key: n for n, key in enumerate(streams)}
    stream_of = {id(r): numbers[key] for key, rs in streams.items() for r in rs}
    rows = {r.key: i for i, r in enumerate(ordered)}
    summary = {
        "meta": {"directories": [str(d) for d in inputs.directories],
                 "lifebench": getattr(lifebench, "__version__", None),
                 "episodes": len(ordered), "trials": trials, "streams": len(streams)},
        "headline": headline_json(inputs, trials, baseline),
        "grid": grid_json(inputs, trials, labels),
        "comparisons": comparisons_json(inputs.records, list(metrics), correction, trials),
        "tables": further_tables(inputs.records, trials),
        "figures": figures(inputs.records, trials),
        "manifests": [{**manifest_view(m, str(inputs.directories[m["directory"]])),
                       "verification": m["directory"]} for m in inputs.manifests],
        "verifications": verification_marks(inputs.directories),
        "failures": _failures(inputs, rows, labels),
    }
    _prepare(out)
    try:
        size = write_script(out / "data" / "summary.js", "window.LB_DATA=", summary)
        size += write_script(out / "data" / "episodes.js", "LB.episodesLoaded",
                             episode_index(ordered, labels, lambda r: stream_of[id(r)]))
        for number, payload in stream_payloads(streams, failures, inputs.directories):
            size += write_script(out / "data" / "streams" / f"{number}.js", "LB.streamLoaded",
                                 {"number": number, **payload})
        shutil.copytree(ASSETS, out / "assets", ignore=shutil.ignore_patterns("index.html"))
        shutil.copyfile(ASSETS / "index.html", out / "index.html")
    except OSError as exc:
        raise UserError(f"cannot write the site into {out}: {exc.strerror or exc}; give "
                        f"another --output") from None
    return SiteSummary(out, len(ordered), len(streams), len(inputs.failures), size)
