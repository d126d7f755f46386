"""InstructRAG's tables from its own records: the paper's Table 5 (ablations) and Table 6
(by delta, with the stages' runtimes). Tables 1 and 2 compare methods, which a method's
tables never see: they are the leaderboard's methods x models table (README.md).

What a record says of its config is `extra.instructrag_args` (`recorded_args`: the args that
differ from the defaults). Of those, the Switches turned off and `delta`/`k_paths` make the
variant (a row of Table 5, a column of Table 6); the others (train_benchmark, support_limit,
...) and a budget asked make the setting, named with the benchmark split it ran on. A record
that does not say its args is shown as its config hash, never guessed from its counters.

Effectiveness is the paper's measure: ALFWorld's success rate; ScienceWorld's score, which
the paper reports in [0, 1] (ours is the simulator's 0-100), scaled by its maximum.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, fields
from statistics import fmean
from typing import Any, Optional, Sequence

from lifebench.api import EpisodeRecord, Table
from lifebench.methods.instructrag.training import Hyper, Switches

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
TABLE5_NOTE = ("SR: success rate; score/100: mean score scaled to [0, 1] (the paper's "
               "measures); n: scored episodes")
TABLE6_NOTE = ("stages (seconds, LLM calls, graph after the few-shot stage): the first record "
               "of each stream, mean over streams; testing: wall seconds per scored episode "
               "(prepare is not in them); the paper gives training in hours and few-shot in "
               "minutes per task")


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


def _read(record: EpisodeRecord) -> tuple[Variant, Column]:
    args = record.extra.get(ARGS_KEY)
    budget = [] if record.budget is None else [f"budget {record.budget}"]
    if not isinstance(args, dict):
        return (Variant(config_hash=record.method_config_hash),
                Column(record.benchmark, record.split, ", ".join(budget), record.model))
    off = tuple(name for name in SWITCHES if args.get(name) is False)
    delta, k_paths = args.get("delta"), args.get("k_paths")
    setting = [f"{k}={v}" for k, v in sorted(args.items())
               if k not in SWITCHES and k not in ("delta", "k_paths")]
    return (Variant(off, None if delta is None else float(delta),
                    None if k_paths is None else int(k_paths)),
            Column(record.benchmark, record.split, ", ".join(setting + budget), record.model))


Cells = dict[Column, dict[Variant, list[EpisodeRecord]]]


def _cells(records: Sequence[EpisodeRecord]) -> Cells:
    cells: Cells = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.is_result:
            variant, column = _read(r)
            cells[column][variant].append(r)
    return cells


def _measure(benchmark: str) -> str:
    return "score/100" if benchmark in SCORE_MAX else "SR"


def effectiveness(benchmark: str, records: Sequence[EpisodeRecord]) -> float:
    """The paper's measure over `records` (not empty): success rate, or the mean score scaled
    to [0, 1]."""
    if benchmark in SCORE_MAX:
        return fmean(r.score for r in records) / SCORE_MAX[benchmark]
    return fmean(r.success for r in records)


def _shown(value: Optional[float], digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def table5(records: Sequence[EpisodeRecord]) -> list[Table]:
    """Per model: a row per variant, per benchmark split (and setting) its effectiveness
    and episodes."""
    cells = _cells(records)
    tables = []
    for model in sorted({c.model or "" for c in cells}):
        columns = sorted((c for c in cells if (c.model or "") == model), key=lambda c: c.name)
        variants = sorted({v for c in columns for v in cells[c]}, key=Variant.order)
        headers = ["variant"] + [h for c in columns for h in (f"{c.name} {_measure(c.benchmark)}", "n")]
        rows = []
        for variant in variants:
            row = [variant.label]
            for column in columns:
                mine = cells[column].get(variant, [])
                row += ([f"{effectiveness(column.benchmark, mine):.3f}", len(mine)] if mine
                        else ["—", "—"])
            rows.append(row)
        title = "InstructRAG ablations (Table 5 layout)" + (f" @{model}" if model else "")
        tables.append(Table.of(title, headers, rows, [TABLE5_NOTE]))
    return tables


def _stage(stages: Sequence[dict[str, Any]], key: str) -> Optional[float]:
    values = [float(s[key]) for s in stages if isinstance(s.get(key), (int, float))]
    return fmean(values) if values else None


def _calls(firsts: Sequence[EpisodeRecord], role: str) -> Optional[float]:
    """Mean over streams of the calls made under `role` in `prepare` (counted in the
    stream's first record, the one that carries the stages)."""
    if not firsts:
        return None
    return fmean(r.llm_usage[role].calls if role in r.llm_usage else 0 for r in firsts)


def _table6_rows(column: Column, points: list[tuple[Variant, list[EpisodeRecord]]]) -> list[list[str]]:
    firsts = [[r for r in rs if isinstance(r.extra.get(STAGES_KEY), dict)] for _, rs in points]
    stages = [[r.extra[STAGES_KEY] for r in f] for f in firsts]
    measure = f"effectiveness ({_measure(column.benchmark)})"
    lines: list[tuple[str, list[Optional[float]], int]] = [
        (measure, [effectiveness(column.benchmark, rs) for _, rs in points], 3),
        ("scored episodes", [float(len(rs)) for _, rs in points], 0),
        ("streams with stages", [float(len(f)) for f in firsts], 0),
        ("construction (s)", [_stage(s, "construction_s") for s in stages], 2),
        ("training (s)", [_stage(s, "training_s") for s in stages], 1),
        ("few-shot (s)", [_stage(s, "few_shot_s") for s in stages], 1),
        ("testing (s per episode)", [fmean(r.wall_s for r in rs) for _, rs in points], 2),
        ("LLM calls, training", [_calls(f, TRAIN_ROLE) for f in firsts], 0),
        ("LLM calls, few-shot", [_calls(f, FEW_SHOT_ROLE) for f in firsts], 0),
        ("graph nodes", [_stage(s, "graph_nodes") for s in stages], 0),
        ("graph edges", [_stage(s, "graph_edges") for s in stages], 0),
    ]
    return [[name] + [_shown(v, digits) for v in values] for name, values, digits in lines]


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
        tables.append(Table.of(title, ["delta"] + [v.delta_label for v, _ in points],
                               _table6_rows(column, points), [TABLE6_NOTE]))
    return tables


def instructrag_tables(records: Sequence[EpisodeRecord]) -> list[Table]:
    return table5(records) + table6(records)
