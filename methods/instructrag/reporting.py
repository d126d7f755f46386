"""InstructRAG's tables from its records and its peers' (`TABLE_PEERS`: ReAct's and RAP's
records on the splits InstructRAG ran on): the paper's Table 1 (ALFWorld column) and Table 2
(ALFWorld -> ScienceWorld here, HotpotQA -> ScienceWorld in the paper), each with our
paired tests and the paper's unpaired t-test; Table 5 (ablations), Table 6 (by delta, with
the stages' runtimes) and Table 7 (by K, when K was varied). The paper's numbers are cited
beside ours with their backbone and setting; they are never ours.

What a record says of its config is `extra.instructrag_args` (`recorded_args`: the args that
differ from the defaults). Of those, the Switches turned off and `delta`/`k_paths` make the
variant (a row of Table 5, a column of Table 6 or 7); the others (train_benchmark,
support_limit, ...) and a budget asked make the setting, named with the benchmark split it
ran on. A record that does not say its args is shown as its config hash, never guessed from
its counters.

Effectiveness is the paper's measure: ALFWorld's success rate; ScienceWorld's score, which
the paper reports in [0, 1] (ours is the simulator's 0-100), scaled by its maximum.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field, fields
from statistics import fmean
from typing import Any, NamedTuple, Optional, Sequence

from lifebench.api import EpisodeRecord, Table, aggregate_trials
from lifebench.api.comparison import (ArmComparison, agreement_note, compare_arms,
                                      instance_estimate, n_label, records_sample)
from lifebench.api.stats import TestResult, adjust, welch_t
from lifebench.methods.instructrag.training import Hyper, Switches

# The package's Method.name (its records' `method`), and the methods whose records on the
# same splits its tables get (`Method.table_peers`): the paper's baselines that run here.
METHOD = "instructrag"
TABLE_PEERS = ("react", "rap")
ARGS_KEY = "instructrag_args"
STAGES_KEY = "instructrag_stages"
SWITCHES = tuple(f.name for f in fields(Switches))  # Table 5's order
# InstructRagConfig.delta (the paper's), which this module cannot import: the package imports
# it (a test keeps the two equal).
DEFAULT_DELTA = 0.4
WITHOUT = {"graph": "w/o instruction graph", "rl_agent": "w/o RL-Agent",
           "warm_start": "w/o warm-start in RL-Agent",
           "policy_gradient": "w/o policy gradient in RL-Agent", "ml_agent": "w/o ML-Agent",
           "pre_training": "w/o pre-training in ML-Agent",
           "fine_tuning": "w/o fine-tuning in ML-Agent", "meta_learning": "w/o meta-learning"}
# Benchmarks the paper measures by score, with the score's maximum here; the others by success.
SCORE_MAX = {"scienceworld": 100.0}
# The roles under which the package counts the stages' LLM calls (its __init__).
TRAIN_ROLE, FEW_SHOT_ROLE = "train", "few_shot"
TABLE6_NOTE = ("stages (seconds, LLM calls, graph after the few-shot stage): the first record "
               "of each stream, mean over streams; testing: wall seconds per scored episode "
               "(prepare is not in them); the paper gives training in hours and few-shot in "
               "minutes per task")

# The paper's numbers (§5.2), cited beside ours: its backbones, never our model.
BACKBONES = ("GLM-4", "GPT-4o mini", "DeepSeek-V2")
# Table 1's ALFWorld column (success rate %, unseen tasks) per backbone, for the paper's
# methods that run here (its WKM and GenGround do not).
PAPER_TABLE1 = {"react": (47.01, 42.54, 52.24), "reflexion": (52.99, 50.75, 67.16),
                "rap": (64.18, 56.71, 72.39), METHOD: (72.39, 58.21, 81.34)}
# Table 2 (trained on HotpotQA, tested on ScienceWorld; score in [0, 1] x 100) per backbone.
PAPER_TABLE2 = {"rap": (24.37, 23.49, 32.15), METHOD: (26.85, 25.10, 33.96)}
TRANSFER = "ALFWorld → ScienceWorld transfer (not the paper's HotpotQA → ScienceWorld)"
# Tables 5-7: F1 on HotpotQA with DeepSeek-V2 (their InstructRAG, 37.17, is Table 1's cell).
PAPER_ABLATIONS = "DeepSeek-V2, HotpotQA"
# Table 5: F1 by the switches turned off (it has no "w/o meta-learning" row).
PAPER_TABLE5 = {(): 37.17, ("graph",): 32.87, ("rl_agent",): 33.45, ("warm_start",): 34.37,
                ("policy_gradient",): 36.18, ("ml_agent",): 34.78, ("pre_training",): 36.19,
                ("fine_tuning",): 36.24}
# Table 6: delta -> (F1, # of nodes).
PAPER_TABLE6 = {0.0: (34.02, 5), 0.2: (35.19, 29), 0.4: (37.17, 286), 0.6: (36.61, 666),
                0.8: (36.48, 720), 1.0: (35.93, 725)}
# Table 7: K -> (F1, testing seconds).
PAPER_TABLE7 = {1: (34.78, 32.05), 2: (36.16, 33.57), 3: (37.17, 34.74), 4: (36.98, 35.31),
                5: (36.77, 42.09)}
TABLE5_NOTE = ("SR: success rate; score/100: mean score scaled to [0, 1] (the paper's "
               "measures); n: instances, with the scored episodes behind them where they differ")
PAPER_NOTE = (f"paper ({PAPER_ABLATIONS}): the paper's numbers (F1 x 100 on HotpotQA, "
              f"DeepSeek-V2), cited: its dataset, measure and backbone, not ours; — where it "
              f"has no such {{}}")
SIGNIFICANT = 0.05  # the paper's level
# Tables 1 and 2 keep one episode per instance and seed: the paper's one attempt per task.
SCORED_TRIAL = "first"


def recorded_args(config: Any) -> dict[str, Any]:
    """What a record says of its config: the fields that differ from the defaults, as JSON
    values (an empty dict: the default config)."""
    default = type(config)()
    return {f.name: (list(value) if isinstance(value, tuple) else value)
            for f in fields(config)
            if (value := getattr(config, f.name)) != getattr(default, f.name)}


@dataclass(frozen=True)
class Variant:
    """A row of Table 5, a column of Table 6: the switches turned off (Table 5's order),
    delta and K where changed; for a record that does not say its args, its config hash."""

    off: tuple[str, ...] = ()
    delta: Optional[float] = None
    k_paths: Optional[int] = None
    config_hash: str = ""

    @property
    def full(self) -> bool:
        """Every switch on and the paper's K: a point of Table 6 (unknown configs included,
        labelled by their hash)."""
        return not self.off and self.k_paths is None

    @property
    def label(self) -> str:
        if self.config_hash:
            return f"config {self.config_hash[:6]} (args not recorded)"
        parts = [WITHOUT[name] for name in self.off] or ["InstructRAG"]
        changed = [f"{name}={value:g}" for name, value in (("delta", self.delta), ("K", self.k_paths))
                   if value is not None]
        return ", ".join(parts) + (f" ({', '.join(changed)})" if changed else "")

    @property
    def delta_label(self) -> str:
        if self.config_hash:
            return f"? [{self.config_hash[:6]}]"
        return f"{self.delta if self.delta is not None else DEFAULT_DELTA:g}"

    def order(self) -> tuple:
        """The paper's order: InstructRAG, each ablation alone, the rest; unknown configs last."""
        return (bool(self.config_hash), len(self.off), [SWITCHES.index(n) for n in self.off],
                self.delta if self.delta is not None else DEFAULT_DELTA,
                self.k_paths if self.k_paths is not None else Hyper.k_paths, self.config_hash)


@dataclass(frozen=True)
class Column:
    """Where a variant ran: a benchmark split, its setting (the other args, the budget) and
    the model."""

    benchmark: str
    split: str
    setting: str
    model: Optional[str]

    @property
    def name(self) -> str:
        return f"{self.benchmark} {self.split}" + (f" [{self.setting}]" if self.setting else "")


def _budget(record: EpisodeRecord) -> list[str]:
    return [] if record.budget is None else [f"budget {record.budget}"]


def _setting(args: dict[str, Any]) -> list[str]:
    """The recorded args that are not the variant's."""
    return [f"{k}={v}" for k, v in sorted(args.items())
            if k not in SWITCHES and k not in ("delta", "k_paths")]


def _read(record: EpisodeRecord) -> tuple[Variant, Column]:
    args = record.extra.get(ARGS_KEY)
    if not isinstance(args, dict):
        return (Variant(config_hash=record.method_config_hash),
                Column(record.benchmark, record.split, ", ".join(_budget(record)), record.model))
    off = tuple(name for name in SWITCHES if args.get(name) is False)
    delta, k_paths = args.get("delta"), args.get("k_paths")
    return (Variant(off, None if delta is None else float(delta),
                    None if k_paths is None else int(k_paths)),
            Column(record.benchmark, record.split, ", ".join(_setting(args) + _budget(record)),
                   record.model))


Cells = dict[Column, dict[Variant, list[EpisodeRecord]]]


def _cells(records: Sequence[EpisodeRecord]) -> Cells:
    cells: Cells = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.is_result and r.method == METHOD:  # the peers' are Tables 1 and 2's only
            variant, column = _read(r)
            cells[column][variant].append(r)
    return cells


def _measure(benchmark: str) -> str:
    return "score/100" if benchmark in SCORE_MAX else "SR"


def _measures(benchmark: str, records: Sequence[EpisodeRecord]) -> list[float]:
    """The paper's measure of each episode, in [0, 1]: success, or the score scaled."""
    if benchmark in SCORE_MAX:
        return [r.score / SCORE_MAX[benchmark] for r in records]
    return [float(r.success) for r in records]


def effectiveness(benchmark: str, records: Sequence[EpisodeRecord]) -> float:
    """The paper's measure over `records` (not empty): success rate, or the mean score scaled
    to [0, 1]."""
    return fmean(_measures(benchmark, records))


def _shown(value: Optional[float], digits: int) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _p(value: float) -> str:
    """A p-value as the leaderboard prints them: three significant digits."""
    return "—" if math.isnan(value) else f"{value:.3g}"


def _many(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _counts(records: Sequence[EpisodeRecord]) -> str:
    seeds = sorted({r.seed for r in records})
    instances = len({(r.benchmark, r.split, r.instance_id) for r in records})
    return (f"{_many(len(seeds), 'seed')} ({', '.join(map(str, seeds))}); "
            f"{_many(instances, 'instance')}, {_many(len(records), 'scored episode')}")


def _n(records: Sequence[EpisodeRecord]) -> str:
    """n as instances, with the scored episodes behind them where they differ."""
    return n_label(len({(r.split, r.instance_id) for r in records}), len(records))


def table5(records: Sequence[EpisodeRecord]) -> list[Table]:
    """Per model: a row per variant, per benchmark split (and setting) its effectiveness
    and episodes."""
    cells = _cells(records)
    tables = []
    for model in sorted({c.model or "" for c in cells}):
        columns = sorted((c for c in cells if (c.model or "") == model), key=lambda c: c.name)
        variants = sorted({v for c in columns for v in cells[c]}, key=Variant.order)
        headers = ["variant"] + [h for c in columns for h in (f"{c.name} {_measure(c.benchmark)}", "n")]
        headers.append(f"paper F1 ({PAPER_ABLATIONS})")
        rows = []
        for variant in variants:
            row = [variant.label]
            for column in columns:
                mine = cells[column].get(variant, [])
                row += ([f"{effectiveness(column.benchmark, mine):.3f}", _n(mine)] if mine
                        else ["—", "—"])
            rows.append(row + [_shown(_paper_table5(variant), 2)])
        shown = [r for c in columns for rs in cells[c].values() for r in rs]
        title = "InstructRAG ablations (Table 5 layout)" + (f" @{model}" if model else "")
        tables.append(Table.of(title, headers, rows,
                               [TABLE5_NOTE, _counts(shown), PAPER_NOTE.format("row")]))
    return tables


def _paper_table5(variant: Variant) -> Optional[float]:
    """The paper's F1 of a variant it ran: one switch off (or none), its delta and K."""
    if variant.config_hash or variant.delta is not None or variant.k_paths is not None:
        return None
    return PAPER_TABLE5.get(variant.off)


def _stage(stages: Sequence[dict[str, Any]], key: str) -> Optional[float]:
    values = [float(s[key]) for s in stages if isinstance(s.get(key), (int, float))]
    return fmean(values) if values else None


def _calls(firsts: Sequence[EpisodeRecord], role: str) -> Optional[float]:
    """Mean over streams of the calls made under `role` in `prepare` (counted in the
    stream's first record, the one that carries the stages)."""
    if not firsts:
        return None
    return fmean(r.llm_usage[role].calls if role in r.llm_usage else 0 for r in firsts)


def _preparations(records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    """The records that carry the stages of a preparation made for them: a stream's first,
    or a shard's. A record whose stream loaded an artifact made elsewhere (extra.prepared
    reused) carries its stages but none of its LLM calls, so it is left out while a record
    that made one is there."""
    carrying = [r for r in records if isinstance(r.extra.get(STAGES_KEY), dict)]
    made = [r for r in carrying
            if not (isinstance(r.extra.get("prepared"), dict) and r.extra["prepared"].get("reused"))]
    return made or carrying


def _table6_rows(column: Column, points: list[tuple[Variant, list[EpisodeRecord]]]) -> list[list[str]]:
    firsts = [_preparations(rs) for _, rs in points]
    stages = [[r.extra[STAGES_KEY] for r in f] for f in firsts]
    measure = f"effectiveness ({_measure(column.benchmark)})"
    lines: list[tuple[str, list[Optional[float]], int]] = [
        (measure, [effectiveness(column.benchmark, rs) for _, rs in points], 3),
        ("scored episodes", [float(len(rs)) for _, rs in points], 0),
        ("preparations", [float(len(f)) for f in firsts], 0),
        ("construction (s)", [_stage(s, "construction_s") for s in stages], 2),
        ("training (s)", [_stage(s, "training_s") for s in stages], 1),
        ("few-shot (s)", [_stage(s, "few_shot_s") for s in stages], 1),
        ("testing (s per episode)", [fmean(r.wall_s for r in rs) for _, rs in points], 2),
        ("LLM calls, training", [_calls(f, TRAIN_ROLE) for f in firsts], 0),
        ("LLM calls, few-shot", [_calls(f, FEW_SHOT_ROLE) for f in firsts], 0),
        ("graph nodes", [_stage(s, "graph_nodes") for s in stages], 0),
        ("graph edges", [_stage(s, "graph_edges") for s in stages], 0),
        (f"paper F1 ({PAPER_ABLATIONS})", [_paper_table6(v, 0) for v, _ in points], 2),
        (f"paper # of nodes ({PAPER_ABLATIONS})", [_paper_table6(v, 1) for v, _ in points], 0),
    ]
    return [[name] + [_shown(v, digits) for v in values] for name, values, digits in lines]


def _paper_table6(variant: Variant, index: int) -> Optional[float]:
    """The paper's Table 6 value at the variant's delta (index 0: F1, 1: # of nodes)."""
    if variant.config_hash:
        return None
    paper = PAPER_TABLE6.get(variant.delta if variant.delta is not None else DEFAULT_DELTA)
    return None if paper is None else float(paper[index])


def table6(records: Sequence[EpisodeRecord]) -> list[Table]:
    """Per benchmark split, setting and model: a column per delta of the full InstructRAG."""
    tables = []
    for column, by_variant in sorted(_cells(records).items(),
                                     key=lambda kv: (kv[0].name, kv[0].model or "")):
        points = sorted(((v, rs) for v, rs in by_variant.items() if v.full),
                        key=lambda p: p[0].order())
        if not points:
            continue
        title = (f"InstructRAG by delta (Table 6 layout), {column.name}"
                 + (f" @{column.model}" if column.model else ""))
        shown = [r for _, rs in points for r in rs]
        tables.append(Table.of(title, ["delta"] + [v.delta_label for v, _ in points],
                               _table6_rows(column, points),
                               [TABLE6_NOTE, _counts(shown), PAPER_NOTE.format("delta")]))
    return tables


def table7(records: Sequence[EpisodeRecord]) -> list[Table]:
    """Where K was varied: per benchmark split, setting and model, a column per K of the
    full InstructRAG at the paper's delta."""
    tables = []
    for column, by_variant in sorted(_cells(records).items(),
                                     key=lambda kv: (kv[0].name, kv[0].model or "")):
        points = sorted(((v, rs) for v, rs in by_variant.items()
                         if not v.config_hash and not v.off and v.delta is None),
                        key=lambda p: p[0].order())
        if not any(v.k_paths is not None for v, _ in points):
            continue
        ks = [Hyper.k_paths if v.k_paths is None else v.k_paths for v, _ in points]
        lines: list[tuple[str, list[Optional[float]], int]] = [
            (f"effectiveness ({_measure(column.benchmark)})",
             [effectiveness(column.benchmark, rs) for _, rs in points], 3),
            ("scored episodes", [float(len(rs)) for _, rs in points], 0),
            ("testing (s per episode)", [fmean(r.wall_s for r in rs) for _, rs in points], 2),
            (f"paper F1 ({PAPER_ABLATIONS})",
             [PAPER_TABLE7[k][0] if k in PAPER_TABLE7 else None for k in ks], 2),
            (f"paper testing (s) ({PAPER_ABLATIONS})",
             [PAPER_TABLE7[k][1] if k in PAPER_TABLE7 else None for k in ks], 2),
        ]
        title = (f"InstructRAG by K (Table 7 layout), {column.name}"
                 + (f" @{column.model}" if column.model else ""))
        shown = [r for _, rs in points for r in rs]
        tables.append(Table.of(title, ["K"] + [str(k) for k in ks],
                               [[name] + [_shown(v, digits) for v in values]
                                for name, values, digits in lines],
                               ["testing: wall seconds per scored episode", _counts(shown),
                                PAPER_NOTE.format("K")]))
    return tables


# -- Tables 1 and 2: InstructRAG beside the other methods on the same splits


@dataclass(frozen=True)
class Comparison:
    """What Tables 1 and 2 differ in."""

    benchmark: str
    title: str
    measure: str  # the header of our number
    cited: str  # the paper's column, e.g. "paper (ALFWorld, GLM-4)"
    paper: dict[str, tuple[float, ...]]
    # The benchmark InstructRAG's rows must have trained on (Table 2's transfer); None: any.
    trained_on: Optional[str] = None
    notes: tuple[str, ...] = ()


TABLE1 = Comparison(
    "alfworld", "InstructRAG Table 1 (ALFWorld, unseen tasks)", "SR (%)", "paper (ALFWorld, {})",
    PAPER_TABLE1,
    notes=("SR (%): success rate, the paper's measure",
           "paper (ALFWorld, <backbone>): the paper's Table 1, success rate (%) on ALFWorld's "
           "unseen tasks, cited: its backbones, not our model; its WKM and GenGround have no "
           "method here; its Reflexion row has one (`--method reflexion`) but the Table 1 "
           "spec does not run it, so the row shows only where the results hold Reflexion's"))
TABLE2 = Comparison(
    "scienceworld", f"InstructRAG Table 2, {TRANSFER}", "score (x100)",
    "paper (HotpotQA → ScienceWorld, {})", PAPER_TABLE2, trained_on="alfworld",
    notes=(f"{TRANSFER}: InstructRAG trained on ALFWorld (train_benchmark=alfworld), then "
           "adapted on the test tasks' few-shot support; ReAct and RAP as they ran on the split",
           "score (x100): the mean score scaled to [0, 1] (the paper's measure), times 100 as "
           "the paper prints it",
           "paper (HotpotQA → ScienceWorld, <backbone>): the paper's Table 2, trained on "
           "HotpotQA, cited: its training data and backbones, not ours; it has no ReAct row"))
ROWS_NOTE = ("the measure and its 95% CI: the leaderboard's, the instance as the unit (each "
             "instance's seeds averaged; Wilson's on the bounded mean, cluster-robust where "
             "instances share a task family); n: instances, with the scored episodes behind "
             "them where they differ (one per instance and seed: its first trial, the paper's "
             "one attempt per task); seeds: the row's")
# Why an InstructRAG record is not a row of Table 1 or 2.
ABLATION = "ablations or changed delta/K (Tables 5-7)"
NOT_TRANSFER = "not trained on ALFWorld (extra.instructrag_args lacks train_benchmark=alfworld)"


class Pick(NamedTuple):
    label: str  # its row, "" when left out
    cited: bool  # the paper's numbers apply to the row (the paper's method, no context)
    left_out: str = ""  # why not


def _pick(record: EpisodeRecord, trained_on: Optional[str]) -> Pick:
    """A record's row of Table 1 or 2: the other methods' by name; InstructRAG's by its
    setting (the paper's variant only), or by its config hash where its args are unknown."""
    context = f" + {record.context}" if record.context else ""
    if record.method != METHOD:
        return Pick(record.method + context, not context)
    args = record.extra.get(ARGS_KEY)
    if not isinstance(args, dict):
        if trained_on:  # never guessed to be the transfer
            return Pick("", False, NOT_TRANSFER)
        return Pick(f"{METHOD}, {Variant(config_hash=record.method_config_hash).label}{context}",
                    False)
    if _read(record)[0] != Variant():
        return Pick("", False, ABLATION)
    if trained_on and args.get("train_benchmark") != trained_on:
        return Pick("", False, NOT_TRANSFER)
    setting = [s for s in _setting(args) if s != f"train_benchmark={trained_on}"]
    return Pick(METHOD + (f" [{', '.join(setting)}]" if setting else "") + context, not context)


@dataclass
class Row:
    split: str  # with an asked budget
    label: str
    method: str
    cited: bool
    records: list[EpisodeRecord] = field(default_factory=list)


def _rows(records: Sequence[EpisodeRecord], spec: Comparison
          ) -> tuple[dict[str, list[Row]], Counter]:
    """Per model, the rows (one episode per instance and seed), in the paper's order of
    methods on each split; and the InstructRAG episodes left out, by (model, reason)."""
    arms: dict[str, dict[tuple, Row]] = defaultdict(dict)
    left_out: Counter = Counter()
    for r in records:
        if not r.is_result or r.benchmark != spec.benchmark:
            continue
        pick = _pick(r, spec.trained_on)
        if pick.left_out:
            left_out[(r.model or "", pick.left_out)] += 1
            continue
        split = ", ".join([r.split] + _budget(r))
        key = (split, pick.label, r.method, r.method_config_hash, r.method_version)
        row = arms[r.model or ""].setdefault(key, Row(split, pick.label, r.method, pick.cited))
        row.records.append(r)
    order = {"react": 0, "reflexion": 1, "rap": 2, METHOD: 4}  # the paper's; others before ours
    out = {}
    for model, by_key in arms.items():
        # two configs (or versions) of a method on a split: told apart by their hash
        named = Counter((row.split, row.label) for row in by_key.values())
        for (_, _, _, config_hash, version), row in by_key.items():
            if named[(row.split, row.label)] > 1:
                row.label += f" [{config_hash[:6]} v{version}]"
            row.records = aggregate_trials(row.records, SCORED_TRIAL)
        out[model] = sorted(by_key.values(),
                            key=lambda row: (row.split, order.get(row.method, 3), row.label))
    return out, left_out


def _estimate(row: Row, benchmark: str) -> Any:
    """The leaderboard's estimate of the row's measure (its grid's): the instance as the
    unit (seeds averaged within it), cluster-robust where instances share a task family."""
    return instance_estimate(row.records, lambda r: _measures(benchmark, [r])[0], (0.0, 1.0))


def _paired(benchmark: str, a: Row, b: Row) -> Optional[ArmComparison]:
    """Our test, the leaderboard's: paired over the instances both rows played, each
    instance's seeds averaged first (`lifebench.api.comparison`)."""
    xs = records_sample(a.records, lambda r: _measures(benchmark, [r])[0])
    ys = records_sample(b.records, lambda r: _measures(benchmark, [r])[0])
    if not set(xs.values) & set(ys.values):
        return None
    return compare_arms(xs, ys, binary=benchmark not in SCORE_MAX)


def _unpaired(benchmark: str, a: Row, b: Row) -> TestResult:
    """The paper's "t-test with p < 0.05" (§5.1), which it does not specify: two samples of
    per-episode measures; Welch's, because methods of different success rates have
    different variances. Labelled as the paper's: it counts episodes, not instances."""
    return welch_t(_measures(benchmark, a.records), _measures(benchmark, b.records))


def _significance(spec: Comparison, model: str, rows: list[Row]) -> Optional[Table]:
    pairs = [(a, b) for a in rows if a.method == METHOD
             for b in rows if b.method != METHOD and b.split == a.split]
    if not pairs:
        return None
    ours = [_paired(spec.benchmark, a, b) for a, b in pairs]
    theirs = [_unpaired(spec.benchmark, a, b) for a, b in pairs]
    holm = adjust([math.nan if c is None else c.result.p for c in ours], "holm")
    lines = []
    for (a, b), mine, adjusted, paper in zip(pairs, ours, holm, theirs):
        lines.append([a.split, f"{a.label} vs {b.label}",
                      "no shared instance" if mine is None else mine.result.test,
                      0 if mine is None else mine.result.n,
                      _p(math.nan if mine is None else mine.result.p),
                      _p(adjusted), paper.test, f"{len(a.records)}, {len(b.records)}",
                      _shown(paper.statistic, 2), _p(paper.p),
                      "—" if math.isnan(paper.p) else ("yes" if paper.p < SIGNIFICANT else "no")])
    title = f"{spec.title}: significance" + (f" @{model}" if model else "")
    return Table.of(title, ["split", "comparison", "ours (paired)", "instances", "ours p",
                            "ours p (Holm)", "paper's test: t-test (unpaired, p < 0.05)",
                            "n a, n b (episodes)", "t", "paper's p", "paper's p < 0.05"], lines, [
        "ours (paired): the leaderboard's rule, the instance as the unit: each row's seeds "
        "averaged per instance, then paired over the instances both rows played: McNemar's "
        "exact test of success where each instance has one outcome, else the sign-flip "
        "permutation test; two-sided; p Holm-adjusted across this table's comparisons",
        "paper's test: Welch's two-sample t-test of the per-episode "
        "measures, two-sided; the paper says only that every result is significant \"by a "
        "t-test with p < 0.05\" (§5.1) and gives no p-values",
        _counts([r for row in rows for r in row.records])])


def paper_comparison(records: Sequence[EpisodeRecord], spec: Comparison) -> list[Table]:
    """Per model: a row per method on each split of the benchmark (InstructRAG's only where
    it is the paper's), with its interval, n and seeds and the paper's numbers beside; then
    InstructRAG against each other method, by our paired test and by the paper's."""
    by_model, left_out = _rows(records, spec)
    tables = []
    for model, rows in sorted(by_model.items()):
        # the other methods alone: a table only to say why InstructRAG's episodes are not in it
        if not any(row.method == METHOD for row in rows) \
                and not any(where == model for where, _ in left_out):
            continue
        lines = []
        for row in rows:
            estimate = _estimate(row, spec.benchmark)
            paper = spec.paper.get(row.method) if row.cited else None
            lines.append([row.split, row.label, f"{100 * estimate.mean:.2f}",
                          f"[{_shown(100 * estimate.low, 1)}, {_shown(100 * estimate.high, 1)}]",
                          estimate.n_label, len({r.seed for r in row.records}),
                          *(_shown(v, 2) for v in (paper or (None,) * len(BACKBONES)))])
        shown = [r for row in rows for r in row.records]
        notes = [*spec.notes, ROWS_NOTE, _counts(shown)]
        agreement = agreement_note(
            (f"{row.split} {row.label}",
             records_sample(row.records, lambda r: _measures(spec.benchmark, [r])[0]))
            for row in rows)
        notes += [agreement] if agreement else []
        notes += [f"left out: {_many(count, METHOD + ' episode')}, {reason}"
                  for (where, reason), count in sorted(left_out.items()) if where == model]
        title = spec.title + (f" @{model}" if model else "")
        tables.append(Table.of(title, ["split", "method", spec.measure, "95% CI", "n", "seeds",
                                       *(spec.cited.format(b) for b in BACKBONES)], lines, notes))
        significance = _significance(spec, model, rows)
        if significance:
            tables.append(significance)
    return tables


def table1(records: Sequence[EpisodeRecord]) -> list[Table]:
    return paper_comparison(records, TABLE1)


def table2(records: Sequence[EpisodeRecord]) -> list[Table]:
    return paper_comparison(records, TABLE2)


def instructrag_tables(records: Sequence[EpisodeRecord]) -> list[Table]:
    return table1(records) + table2(records) + table5(records) + table6(records) + table7(records)
