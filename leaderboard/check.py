"""The regression check: is a candidate run significantly worse than a baseline?

Every arm of the baseline (benchmark split, budget, method config, model) is compared with
the same arm of the candidate, one-sided (baseline better), under the instance rule
(`lifebench.api.comparison`: seeds averaged per instance, arms paired over instances):
McNemar's exact test for success where each instance has one outcome, else the sign-flip
permutation test (Fisher / the two-sample permutation test when nothing matches). The
p-values are adjusted together (Holm by default). The check fails when any metric is
significantly worse, or when an arm of the baseline is missing from the candidate. An arm
of n instances can reach one-sided p = 2^-n at best: at n <= 4 (every LLM method's arm of
the reference) no change can be significant, and the exact part catches those.
With a deterministic model (the scripted model) it also compares calls and tokens exactly
(`lifebench.leaderboard.exact`), and fails when one moves beyond its threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from lifebench.api.comparison import compare_arms, n_label
from lifebench.api.records import EpisodeRecord
from lifebench.api.stats import adjust
from lifebench.leaderboard.compare import BINARY_METRICS, format_p, sample_of
from lifebench.leaderboard.exact import ExactRow, exact_differences, shown
from lifebench.leaderboard.grouping import grouped
from lifebench.leaderboard.plugins import sampled_families

DEFAULT_METRICS = ("success", "score")


@dataclass
class CheckRow:
    where: str
    metric: str
    test: str
    n: int  # instances
    baseline: float
    candidate: float
    delta: float
    p: float
    p_adjusted: float = math.nan
    results: int = 0  # the baseline's results behind its n instances

    def worse(self, alpha: float) -> bool:
        return self.delta < 0 and not math.isnan(self.p_adjusted) and self.p_adjusted < alpha


@dataclass
class CheckReport:
    rows: list[CheckRow] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    alpha: float = 0.05
    exact: list[ExactRow] = field(default_factory=list)  # with a deterministic model only

    @property
    def failed(self) -> bool:
        return (bool(self.missing) or any(r.worse(self.alpha) for r in self.rows)
                or any(r.failed for r in self.exact))

    def lines(self) -> list[str]:
        out = [f"{'arm':<60} {'metric':<8} {'n':>18} {'baseline':>9} {'candidate':>9} "
               f"{'delta':>8} {'p':>9} {'p_adj':>9}"]
        for r in self.rows:
            flag = "  WORSE" if r.worse(self.alpha) else ""
            out.append(f"{r.where[:60]:<60} {r.metric:<8} {n_label(r.n, r.results):>18} {r.baseline:>9.4f} "
                       f"{r.candidate:>9.4f} {r.delta:>+8.4f} {format_p(r.p):>9} {format_p(r.p_adjusted):>9}{flag}")
        out += [f"missing from the candidate: {m}" for m in self.missing]
        changed = [r for r in self.exact if r.change != 0]
        out += [r.line() for r in shown(self.exact)]  # each names the method and the metric
        worse = sum(r.worse(self.alpha) for r in self.rows)
        verdict = "FAIL" if self.failed else "ok"
        exact = (f"; exact (deterministic model): {len(changed)} of {len(self.exact)} changed, "
                 f"{sum(r.failed for r in self.exact)} beyond their thresholds") if self.exact else ""
        out.append(f"{verdict}: {worse} significantly worse (one-sided, corrected, alpha "
                   f"{self.alpha:g}) of {len(self.rows)} comparisons; {len(self.missing)} arms "
                   f"missing{exact}")
        return out




def regression_check(baseline: list[EpisodeRecord], candidate: list[EpisodeRecord],
                     metrics: tuple[str, ...] = DEFAULT_METRICS, alpha: float = 0.05,
                     correction: str = "holm",
                     exact_thresholds: Optional[dict[str, float]] = None) -> CheckReport:
    """The statistical check; with `exact_thresholds` (both runs played one deterministic
    model) also the exact differences of calls and tokens (`lifebench.leaderboard.exact`)."""
    report = CheckReport(alpha=alpha)
    if exact_thresholds is not None:
        report.exact = exact_differences(baseline, candidate, exact_thresholds)
    base_groups, cand_groups = grouped(baseline), grouped(candidate)
    for group, arms in sorted(base_groups.items(), key=lambda kv: str(kv[0])):
        for arm, records in sorted(arms.items(), key=lambda kv: str(kv[0])):
            where = (f"{group.benchmark}:{group.split} budget {group.budget} "
                     + arm.label(ambiguous=True, context_ambiguous=True, version_ambiguous=True))
            theirs = cand_groups.get(group, {}).get(arm)
            if not theirs:
                report.missing.append(where)
                continue
            for metric in metrics:
                a, b = sample_of(records, metric), sample_of(theirs, metric)
                if not a.n or not b.n:
                    continue
                c = compare_arms(a, b, metric in BINARY_METRICS, alternative="greater",
                                 families=sampled_families(group.benchmark, [*records, *theirs]))
                report.rows.append(CheckRow(where, metric, c.result.test, c.result.n, c.mean_a,
                                            c.mean_b, c.mean_b - c.mean_a, c.result.p,
                                            results=c.results_a))
    for metric in metrics:  # each metric its own family of tests
        family = [r for r in report.rows if r.metric == metric]
        for row, p in zip(family, adjust([r.p for r in family], correction)):
            row.p_adjusted = p
    return report
