"""How²'s tables from its records (Plancraft `val` = low, `val.repeated` = high task
repetition; their curriculum orders count as the same splits):

- Table 1 (with Table 10's spread): rows strategy x teacher and a per-strategy `avg` row
  (the mean of its teachers' rows); columns low / high x success rate (mean over seeds
  ± the standard deviation over seeds), impossible F1, average cache misses and average
  intervention rate, each computed per seed then averaged over seeds;
- Table 6: the ablations (curriculum, ask-first) beside how2 on the high split, averaged
  over teachers, with Student's t-test of each against how2;
- the paper's tests: unpaired t-tests of H1 (Just Ask: executable vs
  subgoal-partially-executable, and the subgoal teacher vs the other two) and H2
  (subgoal-partially-executable vs partially-executable over the four memory setups), on
  episode-level success pooled over seeds and both splits;
- Table 7: the two-way ANOVA of success over teacher x memory on its subset (teachers
  executable and subgoal-partially-executable; just-ask vs memory-only). Another subset:
  `lifebench compare DIR --anova extra.how2_teacher,extra.how2_strategy --where ...`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from statistics import fmean, stdev
from typing import Callable, Optional, Sequence

from lifebench.api import TEACHER_STYLES, EpisodeRecord, Table
from lifebench.api.stats import binary_f1, student_t, two_way_anova
from lifebench.methods.how2.strategies import STRATEGIES

SPLIT_FAMILIES = {"val": "low", "val.curriculum": "low",
                  "val.repeated": "high", "val.repeated.curriculum": "high"}
FAMILIES = ("low", "high")
TABLE1_STRATEGIES = ("base", "just-ask", "memory-only", "parse", "relevance", "how2")
ABLATIONS = ("curriculum", "ask-first")
MEMORY_SETUPS = ("memory-only", "parse", "relevance", "how2")
TABLE7 = {"teachers": ("executable", "subgoal-partially-executable"),
          "memory": ("just-ask", "memory-only")}


def _impossible_f1(records: Sequence[EpisodeRecord]) -> float:
    return binary_f1([bool(r.extra.get("impossible_predicted")) for r in records],
                     [bool(r.extra.get("impossible_truth")) for r in records])


Metric = Callable[[Sequence[EpisodeRecord]], float]
COLUMNS: tuple[tuple[str, Metric], ...] = (
    ("SR", lambda rs: fmean(r.success for r in rs)),
    ("imp. F1", _impossible_f1),
    ("avg cache miss", lambda rs: fmean(int(r.extra.get("cache_misses", 0)) for r in rs)),
    ("avg intervention", lambda rs: fmean(bool(r.extra.get("intervention")) for r in rs)),
)

# (strategy, teacher, model) -> family -> seed -> records
Groups = dict[tuple[str, str, Optional[str]], dict[str, dict[int, list[EpisodeRecord]]]]


def _groups(records: Sequence[EpisodeRecord]) -> Groups:
    groups: Groups = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in records:
        family = SPLIT_FAMILIES.get(r.split)
        if r.benchmark != "plancraft" or family is None or not r.is_result:
            continue
        strategy = str(r.extra.get("how2_strategy", "?"))
        teacher = "-" if strategy == "base" else str(r.extra.get("how2_teacher", "?"))
        groups[(strategy, teacher, r.model)][family][r.seed].append(r)
    return groups


def _rank(sequence: Sequence[str], value: str) -> int:
    return sequence.index(value) if value in sequence else len(sequence)


def _per_seed(by_seed: dict[int, list[EpisodeRecord]], metric: Metric) -> list[float]:
    return [metric(rs) for _, rs in sorted(by_seed.items())]


def _cells(by_family: dict[str, dict[int, list[EpisodeRecord]]]) -> list[Optional[list[float]]]:
    """Per column (family x metric), the metric per seed (None without records)."""
    return [(_per_seed(by_family[f], metric) if by_family.get(f) else None)
            for f in FAMILIES for _, metric in COLUMNS]


def _number(value: float, digits: str = ".3f") -> str:
    return "-" if math.isnan(value) else format(value, digits)


def _mean(values: list[float]) -> float:
    """The mean of the defined values (an F1 is undefined without positives)."""
    defined = [v for v in values if not math.isnan(v)]
    return fmean(defined) if defined else math.nan


def _shown(values: Optional[list[float]], spread: bool) -> str:
    if not values:
        return "-"
    text = _number(_mean(values))
    if spread:
        text += f" ± {stdev(values):.3f}" if len(values) > 1 else " ± -"
    return text


def table1(records: Sequence[EpisodeRecord]) -> list[Table]:
    groups = _groups(records)
    keys = [k for k in groups if k[0] in TABLE1_STRATEGIES]
    if not keys:
        return []
    headers = ["strategy", "teacher", "model"] + [f"{f} {name}" for f in FAMILIES
                                                 for name, _ in COLUMNS] + ["seeds"]
    spread = [name == "SR" for _ in FAMILIES for name, _ in COLUMNS]
    rows = []
    for strategy in sorted({k[0] for k in keys}, key=lambda s: _rank(STRATEGIES, s)):
        for model in sorted({k[2] or "" for k in keys if k[0] == strategy}):
            mine = sorted((k for k in keys if k[0] == strategy and (k[2] or "") == model),
                          key=lambda k: (_rank(TEACHER_STYLES, k[1]), k[1]))
            columns = []
            for key in mine:
                cells = _cells(groups[key])
                columns.append(cells)
                seeds = {s for f in FAMILIES for s in groups[key].get(f, {})}
                rows.append([strategy, key[1], model or "-",
                             *(_shown(c, sd) for c, sd in zip(cells, spread)), str(len(seeds))])
            if len(mine) > 1:  # the mean of the teachers' rows, as the paper's avg rows
                means = [[_mean(c) for c in column if c] for column in zip(*columns)]
                rows.append([strategy, "avg", model or "-",
                             *(_number(_mean(m)) if m else "-" for m in means), ""])
    return [Table.of("How² on Plancraft (Table 1 layout; low = val, high = val.repeated; "
                     "per seed, then mean over seeds; SR ± its sd over seeds)", headers, rows)]


def _pooled(groups: Groups, strategies: Sequence[str], teachers: Sequence[str],
            families: Sequence[str] = FAMILIES) -> list[float]:
    """Episode-level success of the given cells, over seeds and families (every model)."""
    return [float(r.success) for (strategy, teacher, _), by_family in groups.items()
            if strategy in strategies and teacher in teachers
            for f in families for rs in by_family.get(f, {}).values() for r in rs]


def _test_row(name: str, a: list[float], b: list[float]) -> Optional[list[str]]:
    if len(a) < 2 or len(b) < 2:
        return None
    result = student_t(a, b)
    return [name, f"{fmean(a):.3f}", f"{fmean(b):.3f}", str(len(a)), str(len(b)),
            _number(result.statistic), _number(result.p, ".3g")]


def tests(records: Sequence[EpisodeRecord]) -> list[Table]:
    groups = _groups(records)
    subgoal, partial = "subgoal-partially-executable", "partially-executable"
    comparisons = [
        ("H1: just-ask, executable vs subgoal-partially-executable",
         _pooled(groups, ["just-ask"], ["executable"]), _pooled(groups, ["just-ask"], [subgoal])),
        ("just-ask, subgoal-partially-executable vs partially-executable",
         _pooled(groups, ["just-ask"], [subgoal]), _pooled(groups, ["just-ask"], [partial])),
        ("just-ask, subgoal-partially-executable vs non-executable",
         _pooled(groups, ["just-ask"], [subgoal]), _pooled(groups, ["just-ask"], ["non-executable"])),
        ("H2: subgoal-partially-executable vs partially-executable, memory setups",
         _pooled(groups, MEMORY_SETUPS, [subgoal]), _pooled(groups, MEMORY_SETUPS, [partial])),
    ]
    rows = [row for row in (_test_row(*c) for c in comparisons) if row]
    tables = []
    if rows:
        tables.append(Table.of("How²'s hypothesis tests (Student's t on episode success, pooled "
                               "over seeds and both splits)",
                               ["comparison", "mean a", "mean b", "n a", "n b", "t", "p"], rows))
    anova = _table7(groups)
    if anova:
        tables.append(anova)
    return tables


def _table7(groups: Groups) -> Optional[Table]:
    values, teachers, memories = [], [], []
    for (strategy, teacher, _), by_family in groups.items():
        if strategy in TABLE7["memory"] and teacher in TABLE7["teachers"]:
            for f in FAMILIES:
                for rs in by_family.get(f, {}).values():
                    values += [float(r.success) for r in rs]
                    teachers += [teacher] * len(rs)
                    memories += [strategy] * len(rs)
    if len(set(teachers)) < 2 or len(set(memories)) < 2:
        return None
    names = {"a": "C(teacher)", "b": "C(memory)", "a:b": "C(teacher):C(memory)", "residual": "Residual"}
    rows = [[names[row["term"]], f"{row['sum_sq']:.2f}", f"{row['df']:.0f}",
             "-" if row["F"] is None else f"{row['F']:.2f}", "-" if row["p"] is None else f"{row['p']:.3g}"]
            for row in two_way_anova(values, teachers, memories)]
    return Table.of(f"How² Table 7: two-way ANOVA of success, teacher ({', '.join(TABLE7['teachers'])}) "
                    f"x memory ({', '.join(TABLE7['memory'])})", ["term", "sum_sq", "df", "F", "PR(>F)"],
                    rows)


def table6(records: Sequence[EpisodeRecord]) -> list[Table]:
    groups = _groups(records)
    if not any(k[0] in ABLATIONS for k in groups):
        return []
    rows = []
    how2 = _pooled(groups, ["how2"], TEACHER_STYLES, ["high"])
    for strategy in ("how2", *ABLATIONS):
        keys = [k for k in groups if k[0] == strategy and groups[k].get("high")]
        if not keys:
            continue
        success = [fmean(_per_seed(groups[k]["high"], COLUMNS[0][1])) for k in keys]
        intervention = [fmean(_per_seed(groups[k]["high"], COLUMNS[3][1])) for k in keys]
        row = [strategy, f"{fmean(success):.3f}", f"{fmean(intervention):.3f}", str(len(keys))]
        mine = _pooled(groups, [strategy], TEACHER_STYLES, ["high"])
        test = None if strategy == "how2" else _test_row(strategy, mine, how2)
        rows.append(row + ([test[5], test[6]] if test else ["", ""]))
    return [Table.of("How² ablations (Table 6 layout; high repetition, mean over teachers; "
                     "t-test against how2)",
                     ["strategy", "SR", "avg intervention", "teachers", "t", "p"], rows)]


def how2_tables(records: Sequence[EpisodeRecord]) -> list[Table]:
    return table1(records) + table6(records) + tests(records)
