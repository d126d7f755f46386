"""How²'s tables from its records (Plancraft `val` = low, `val.repeated` = high task
repetition; each also in curriculum order, `val.curriculum` and `val.repeated.curriculum`).

The paper's Table 1 was run in curriculum order: Table 6's How² row (0.50, 0.53) is Table
1's How² average on the high split, and "-curriculum" is Table 6's ablation (Appendix C.2).
So the tables read the curriculum-ordered records as the paper's setting, and the
file-order ones as the "-curriculum" setting. Records of the retired `curriculum` strategy
(how2 on a curriculum split) count as how2.

- Table 1 (with Table 10's spread), once per order that has records: rows strategy x
  teacher and a per-strategy `avg` row (the mean of its teachers' rows); columns low /
  high x success rate over the solvable examples, the paper's SR (mean over seeds ± the
  standard deviation over seeds), success rate over every example (labelled: a correct
  "impossible" counts, as in Plancraft's evaluator), impossible F1 (every example),
  average cache misses and average intervention rate, each computed per seed then
  averaged over seeds; then the paper's own Table 1, cited;
- Table 6: how2 in curriculum order, "-curriculum" (how2 in file order) and "+ask-first"
  on the high split, averaged over teachers (SR over solvable examples, and over all),
  with Student's t-test of each against how2 (the paper's) and ours;
- the paper's tests: unpaired t-tests of H1 (Just Ask: executable vs
  subgoal-partially-executable, and the subgoal teacher vs the other two) and H2
  (subgoal-partially-executable vs partially-executable over the four memory setups), on
  episode-level success pooled over seeds and both splits;
- Table 7: the two-way ANOVA of success over teacher x memory on its subset (teachers
  executable and subgoal-partially-executable; just-ask vs memory-only). Another subset:
  `lifebench compare DIR --anova extra.how2_teacher,extra.how2_strategy --where ...`.

Every test runs twice, labelled: on the solvable examples only (the paper's set: Table 7's
residual df, 11,276, is 4 x 470 x 2 x 3 - 4, the 470 solvable examples of each split) and on
every example. The significance marks (* p < 0.05) are the solvable set's. The tests read
the Table 1 setting's records (curriculum order when there are any, else file order).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from statistics import fmean, stdev
from typing import Callable, Optional, Sequence

from lifebench.api import TEACHER_STYLES, EpisodeRecord, Table, is_curriculum_split
from lifebench.api.comparison import agreement_note, compare_arms, n_label, records_sample
from lifebench.api.stats import binary_f1, student_t, two_way_anova
from lifebench.methods.how2.strategies import STRATEGIES

SPLIT_FAMILIES = {"val": "low", "val.curriculum": "low",
                  "val.repeated": "high", "val.repeated.curriculum": "high"}
FAMILIES = ("low", "high")
TABLE1_STRATEGIES = ("base", "just-ask", "memory-only", "parse", "relevance", "how2")
MEMORY_SETUPS = ("memory-only", "parse", "relevance", "how2")
TABLE7 = {"teachers": ("executable", "subgoal-partially-executable"),
          "memory": ("just-ask", "memory-only")}
SIGNIFICANT = 0.05
ORDER_NAMES = {True: "curriculum order, the paper's Table 1 setting",
               False: "file order, the -curriculum setting"}

# The paper's numbers (Llama 3.3 70B, temperature 0.6 for the actor and 0.2 for the other
# roles, 3 seeds, curriculum order), cited beside ours.
PAPER_SETTING = "Llama 3.3 70B, 3 seeds, curriculum order"
# Table 1: (strategy, teacher) -> low SR, high SR, low F1, high F1, low cache miss, high
# cache miss, low intervention, high intervention
PAPER_TABLE1 = {
    ("base", "-"): (0.20, 0.21, 0.43, 0.45, 0.00, 0.00, 0.00, 0.00),
    ("just-ask", "executable"): (0.59, 0.58, 0.93, 0.93, 1.71, 1.60, 0.93, 0.92),
    ("just-ask", "partially-executable"): (0.54, 0.53, 0.92, 0.92, 1.69, 1.64, 0.92, 0.92),
    ("just-ask", "subgoal-partially-executable"): (0.57, 0.56, 0.93, 0.93, 1.56, 1.51, 0.92, 0.91),
    ("just-ask", "non-executable"): (0.50, 0.51, 0.94, 0.92, 1.68, 1.56, 0.93, 0.92),
    ("just-ask", "avg"): (0.55, 0.54, 0.93, 0.92, 1.66, 1.58, 0.93, 0.92),
    ("memory-only", "executable"): (0.43, 0.32, 0.74, 0.55, 0.66, 0.28, 0.62, 0.26),
    ("memory-only", "partially-executable"): (0.48, 0.41, 0.77, 0.62, 0.67, 0.30, 0.63, 0.27),
    ("memory-only", "subgoal-partially-executable"): (0.52, 0.46, 0.79, 0.65, 0.66, 0.29, 0.63, 0.26),
    ("memory-only", "non-executable"): (0.44, 0.41, 0.78, 0.62, 0.65, 0.29, 0.62, 0.27),
    ("memory-only", "avg"): (0.47, 0.40, 0.77, 0.61, 0.66, 0.29, 0.62, 0.26),
    ("parse", "executable"): (0.48, 0.44, 0.77, 0.63, 0.67, 0.30, 0.63, 0.28),
    ("parse", "partially-executable"): (0.48, 0.43, 0.78, 0.63, 0.67, 0.30, 0.63, 0.27),
    ("parse", "subgoal-partially-executable"): (0.51, 0.44, 0.78, 0.63, 0.66, 0.29, 0.63, 0.27),
    ("parse", "non-executable"): (0.49, 0.46, 0.77, 0.64, 0.66, 0.30, 0.63, 0.28),
    ("parse", "avg"): (0.49, 0.44, 0.78, 0.63, 0.67, 0.30, 0.63, 0.28),
    ("relevance", "executable"): (0.58, 0.58, 0.92, 0.92, 1.61, 1.58, 0.91, 0.89),
    ("relevance", "partially-executable"): (0.52, 0.50, 0.91, 0.87, 1.41, 1.17, 0.82, 0.63),
    ("relevance", "subgoal-partially-executable"): (0.55, 0.51, 0.89, 0.83, 1.03, 0.80, 0.80, 0.57),
    ("relevance", "non-executable"): (0.46, 0.47, 0.88, 0.81, 0.92, 0.68, 0.80, 0.56),
    ("relevance", "avg"): (0.53, 0.52, 0.90, 0.86, 1.24, 1.06, 0.83, 0.66),
    ("how2", "executable"): (0.52, 0.50, 0.86, 0.78, 0.94, 0.63, 0.79, 0.53),
    ("how2", "partially-executable"): (0.49, 0.49, 0.86, 0.77, 0.89, 0.62, 0.76, 0.51),
    ("how2", "subgoal-partially-executable"): (0.53, 0.50, 0.89, 0.79, 0.87, 0.61, 0.78, 0.53),
    ("how2", "non-executable"): (0.53, 0.53, 0.86, 0.80, 0.83, 0.60, 0.77, 0.53),
    ("how2", "avg"): (0.52, 0.50, 0.87, 0.78, 0.88, 0.62, 0.77, 0.53),
}
# Table 6 (high split, mean over teachers): SR, intervention, and t, p against How²
PAPER_TABLE6 = {"how2": (0.50, 0.53, None), "-curriculum": (0.49, 0.54, "t=1.01, p=0.312"),
                "+ask-first": (0.52, 0.55, "t=1.391, p=0.164")}
# The hypothesis tests (Sections 4.1, 4.2; Appendix D.1)
PAPER_TESTS = ("t=1.615, p=0.106", "t=1.953, p=0.051", "t=4.196, p<0.0001",
               "t=4.050, p<0.0001 (1.24e-05 in D.1)")
# Table 7: sum_sq, df, F per term
PAPER_TABLE7 = {"C(teacher)": ("10.55", "1", "43.36"), "C(memory)": ("45.32", "1", "186.23"),
                "C(teacher):C(memory)": ("19.17", "1", "78.77"),
                "Residual": ("2744.12", "11276", "-")}


def _impossible_f1(records: Sequence[EpisodeRecord]) -> float:
    return binary_f1([bool(r.extra.get("impossible_predicted")) for r in records],
                     [bool(r.extra.get("impossible_truth")) for r in records])


def solvable(records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    """The records of solvable examples: the paper's SR counts only these (470 of each
    split's 570; its Table 10's overall is (200 easy + 100 medium + 170 hard) / 470, and
    Plancraft's own analysis drops the impossible examples alike)."""
    return [r for r in records if not r.extra.get("impossible_truth")]


def success_rate(records: Sequence[EpisodeRecord]) -> float:
    """The paper's SR: success over the solvable examples (NaN where there is none)."""
    kept = solvable(records)
    return fmean(r.success for r in kept) if kept else math.nan


Metric = Callable[[Sequence[EpisodeRecord]], float]
COLUMNS: tuple[tuple[str, Metric], ...] = (
    ("SR", success_rate),
    ("SR all examples", lambda rs: fmean(r.success for r in rs)),
    ("imp. F1", _impossible_f1),
    ("avg cache miss", lambda rs: fmean(int(r.extra.get("cache_misses", 0)) for r in rs)),
    ("avg intervention", lambda rs: fmean(bool(r.extra.get("intervention")) for r in rs)),
)
# The paper's Table 1 has no all-examples SR: the published table's columns
PAPER_COLUMNS = ("SR", "imp. F1", "avg cache miss", "avg intervention")
SR_NOTE = ("SR: success over the solvable examples only, as the paper's (its Table 10's overall "
           "is (200 easy + 100 medium + 170 hard) / 470) and Plancraft's own analysis count it; "
           "SR all examples: over every example, a correctly declared impossible example counting "
           "as a success (Plancraft's evaluator, and the leaderboard's grid); imp. F1 over every "
           "example")

# (strategy, teacher, model, the rest of the config) -> family -> seed -> records: two
# configurations of one strategy and teacher (gold_stop on and off, say) are never pooled
Groups = dict[tuple[str, str, Optional[str], str], dict[str, dict[int, list[EpisodeRecord]]]]


def strategy_of(record: EpisodeRecord) -> str:
    """The record's strategy; the retired `curriculum` (how2 on a curriculum split) is how2."""
    strategy = str(record.extra.get("how2_strategy", "?"))
    return "how2" if strategy == "curriculum" else strategy


def _groups(records: Sequence[EpisodeRecord], ordered: bool, solvable_only: bool = False) -> Groups:
    """The How² records on Plancraft in one order (curriculum or file order), grouped."""
    groups: Groups = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in records:
        family = SPLIT_FAMILIES.get(r.split)
        if r.benchmark != "plancraft" or family is None or not r.is_result \
                or is_curriculum_split(r.split) != ordered:
            continue
        if solvable_only and r.extra.get("impossible_truth"):
            continue
        strategy = strategy_of(r)
        teacher = "-" if strategy == "base" else str(r.extra.get("how2_teacher", "?"))
        setting = str(r.extra.get("how2_setting") or "")
        groups[(strategy, teacher, r.model, setting)][family][r.seed].append(r)
    return groups


def _table1_order(records: Sequence[EpisodeRecord]) -> bool:
    """The order the Table 1 setting's records ran in: curriculum when any did."""
    return any(k[0] in TABLE1_STRATEGIES for k in _groups(records, ordered=True))


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
    if spread:  # over the seeds with a value (a seed may have run no solvable example)
        defined = [v for v in values if not math.isnan(v)]
        text += f" ± {stdev(defined):.3f}" if len(defined) > 1 else " ± -"
    return text


def _table1_headers(first: Sequence[str]) -> list[str]:
    return [*first] + [f"{f} {name}" for f in FAMILIES for name, _ in COLUMNS]


def table1(records: Sequence[EpisodeRecord]) -> list[Table]:
    tables = []
    for ordered in (True, False):
        groups = _groups(records, ordered)
        keys = [k for k in groups if k[0] in TABLE1_STRATEGIES]
        if keys:
            tables.append(_table1(groups, keys, ordered))
    if tables:
        # the paper's columns pair low and high per metric; ours group by split
        order = [2 * m + f for f in range(len(FAMILIES)) for m in range(len(PAPER_COLUMNS))]
        rows = [[strategy, teacher, *(f"{values[i]:.2f}" for i in order)]
                for (strategy, teacher), values in PAPER_TABLE1.items()]
        tables.append(Table.of(f"How² Table 1 as published ({PAPER_SETTING}), cited beside ours",
                               ["strategy", "teacher", *(f"{f} {name}" for f in FAMILIES
                                                         for name in PAPER_COLUMNS)], rows,
                               ["SR over the solvable examples (470 of each split's 570)"]))
    return tables


def _table1(groups: Groups, keys: list, ordered: bool) -> Table:
    headers = _table1_headers(["strategy", "teacher", "model"]) + ["seeds"]
    spread = [name == "SR" for _ in FAMILIES for name, _ in COLUMNS]
    rows = []
    for strategy, model, setting in sorted({(k[0], k[2] or "", k[3]) for k in keys},
                                           key=lambda c: (_rank(STRATEGIES, c[0]), c[1], c[2])):
        # a configuration named by the fields that set it apart, where the strategy has several
        several = len({k[3] for k in keys if k[0] == strategy and (k[2] or "") == model}) > 1
        label = f"{strategy} ({setting or 'default config'})" if several else strategy
        mine = sorted((k for k in keys if k[0] == strategy and (k[2] or "") == model
                       and k[3] == setting),
                      key=lambda k: (_rank(TEACHER_STYLES, k[1]), k[1]))
        columns = []
        for key in mine:
            cells = _cells(groups[key])
            columns.append(cells)
            seeds = {s for f in FAMILIES for s in groups[key].get(f, {})}
            rows.append([label, key[1], model or "-",
                         *(_shown(c, sd) for c, sd in zip(cells, spread)), str(len(seeds))])
        if len(mine) > 1:  # the mean of the teachers' rows, as the paper's avg rows
            means = [[_mean(c) for c in column if c] for column in zip(*columns)]
            rows.append([label, "avg", model or "-",
                         *(_number(_mean(m)) if m else "-" for m in means), ""])
    place = "" if ordered else ", file order"
    agreement = agreement_note(
        (f"{key[0]}/{key[1]}" + (f" ({key[3]})" if key[3] else "") + (f" @{key[2]}" if key[2] else ""),
         records_sample([r for by_seed in groups[key].values() for rs in by_seed.values()
                         for r in rs], lambda r: float(r.success), _example))
        for key in keys)
    return Table.of(f"How² on Plancraft{place} (Table 1 layout; {ORDER_NAMES[ordered]}; low = val, "
                    f"high = val.repeated; per seed, then mean over seeds; SR ± its sd over seeds)",
                    headers, rows, [SR_NOTE] + ([agreement] if agreement else []))


def _pooled_records(groups: Groups, strategies: Sequence[str], teachers: Sequence[str],
                    families: Sequence[str] = FAMILIES) -> list[EpisodeRecord]:
    """The records of the given cells, over seeds and families (every model)."""
    return [r for (strategy, teacher, _, _), by_family in groups.items()
            if strategy in strategies and teacher in teachers
            for f in families for rs in by_family.get(f, {}).values() for r in rs]


def _pooled(groups: Groups, strategies: Sequence[str], teachers: Sequence[str],
            families: Sequence[str] = FAMILIES) -> list[float]:
    """Episode-level success of the given cells, over seeds and families (every model)."""
    return [float(r.success) for r in _pooled_records(groups, strategies, teachers, families)]


def _test(a: list[float], b: list[float]) -> Optional[list[str]]:
    """The paper's test: n a, n b, t, p and the significance mark; None when a sample has
    fewer than 2."""
    if len(a) < 2 or len(b) < 2:
        return None
    result = student_t(a, b)
    mark = "*" if not math.isnan(result.p) and result.p < SIGNIFICANT else ""
    return [str(len(a)), str(len(b)), _number(result.statistic), _number(result.p, ".3g"), mark]


def _example(record: EpisodeRecord) -> tuple[str, str]:
    """The unit of our tests: an example of a split family (low or high)."""
    return SPLIT_FAMILIES[record.split], record.instance_id


def _ours(a: Sequence[EpisodeRecord], b: Sequence[EpisodeRecord]) -> list[str]:
    """Our test, the leaderboard's rule: the example as the unit, each example's success
    averaged over its seeds (and the pooled strategies, models), paired over the examples
    both sides ran: n (with the episodes behind it), p and the significance mark."""
    xs = records_sample(a, lambda r: float(r.success), _example)
    ys = records_sample(b, lambda r: float(r.success), _example)
    if not xs.n or not ys.n:
        return ["", "", ""]
    c = compare_arms(xs, ys, binary=True)
    mark = "*" if not math.isnan(c.result.p) and c.result.p < SIGNIFICANT else ""
    return [n_label(c.result.n, c.results_a + c.results_b), _number(c.result.p, ".3g"), mark]


EXAMPLE_SETS = (("solvable (paper)", True), ("all", False))
OURS_NOTE = ("the paper's test counts episodes (seeds and examples alike) as independent; ours "
             "takes the example (a split's instance) as the unit, as every comparison of the "
             "leaderboard does: each example's success averaged over its seeds (and the pooled "
             "strategies), then paired over the examples both sides ran, the sign-flip "
             "permutation test (McNemar's exact test where each example has one outcome); "
             "n: examples, with the episodes of both sides behind them; uncorrected")


def tests(records: Sequence[EpisodeRecord]) -> list[Table]:
    ordered = _table1_order(records)
    subgoal, partial = "subgoal-partially-executable", "partially-executable"
    comparisons = [
        ("H1: just-ask, executable vs subgoal-partially-executable", ["just-ask"], ["executable"], [subgoal]),
        ("just-ask, subgoal-partially-executable vs partially-executable", ["just-ask"], [subgoal], [partial]),
        ("just-ask, subgoal-partially-executable vs non-executable", ["just-ask"], [subgoal], ["non-executable"]),
        ("H2: subgoal-partially-executable vs partially-executable, memory setups", MEMORY_SETUPS,
         [subgoal], [partial]),
    ]
    rows = []
    for (name, strategies, first, second), paper in zip(comparisons, PAPER_TESTS):
        for label, solvable_only in EXAMPLE_SETS:
            groups = _groups(records, ordered, solvable_only)
            mine = _pooled_records(groups, strategies, first)
            theirs = _pooled_records(groups, strategies, second)
            a, b = [float(r.success) for r in mine], [float(r.success) for r in theirs]
            test = _test(a, b)
            if test:
                rows.append([name, label, f"{fmean(a):.3f}", f"{fmean(b):.3f}", *test,
                             *_ours(mine, theirs), paper if solvable_only else ""])
    tables = []
    if rows:
        tables.append(Table.of(
            f"How²'s hypothesis tests (the paper's test: Student's t on episode success, pooled "
            f"over seeds and both splits; ours: paired over examples; {ORDER_NAMES[ordered]}; "
            f"* p < {SIGNIFICANT})",
            ["comparison", "examples", "mean a", "mean b", "paper's n a", "paper's n b",
             "paper's t", "paper's p", "paper's sig", "ours n", "ours p", "ours sig",
             f"paper ({PAPER_SETTING})"], rows, [OURS_NOTE]))
    for label, solvable_only in EXAMPLE_SETS:
        anova = _table7(_groups(records, ordered, solvable_only), label, solvable_only)
        if anova:
            tables.append(anova)
    return tables


def _table7(groups: Groups, label: str, paper: bool) -> Optional[Table]:
    values, teachers, memories = [], [], []
    for (strategy, teacher, _, _), by_family in groups.items():
        if strategy in TABLE7["memory"] and teacher in TABLE7["teachers"]:
            for f in FAMILIES:
                for rs in by_family.get(f, {}).values():
                    values += [float(r.success) for r in rs]
                    teachers += [teacher] * len(rs)
                    memories += [strategy] * len(rs)
    if len(set(teachers)) < 2 or len(set(memories)) < 2:
        return None
    names = {"a": "C(teacher)", "b": "C(memory)", "a:b": "C(teacher):C(memory)", "residual": "Residual"}
    rows = []
    for row in two_way_anova(values, teachers, memories):
        term = names[row["term"]]
        p = "-" if row["p"] is None else f"{row['p']:.3g}"
        rows.append([term, _number(row["sum_sq"], ".2f"), _number(row["df"], ".0f"),
                     "-" if row["F"] is None else f"{row['F']:.2f}", p,
                     "*" if row["p"] is not None and row["p"] < SIGNIFICANT else "",
                     *(PAPER_TABLE7[term] if paper else ())])
    headers = ["term", "sum_sq", "df", "F", "PR(>F)", "sig"]
    if paper:
        headers += ["paper sum_sq", "paper df", "paper F"]
    return Table.of(f"How² Table 7 ({label} examples): two-way ANOVA of success, teacher "
                    f"({', '.join(TABLE7['teachers'])}) x memory ({', '.join(TABLE7['memory'])})",
                    headers, rows)


def table6(records: Sequence[EpisodeRecord]) -> list[Table]:
    """How² in curriculum order beside -curriculum (file order) and +ask-first, high split."""
    arms = [("how2", True, "how2"), ("-curriculum", False, "how2"), ("+ask-first", True, "ask-first")]
    present = [(name, ordered, strategy) for name, ordered, strategy in arms
               if any(k[0] == strategy and by.get("high") for k, by in _groups(records, ordered).items())]
    if len(present) < 2 or present[0][0] != "how2":  # how2 and at least one ablation
        return []
    rows = []
    for name, ordered, strategy in present:
        groups = _groups(records, ordered)
        keys = [k for k in groups if k[0] == strategy and groups[k].get("high")]
        by_name = dict(COLUMNS)
        success = [_mean(_per_seed(groups[k]["high"], by_name["SR"])) for k in keys]
        everything = [_mean(_per_seed(groups[k]["high"], by_name["SR all examples"])) for k in keys]
        intervention = [_mean(_per_seed(groups[k]["high"], by_name["avg intervention"]))
                        for k in keys]
        row = [name, _number(_mean(success)), _number(_mean(everything)),
               _number(_mean(intervention)), str(len(keys))]
        for _, solvable_only in EXAMPLE_SETS:
            test, ours = None, ["", "", ""]
            if name != "how2":
                how2 = _pooled_records(_groups(records, True, solvable_only), ["how2"],
                                       TEACHER_STYLES, ["high"])
                mine = _pooled_records(_groups(records, ordered, solvable_only), [strategy],
                                       TEACHER_STYLES, ["high"])
                test = _test([float(r.success) for r in mine], [float(r.success) for r in how2])
                ours = _ours(mine, how2)
            row += ([test[2], test[3], test[4]] if test else ["", "", ""]) + ours
        paper_sr, paper_intervention, paper_test = PAPER_TABLE6[name]
        rows.append(row + [f"{paper_sr:.2f}", f"{paper_intervention:.2f}", paper_test or ""])
    return [Table.of("How² ablations (Table 6 layout; high repetition, mean over teachers; each "
                     "against how2 in curriculum order, on the solvable examples (the paper's) and "
                     "on all: the paper's test, Student's t on episode success, and ours, paired "
                     "over examples)",
                     ["ablation", "SR", "SR all examples", "avg intervention", "teachers",
                      "paper's t (solvable)", "paper's p (solvable)", "paper's sig (solvable)",
                      "ours n (solvable)", "ours p (solvable)", "ours sig (solvable)",
                      "paper's t (all)", "paper's p (all)", "paper's sig (all)",
                      "ours n (all)", "ours p (all)", "ours sig (all)",
                      "paper SR", "paper intervention", f"paper test ({PAPER_SETTING})"], rows,
                     [SR_NOTE, OURS_NOTE])]


def how2_tables(records: Sequence[EpisodeRecord]) -> list[Table]:
    """Table 1 keeps each configuration's rows apart (`how2_setting`); the tables that pool
    strategies or teachers (Table 6, the tests) are made once per configuration, titled by
    the fields that set it apart, where the records hold several."""
    settings = sorted({str(r.extra.get("how2_setting") or "") for r in records
                       if r.method == "how2"})
    pooled: list[Table] = []
    for setting in settings:
        mine = [r for r in records if str(r.extra.get("how2_setting") or "") == setting]
        made = table6(mine) + tests(mine)
        if len(settings) > 1:
            made = [dataclasses.replace(t, title=f"{t.title} [{setting or 'default config'}]")
                    for t in made]
        pooled += made
    return table1(records) + pooled
