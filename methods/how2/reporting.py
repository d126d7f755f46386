"""How²'s Table 1 from records: rows strategy × teacher, columns low / high task
repetition (Plancraft `val` / `val.repeated`, their curriculum orders included) × success
rate, impossible F1, average cache misses and average intervention rate, each computed
per seed and then averaged over seeds."""

from __future__ import annotations

from collections import defaultdict
from statistics import fmean

from lifebench.api import TEACHER_STYLES, EpisodeRecord, Table
from lifebench.api.stats import binary_f1
from lifebench.methods.how2.strategies import STRATEGIES

SPLIT_FAMILIES = {"val": "low", "val.curriculum": "low",
                  "val.repeated": "high", "val.repeated.curriculum": "high"}


def _impossible_f1(records: list[EpisodeRecord]) -> float:
    return binary_f1([bool(r.extra.get("impossible_predicted")) for r in records],
                     [bool(r.extra.get("impossible_truth")) for r in records])


COLUMNS = (("SR", lambda rs: fmean(r.success for r in rs)),
           ("imp. F1", _impossible_f1),
           ("avg cache miss", lambda rs: fmean(int(r.extra.get("cache_misses", 0)) for r in rs)),
           ("avg intervention", lambda rs: fmean(bool(r.extra.get("intervention")) for r in rs)))


def how2_table(records: list[EpisodeRecord]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows; empty when the records hold no How² run on Plancraft."""
    groups: dict[tuple[str, str, str | None], dict[str, dict[int, list[EpisodeRecord]]]] = \
        defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in records:
        family = SPLIT_FAMILIES.get(r.split)
        if r.method != "how2" or r.benchmark != "plancraft" or family is None or not r.is_result:
            continue
        strategy = str(r.extra.get("how2_strategy", "?"))
        teacher = "-" if strategy == "base" else str(r.extra.get("how2_teacher", "?"))
        groups[(strategy, teacher, r.model)][family][r.seed].append(r)
    if not groups:
        return [], []
    headers = ["strategy", "teacher", "model"] + [f"{family} {name}" for family in ("low", "high")
                                                  for name, _ in COLUMNS] + ["seeds"]

    def order(key: tuple[str, str, str | None]) -> tuple:
        strategy, teacher, model = key
        rank = lambda seq, x: seq.index(x) if x in seq else len(seq)  # noqa: E731
        return rank(STRATEGIES, strategy), rank(TEACHER_STYLES, teacher), teacher, model or ""

    rows = []
    for key in sorted(groups, key=order):
        strategy, teacher, model = key
        row = [strategy, teacher, model or "-"]
        seeds = set()
        for family in ("low", "high"):
            by_seed = groups[key].get(family, {})
            seeds |= set(by_seed)
            for _, metric in COLUMNS:
                row.append(f"{fmean(metric(rs) for rs in by_seed.values()):.3f}" if by_seed else "-")
        row.append(str(len(seeds)))
        rows.append(row)
    return headers, rows


def how2_tables(records: list[EpisodeRecord]) -> list[Table]:
    headers, rows = how2_table(records)
    if not rows:
        return []
    return [Table.of("How² on Plancraft (Table 1 layout; low = val, high = val.repeated; "
                     "mean over seeds)", headers, rows)]
