"""Results and context files from outside (a stranger's directory, a damaged disk): a line
nested 100,000 deep or a context file that is not one is refused in one line naming where,
exit 2, and the other records stay as they were."""

from __future__ import annotations

import json

from conftest import ROOT
from lifebench.testing import run_cli

DEEP = "[" * 100_000 + "]" * 100_000


def test_a_deeply_nested_records_line_is_one_line_naming_it(tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    reference = (ROOT / "results" / "reference" / "episodes.jsonl").read_text().splitlines()
    (out / "episodes.jsonl").write_text("\n".join([reference[0], DEEP, reference[1]]) + "\n")
    before = (out / "episodes.jsonl").read_bytes()
    result = run_cli("leaderboard", str(out), "--no-plots", cwd=ROOT)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert f"{out / 'episodes.jsonl'}:2: not a valid episode record" in line
    assert (out / "episodes.jsonl").read_bytes() == before  # nothing rewritten


def test_a_torn_deep_tail_is_a_torn_line_not_a_crash(tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    first = (ROOT / "results" / "reference" / "episodes.jsonl").read_text().splitlines()[0]
    (out / "episodes.jsonl").write_text(first + "\n" + DEEP)  # no newline: a crash's torn write
    result = run_cli("leaderboard", str(out), "--no-plots", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert json.loads(first)["method"] in result.stdout
