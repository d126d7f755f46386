"""The time of a sandboxed plan (issue 61: within 1.1x of the revision before it): a fresh
confined child per plan, a plan of 50 actions each answered, then its end; in this tree
("after") and in an older revision ("before", by default the commit before issue 61), in
alternating rounds in fresh processes so that both see the same machine.

    python tests/perf/perf_sandbox_plan.py [--before REV] [--rounds 5] [--plans 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf_leaderboard_stats import old_tree  # noqa: E402

BEFORE = "29ec669"  # the commit before issue 61's sandbox changes

MEASURED = """
import sys, time
from lifebench.methods.automanual.api import GENERIC
from lifebench.methods.automanual.sandbox import ActionRequest, CodeProcess, SandboxLimits
plans = int(sys.argv[1])
started = time.perf_counter()
for _ in range(plans):
    process = CodeProcess(GENERIC.action_names, {}, [], SandboxLimits(timeout_s=20))
    assert process.run("for i in range(50):\\n    agent.act('look')\\nprint('done')") is None
    while isinstance(event := process.next_event(), ActionRequest):
        process.answer("you see a room")
    assert event.printed == "done\\n", event
    process.close()
print(time.perf_counter() - started)
"""


def measure(plans: int, pythonpath: str | None) -> float:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    else:
        env.pop("PYTHONPATH", None)
    out = subprocess.run([sys.executable, "-c", MEASURED, str(plans)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--plans", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lifebench-perf-sandbox-") as tmp:
        before = str(old_tree(args.before, Path(tmp) / "before"))
        runs: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(args.rounds):
            runs["before"].append(measure(args.plans, before))
            runs["after"].append(measure(args.plans, None))
        median = {side: statistics.median(times) for side, times in runs.items()}
        for side in ("before", "after"):
            print(f"{args.plans} sandboxed plans of 50 actions, {side:<6} {median[side]:6.2f} s "
                  f"(per plan {1000 * median[side] / args.plans:.0f} ms; rounds: "
                  f"{', '.join(f'{t:.2f}' for t in runs[side])})")
        ratio = median["after"] / median["before"]
        print(f"after / before: {ratio:.2f} (target <= 1.1): {'met' if ratio <= 1.1 else 'MISSED'}")


if __name__ == "__main__":
    main()
