"""The results site at 100,000 episodes: how long `lifebench view` takes to write it, and,
in headless Chromium from file://, how long the page takes to be usable and a filter of
the episode list to answer.

A synthetic results directory is written with lifebench's own records (`EpisodeRecord`,
`EpisodeTrajectory`, `RunManifest`): four benchmarks (Plancraft, ALFWorld, ScienceWorld,
TextWorld) x five arms (random, oracle, ReAct on two models, Reflexion) x 5 seeds x 1,000
instances, with task families, LLM tokens and costs, the benchmarks' own extras, 1% of
infrastructure failures (half resolved by a retry) and a short trajectory per episode.

Measured (median of --rounds page loads; performance.now() in the page, from navigation):
  first render   the leaderboard drawn (index.html, summary and scripts parsed),
  usable         the episode index (100,000 rows) loaded and the page redrawn,
  episodes page  opened directly at #episodes: the list drawn over every episode,
  filters        a select changed -> the list redrawn (and the next frame painted),
  episode        a row clicked -> its stream file loaded and its steps drawn.
Targets: usable in under 2 s, a filter in under 200 ms.

    python tests/perf/perf_view.py [--episodes-per-stream 1000] [--rounds 5] [--keep DIR]
                                   [--screenshots DIR]   (the README's docs/site-*-100k.png)
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/browser.py

from browser import Chromium  # noqa: E402
from lifebench.api.records import (EpisodeRecord, EpisodeTrajectory, RunManifest, Status,  # noqa: E402
                                   TrajectoryStep)
from lifebench.leaderboard.site import build_site  # noqa: E402
from lifebench.leaderboard.site.episodes import stream_id  # noqa: E402

BENCHMARKS = {  # name: (split, budget, families, success rate of a good arm)
    "plancraft": ("val", 30, [f"item_{i}" for i in range(200)], 0.7),
    "alfworld": ("valid_unseen", 50, ["pick_and_place", "pick_two", "look_at", "heat", "cool", "clean"], 0.5),
    "scienceworld": ("step18", 40, [f"{t}-{i}" for t in range(1, 11) for i in range(1, 3)][:18], 0.4),
    "textworld": ("ige-cooking", 80, [None], 0.6),
}
ARMS = [("random", "d78e0ed24e5c", None, 0.05, 0), ("oracle", "47040444edf0", None, 0.98, 0),
        ("react", "1111aaaa2222", "model-a", 0.45, 900), ("react", "1111aaaa2222", "model-b", 0.55, 1400),
        ("reflexion", "3333bbbb4444", "model-a", 0.6, 1800)]


def extra_of(benchmark: str, rng: random.Random, success: bool) -> dict:
    if benchmark == "plancraft":
        truth = rng.random() < 0.1
        return {"impossible_truth": truth, "impossible_predicted": truth if rng.random() < 0.8 else not truth}
    if benchmark == "textworld":
        return {"max_score": 17, "normalized_score": 1.0 if success else round(rng.random() * 0.8, 3)}
    return {}


def write_results(out: Path, per_stream: int, seeds: int = 5) -> int:
    rng = random.Random(0)
    (out / "trajectories").mkdir(parents=True)
    count, streams = 0, []
    with open(out / "episodes.jsonl", "w") as records:
        for benchmark, (split, budget, families, good) in BENCHMARKS.items():
            for method, config, model, skill, tokens in ARMS:
                for seed in range(seeds):
                    first = None
                    lines = []
                    for position in range(per_stream):
                        family = families[position % len(families)]
                        success = rng.random() < skill * (good / 0.6 if method not in ("random", "oracle") else 1)
                        steps = rng.randint(3, budget - 1) if success else budget
                        calls = steps if tokens else 0
                        record = EpisodeRecord(
                            run_id="synthetic", benchmark=benchmark, split=split,
                            instance_id=f"{benchmark[:4]}-{position:05d}", method=method,
                            method_config_hash=config, model=model, seed=seed, trial=0,
                            episode_index=position, budget_steps=budget, steps=steps, success=success,
                            score=float(success) if benchmark != "scienceworld" else (100.0 if success else rng.randint(0, 90)),
                            status=Status.OK if success else Status.BUDGET_EXHAUSTED,
                            llm_calls=calls, tokens_in=calls * tokens, tokens_out=calls * tokens // 20,
                            wall_s=round(rng.random() * 3, 3), harness_version="0.1.0",
                            extra=extra_of(benchmark, rng, success), task_family=family,
                            success_step=steps if success else None,
                            cost_usd=round(calls * tokens * 2.5e-6, 6) if tokens else None)
                        if rng.random() < 0.01:  # an infrastructure failure, resolved by a retry half the time
                            failed = EpisodeRecord(**{**record.__dict__, "status": Status.ENV_ERROR,
                                                      "success": False, "score": 0.0, "success_step": None,
                                                      "error": "EnvError: simulated crash"})
                            records.write(failed.to_json() + "\n")
                            if rng.random() < 0.5:
                                record = EpisodeRecord(**{**record.__dict__, "attempt": 1})
                            else:
                                record = None
                        count += 1  # an episode: its result, or its failure when no retry resolved it
                        if record is None:
                            continue
                        records.write(record.to_json() + "\n")
                        first = first or record
                        shown = [TrajectoryStep(f"You are in room {position}. You see a table and a door.")]
                        shown += [TrajectoryStep(f"You did thing {k}; nothing else happens.", f"do thing {k}", 0.0)
                                  for k in range(min(steps, 4))]
                        lines.append(json.dumps(EpisodeTrajectory(position, record.instance_id, 0, record.attempt,
                                                                  record.status, tuple(shown)).to_dict()))
                    (out / "trajectories" / f"{stream_id(first)}.jsonl").write_text("\n".join(lines) + "\n")
                    streams.append(stream_id(first))
    manifest = RunManifest(run_id="synthetic", config={"benchmarks": list(BENCHMARKS), "model": "model-a",
                                                      "llm": {"base_url": "http://localhost:8000/v1"}},
                           argv=["lifebench", "run", "specs/synthetic.toml"], executor="local", workers=2,
                           concurrency=1, streams=streams, episodes_total=count, episodes_already_done=0,
                           started_utc="2026-01-01T00:00:00+00:00", packages={"lifebench": "0.1.0"},
                           git_revision=None, git_dirty=None, python="3.11", platform="synthetic", cpu_count=2)
    (out / "manifest.json").write_text(json.dumps({"runs": [manifest.to_dict()]}))
    return count


FILTER_JS = """new Promise(resolve => {
  const s = document.querySelector('#episode-filters select[name=%s]');
  const t0 = performance.now();
  s.value = %s; s.dispatchEvent(new Event('change'));
  requestAnimationFrame(() => setTimeout(() => resolve([performance.now() - t0,
      +document.querySelector('#episode-count').dataset.count,
      +document.querySelector('#episode-count').dataset.ms]), 0));
})"""


def page_load(browser: Chromium, url: str) -> tuple[float, float]:
    page = browser.page()
    try:
        page.goto(url)
        ready = float(page.wait_for("document.documentElement.dataset.readyMs", timeout=60))
        first = float(page.evaluate("document.documentElement.dataset.firstRenderMs"))
        return first, ready
    finally:
        page.close()


def measure(site: Path, rounds: int) -> dict[str, object]:
    url = (site / "index.html").as_uri()
    out: dict[str, object] = {}
    with Chromium() as browser:
        page_load(browser, url)  # warm the disk cache and the browser once
        loads = [page_load(browser, url) for _ in range(rounds)]
        out["first render"] = statistics.median(f for f, _ in loads)
        out["usable"] = statistics.median(r for _, r in loads)
        out["episodes page"] = statistics.median(page_load(browser, url + "#episodes")[1] for _ in range(rounds))
        page = browser.page()
        page.goto(url + "#episodes")
        page.wait_for("document.documentElement.dataset.readyMs", timeout=60)
        filters = []
        for name, value in [("method", "react"), ("benchmark", "alfworld"), ("seed", "3"),
                            ("status", "env_error"), ("status", ""), ("success", "yes"),
                            ("family", "heat"), ("benchmark", ""), ("method", ""), ("seed", ""),
                            ("success", ""), ("family", "")]:
            ms, count, inner = page.evaluate(FILTER_JS % (name, json.dumps(value)), await_promise=True)
            filters.append((f"{name}={value or 'any'}", ms, count, inner))
        out["filters"] = filters
        t0 = time.perf_counter()
        page.evaluate("document.querySelector('table.episodes th').click()")  # sort 100k by benchmark
        page.wait_for("document.querySelector('table.episodes th').getAttribute('aria-sort') === 'ascending'")
        out["sort"] = float(page.evaluate("+document.querySelector('#episode-count').dataset.ms"))
        t0 = time.perf_counter()
        page.evaluate("document.querySelector('table.episodes tbody a').click()")
        page.wait_for("document.querySelectorAll('li.step').length > 1", timeout=60)
        out["episode"] = (time.perf_counter() - t0) * 1000
        assert page.errors() == [], page.errors()
    return out


def screenshots(site: Path, out: Path) -> None:
    with Chromium() as browser:
        page = browser.page(width=1280, height=900)
        for name, route in (("plots-100k", "#plots?group=alfworld%20valid_unseen"),
                            ("episodes-100k", "#episodes?method=react&success=no")):
            page.goto((site / "index.html").as_uri() + route)
            page.wait_for("document.documentElement.dataset.readyMs", timeout=60)
            time.sleep(0.3)
            page.screenshot(out / f"site-{name}.png", full_page=name.startswith("plots"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes-per-stream", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keep", help="write the results and the site here (kept)")
    parser.add_argument("--screenshots", help="also save screenshots of the site into this folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lifebench-perf-view-") as tmp:
        base = Path(args.keep) if args.keep else Path(tmp)
        results, site = base / "results", base / "site"
        t0 = time.perf_counter()
        count = write_results(results, args.episodes_per_stream)
        print(f"synthetic results: {count:,} episodes in {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        summary = build_site([results], site)
        index_mb = (site / "data" / "episodes.js").stat().st_size / 1e6
        print(f"lifebench view: {time.perf_counter() - t0:.1f} s, {summary.streams} stream files, "
              f"{summary.bytes / 1e6:.1f} MB of data (episode index {index_mb:.1f} MB)")
        m = measure(site, args.rounds)
        print(f"first render (leaderboard)   {m['first render']:7.0f} ms")
        print(f"usable (episode index ready) {m['usable']:7.0f} ms   target < 2000 ms")
        print(f"#episodes opened directly    {m['episodes page']:7.0f} ms")
        for name, ms, count, inner in m["filters"]:
            print(f"filter {name:<21} {ms:7.1f} ms   ({inner:.1f} ms in the handler; {count:,} episodes)"
                  f"   target < 200 ms")
        print(f"sort 100k by benchmark       {m['sort']:7.1f} ms (in the handler)")
        print(f"open an episode (its stream) {m['episode']:7.0f} ms")
        worst = max(ms for _, ms, _, _ in m["filters"])
        ok = m["usable"] < 2000 and worst < 200
        print("targets met" if ok else "TARGETS MISSED")
        if args.screenshots:
            screenshots(site, Path(args.screenshots))


if __name__ == "__main__":
    main()
