"""How²'s appendix tables and figures, as tables from the same records as Table 1 (the
Table 1 setting's order: curriculum when any records ran in it), each followed by the
paper's own numbers where it prints them (Llama 3.3 70B):

- Table 8: tokens per episode (every role, the LLM teacher included), low / high;
- Table 9: success and the error rates over the solvable examples (the paper's SR):
  impossible errors (declared impossible, but solvable), max-steps errors (unsolved when
  the step budget ran out) and eager-crafting errors (unsolved, having crafted an item the
  dataset's optimal plan does not make: the record's `extra.off_plan_crafted`); and the
  success rate over every example beside, labelled;
- Table 10: success over the solvable examples, overall and by the example's complexity
  (easy, medium, hard; the record's `extra.complexity`, from Plancraft's dataset); and
  over every example beside, labelled;
- Figure 4: Just Ask's success (solvable examples) by when the memory was first read
  (environment steps before it: 0, 1, 2, 3 or more, never), per teacher;
- Figures 5 and 9: success (solvable examples, and their count) per number of cache misses
  and cache hits in an episode, per strategy and teacher.

Not computed: Table 8's action efficiency (the paper defines it only by reference to
Plancraft's paper, not here); the column is left out and the note says so.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import fmean
from typing import Callable, Optional, Sequence

from lifebench.api import TEACHER_STYLES, EpisodeRecord, Status, Table
from lifebench.methods.how2.reporting import (FAMILIES, PAPER_SETTING, SR_NOTE,
                                              TABLE1_STRATEGIES, _groups, _rank, _table1_order,
                                              solvable)
from lifebench.methods.how2.strategies import STRATEGIES

COMPLEXITIES = ("easy", "medium", "hard")
FIRST_READ = ("0", "1", "2", "3+", "never")
COUNT_BUCKETS = ("0", "1", "2+")

# (strategy, teacher) -> low tokens, high tokens (k per episode)  [Table 8]
PAPER_TABLE8 = {
    ("base", "-"): (20.0, 19.3),
    ("just-ask", "executable"): (38.6, 37.2), ("just-ask", "partially-executable"): (38.3, 38.4),
    ("just-ask", "subgoal-partially-executable"): (37.1, 37.6), ("just-ask", "non-executable"): (46.0, 43.2),
    ("memory-only", "executable"): (32.2, 22.6), ("memory-only", "partially-executable"): (31.4, 23.2),
    ("memory-only", "subgoal-partially-executable"): (30.8, 22.7),
    ("memory-only", "non-executable"): (38.7, 28.1),
    ("parse", "executable"): (33.0, 24.0), ("parse", "partially-executable"): (33.2, 24.2),
    ("parse", "subgoal-partially-executable"): (31.2, 24.1), ("parse", "non-executable"): (33.8, 24.8),
    ("relevance", "executable"): (39.7, 43.3), ("relevance", "partially-executable"): (40.0, 42.8),
    ("relevance", "subgoal-partially-executable"): (36.8, 38.0), ("relevance", "non-executable"): (44.8, 41.9),
    ("how2", "executable"): (41.4, 38.4), ("how2", "partially-executable"): (41.9, 37.4),
    ("how2", "subgoal-partially-executable"): (39.7, 37.6), ("how2", "non-executable"): (40.2, 38.9),
}
# (strategy, teacher) -> low impossible, max-steps, eager crafting error; then high  [Table 9]
PAPER_TABLE9 = {
    ("base", "-"): (0.56, 0.01, 0.09, 0.54, 0.02, 0.10),
    ("just-ask", "executable"): (0.04, 0.21, 0.10, 0.04, 0.21, 0.10),
    ("just-ask", "partially-executable"): (0.05, 0.23, 0.10, 0.05, 0.24, 0.11),
    ("just-ask", "subgoal-partially-executable"): (0.04, 0.22, 0.09, 0.04, 0.23, 0.09),
    ("just-ask", "non-executable"): (0.04, 0.30, 0.08, 0.05, 0.28, 0.07),
    ("memory-only", "executable"): (0.21, 0.17, 0.10, 0.42, 0.07, 0.07),
    ("memory-only", "partially-executable"): (0.17, 0.16, 0.10, 0.34, 0.08, 0.07),
    ("memory-only", "subgoal-partially-executable"): (0.16, 0.16, 0.09, 0.31, 0.06, 0.08),
    ("memory-only", "non-executable"): (0.16, 0.22, 0.08, 0.32, 0.11, 0.06),
    ("parse", "executable"): (0.18, 0.18, 0.08, 0.33, 0.09, 0.06),
    ("parse", "partially-executable"): (0.17, 0.18, 0.09, 0.33, 0.08, 0.06),
    ("parse", "subgoal-partially-executable"): (0.16, 0.16, 0.08, 0.33, 0.08, 0.06),
    ("parse", "non-executable"): (0.18, 0.18, 0.07, 0.31, 0.08, 0.05),
    ("relevance", "executable"): (0.05, 0.20, 0.10, 0.05, 0.20, 0.10),
    ("relevance", "partially-executable"): (0.06, 0.23, 0.11, 0.08, 0.24, 0.10),
    ("relevance", "subgoal-partially-executable"): (0.07, 0.20, 0.09, 0.12, 0.20, 0.08),
    ("relevance", "non-executable"): (0.08, 0.29, 0.08, 0.13, 0.24, 0.07),
    ("how2", "executable"): (0.09, 0.23, 0.08, 0.17, 0.18, 0.06),
    ("how2", "partially-executable"): (0.09, 0.24, 0.09, 0.18, 0.17, 0.07),
    ("how2", "subgoal-partially-executable"): (0.08, 0.23, 0.08, 0.16, 0.17, 0.08),
    ("how2", "non-executable"): (0.09, 0.22, 0.08, 0.15, 0.20, 0.05),
}
# (strategy, teacher) -> low easy, medium, hard; high easy, medium, hard  [Table 10]
PAPER_TABLE10 = {
    ("base", "-"): (0.35, 0.23, 0.00, 0.32, 0.34, 0.00),
    ("just-ask", "executable"): (0.86, 0.70, 0.20, 0.85, 0.75, 0.16),
    ("just-ask", "partially-executable"): (0.87, 0.59, 0.13, 0.82, 0.69, 0.09),
    ("just-ask", "subgoal-partially-executable"): (0.87, 0.62, 0.18, 0.83, 0.76, 0.11),
    ("just-ask", "non-executable"): (0.84, 0.51, 0.09, 0.85, 0.60, 0.07),
    ("memory-only", "executable"): (0.71, 0.42, 0.09, 0.50, 0.46, 0.03),
    ("memory-only", "partially-executable"): (0.79, 0.51, 0.09, 0.64, 0.60, 0.03),
    ("memory-only", "subgoal-partially-executable"): (0.81, 0.58, 0.14, 0.71, 0.66, 0.05),
    ("memory-only", "non-executable"): (0.76, 0.46, 0.06, 0.70, 0.53, 0.01),
    ("parse", "executable"): (0.78, 0.54, 0.07, 0.71, 0.59, 0.03),
    ("parse", "partially-executable"): (0.78, 0.56, 0.07, 0.70, 0.59, 0.03),
    ("parse", "subgoal-partially-executable"): (0.78, 0.63, 0.13, 0.66, 0.67, 0.05),
    ("parse", "non-executable"): (0.81, 0.52, 0.10, 0.76, 0.59, 0.04),
    ("relevance", "executable"): (0.84, 0.69, 0.20, 0.83, 0.77, 0.16),
    ("relevance", "partially-executable"): (0.83, 0.57, 0.12, 0.79, 0.66, 0.06),
    ("relevance", "subgoal-partially-executable"): (0.86, 0.59, 0.17, 0.81, 0.66, 0.09),
    ("relevance", "non-executable"): (0.79, 0.49, 0.07, 0.80, 0.54, 0.04),
    ("how2", "executable"): (0.83, 0.60, 0.13, 0.80, 0.64, 0.07),
    ("how2", "partially-executable"): (0.79, 0.58, 0.09, 0.78, 0.63, 0.08),
    ("how2", "subgoal-partially-executable"): (0.81, 0.64, 0.15, 0.72, 0.69, 0.11),
    ("how2", "non-executable"): (0.87, 0.55, 0.11, 0.86, 0.64, 0.06),
}

Cell = Callable[[Sequence[EpisodeRecord]], str]


def _rate(records: Sequence[EpisodeRecord], hit: Callable[[EpisodeRecord], bool]) -> str:
    return f"{fmean(hit(r) for r in records):.3f}" if records else "-"


def _episodes(records: Sequence[EpisodeRecord]) -> dict[tuple[str, str], dict[str, list[EpisodeRecord]]]:
    """(strategy, teacher) -> family -> records, in the Table 1 setting's order, Table 1's
    strategies only, every model and seed pooled."""
    out: dict[tuple[str, str], dict[str, list[EpisodeRecord]]] = defaultdict(lambda: defaultdict(list))
    for (strategy, teacher, _, _), by_family in _groups(records, _table1_order(records)).items():
        if strategy in TABLE1_STRATEGIES:
            for family, by_seed in by_family.items():
                out[(strategy, teacher)][family] += [r for rs in by_seed.values() for r in rs]
    return out


def _ordered(keys) -> list[tuple[str, str]]:
    return sorted(keys, key=lambda k: (_rank(STRATEGIES, k[0]), _rank(TEACHER_STYLES, k[1]), k[1]))


def _per_family(records, title: str, columns: Sequence[tuple[str, Cell]], notes: Sequence[str] = (),
                paper: Optional[dict] = None, paper_headers: Sequence[str] = ()) -> list[Table]:
    cells = _episodes(records)
    if not cells:
        return []
    headers = ["strategy", "teacher"] + [f"{f} {name}" for f in FAMILIES for name, _ in columns]
    rows = [[strategy, teacher, *(cell(cells[(strategy, teacher)].get(f, [])) for f in FAMILIES
                                  for _, cell in columns)]
            for strategy, teacher in _ordered(cells)]
    tables = [Table.of(title, headers, rows, notes)]
    if paper:
        tables.append(Table.of(f"{title.split(':')[0]} as published ({PAPER_SETTING}), cited",
                               ["strategy", "teacher", *paper_headers],
                               [[s, t, *(f"{v:.2f}" if isinstance(v, float) else v for v in values)]
                                for (s, t), values in paper.items()]))
    return tables


def table8(records: Sequence[EpisodeRecord]) -> list[Table]:
    tokens: Cell = lambda rs: f"{fmean(r.tokens_in + r.tokens_out for r in rs) / 1000:.1f}k" if rs else "-"
    return _per_family(
        records, "How² Table 8: tokens per episode (every role, the LLM teacher's included)",
        [("tokens", tokens), ("episodes", lambda rs: str(len(rs)))],
        ["the paper's action efficiency is not computed: it cites Plancraft's definition "
         "without giving it"],
        {k: (f"{v[0]:.1f}k", f"{v[1]:.1f}k") for k, v in PAPER_TABLE8.items()},
        ["low tokens", "high tokens"])


def _all_examples_sr(records: Sequence[EpisodeRecord]) -> str:
    return _rate(records, lambda r: r.success)


def table9(records: Sequence[EpisodeRecord]) -> list[Table]:
    return _per_family(
        records, "How² Table 9: error rates",
        [("SR", lambda rs: _rate(solvable(rs), lambda r: r.success)),
         ("impossible error", lambda rs: _rate(
             solvable(rs), lambda r: bool(r.extra.get("impossible_predicted")))),
         ("max steps error", lambda rs: _rate(solvable(rs), lambda r: not r.success
                                              and r.status == Status.BUDGET_EXHAUSTED)),
         ("eager crafting error", lambda rs: _rate(
             [r for r in solvable(rs) if "off_plan_crafted" in r.extra],
             lambda r: not r.success and bool(r.extra["off_plan_crafted"]))),
         ("SR all examples", _all_examples_sr)],
        ["SR and every error rate over the solvable examples, as the paper's (only 470 "
         "examples a split fit its rates); SR all examples: over every example",
         "an impossible error: declared impossible, but solvable; a max-steps error: unsolved "
         "when the step budget ran out; an eager-crafting error: unsolved, having crafted an "
         "item the dataset's optimal plan does not make (records from before "
         "`extra.off_plan_crafted` show '-')"],
        PAPER_TABLE9, ["low impossible error", "low max steps error", "low eager crafting error",
                       "high impossible error", "high max steps error", "high eager crafting error"])


def table10(records: Sequence[EpisodeRecord]) -> list[Table]:
    def by(complexity: str) -> Cell:
        return lambda rs: _rate([r for r in rs if r.extra.get("complexity") == complexity],
                                lambda r: r.success)
    return _per_family(
        records, "How² Table 10: success by complexity",
        [("overall", lambda rs: _rate(solvable(rs), lambda r: r.success)),
         *((c, by(c)) for c in COMPLEXITIES), ("overall all examples", _all_examples_sr)],
        [SR_NOTE, "complexity from Plancraft's dataset (`extra.complexity`); '-' where no "
         "record of that class ran (or the records predate the field)"],
        PAPER_TABLE10, [f"{f} {c}" for f in FAMILIES for c in COMPLEXITIES])


def _first_read(record: EpisodeRecord) -> str:
    steps = record.extra.get("first_read_memory")
    if steps is None:
        return "never"
    return str(steps) if int(steps) < 3 else "3+"


def _bucket(count: int) -> str:
    return str(count) if count < 2 else "2+"


def _success_and_count(rs: Sequence[EpisodeRecord]) -> str:
    """Success over the solvable examples (the paper's SR), and their count."""
    kept = solvable(rs)
    return f"{fmean(r.success for r in kept):.2f} ({len(kept)})" if kept else "-"


def figure4(records: Sequence[EpisodeRecord]) -> list[Table]:
    cells = _episodes(records)
    rows = []
    for strategy, teacher in _ordered(k for k in cells if k[0] == "just-ask"):
        mine = [r for rs in cells[(strategy, teacher)].values() for r in rs]
        rows.append([teacher, *(_success_and_count([r for r in mine if _first_read(r) == when])
                                for when in FIRST_READ)])
    if not rows:
        return []
    return [Table.of("How² Figure 4: Just Ask's success by the environment steps taken before "
                     "the first memory read (success (episodes), solvable examples, both splits)",
                     ["teacher", *(f"first read at {w}" if w != "never" else "never read"
                                   for w in FIRST_READ)], rows)]


def figure5(records: Sequence[EpisodeRecord]) -> list[Table]:
    cells = _episodes(records)
    buckets = [(m, h) for m in COUNT_BUCKETS for h in COUNT_BUCKETS]
    rows = []
    for strategy, teacher in _ordered(k for k in cells if k[0] != "base"):
        mine = [r for rs in cells[(strategy, teacher)].values() for r in rs]
        rows.append([strategy, teacher, *(_success_and_count(
            [r for r in mine if (_bucket(int(r.extra.get("cache_misses", 0))),
                                 _bucket(int(r.extra.get("memory_hits", 0)))) == bucket])
            for bucket in buckets)])
    if not rows:
        return []
    return [Table.of("How² Figures 5 and 9: success (episodes) per cache misses and cache hits "
                     "in an episode, solvable examples, both splits",
                     ["strategy", "teacher", *(f"misses {m} hits {h}" for m, h in buckets)], rows)]


def appendix_tables(records: Sequence[EpisodeRecord]) -> list[Table]:
    return table8(records) + table9(records) + table10(records) + figure4(records) + figure5(records)
