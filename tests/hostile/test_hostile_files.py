"""Files read back from disk that a crash, a damaged disk, a hand edit or a stranger may have
changed: records, manifests, trajectories, saved states, price tables. A records line that
is not a record is one line naming file:line, exit 2, and nothing is rewritten; a manifest
or a trajectory that cannot be read is set aside or left out with one line; the run and the
site go on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT, one_line_error
from lifebench.testing import run_cli

DEEP = "[" * 100_000 + "]" * 100_000
REFERENCE = (ROOT / "results" / "reference" / "episodes.jsonl").read_text().splitlines()


def changed(record: str, **fields) -> str:
    data = json.loads(record)
    data.update(fields)
    return json.dumps(data)


# A second line of episodes.jsonl that is not a record, and what the one error line says.
BAD_LINES = {
    "nested 100,000 deep": (DEEP.encode(), "the JSON parser gave up"),
    "not UTF-8": (b"\x00\x00garbage\xff\xfe", "not UTF-8 text (byte 9)"),
    "a field of the wrong type": (changed(REFERENCE[1], steps="many").encode(), "field 'steps'"),
    "a 5,001-digit number": (changed(REFERENCE[1], steps=987654321)
                             .replace("987654321", "1" + "0" * 5000).encode(), "5001 digits"),
    "not an object": (b"[1, 2, 3]", "not a valid episode record"),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_a_bad_records_line_is_one_line_naming_it(tmp_path, case):
    line, reason = BAD_LINES[case]
    out = tmp_path / "results"
    out.mkdir()
    (out / "episodes.jsonl").write_bytes(b"\n".join([REFERENCE[0].encode(), line,
                                                     REFERENCE[1].encode()]) + b"\n")
    before = (out / "episodes.jsonl").read_bytes()
    error = one_line_error(run_cli("leaderboard", str(out), "--no-plots", cwd=ROOT),
                           f"{out / 'episodes.jsonl'}:2: not a valid episode record", reason)
    assert "Traceback" not in error
    assert (out / "episodes.jsonl").read_bytes() == before  # nothing rewritten


def test_a_torn_deep_tail_is_a_torn_line_not_a_crash(tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    (out / "episodes.jsonl").write_text(REFERENCE[0] + "\n" + DEEP)  # no newline: a torn write
    result = run_cli("leaderboard", str(out), "--no-plots", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert json.loads(REFERENCE[0])["method"] in result.stdout


def small_run(out: Path, limit: int = 1):
    return run_cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val.small",
                   "--method", "random", "--limit", str(limit), "--out", str(out))


def test_unreadable_manifests_and_trajectories_are_set_aside_and_the_run_goes_on(tmp_path):
    out = tmp_path / "results"
    assert small_run(out).returncode == 0
    (out / "manifest.json").write_text("{" * 100_000)
    [trajectory] = (out / "trajectories").iterdir()
    with trajectory.open("a") as f:
        f.write(DEEP + "\n" + "\x00garbage\n")
    # export needs the manifest: one line, no archive
    one_line_error(run_cli("export", "--submission", str(tmp_path / "s.tar.gz"), str(out)),
                   f"{out / 'manifest.json'} is unreadable", "its records are intact")
    assert not (tmp_path / "s.tar.gz").exists()
    # the site is built without the runs' settings, and says so once; the bad lines are skipped
    site = run_cli("view", str(out), "--output", str(tmp_path / "site"))
    assert site.returncode == 0, site.stderr
    assert [line for line in site.stderr.splitlines() if "manifest.json" in line] == [
        f"note: {out / 'manifest.json'} is unreadable (Expecting property name enclosed in "
        f"double quotes: line 1 column 2 (char 1)): the runs' settings (refused cells, baseline, "
        f"smoke scale) are left out"]
    # the next run keeps the unreadable manifest aside, starts a new one and plays on
    resumed = small_run(out, limit=2)
    assert resumed.returncode == 0, resumed.stderr
    assert f"note: {out / 'manifest.json'} is unreadable" in resumed.stderr
    assert (out / "manifest.json.corrupt").read_text() == "{" * 100_000
    assert len(json.loads((out / "manifest.json").read_text())["runs"]) == 1
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 2


def test_a_deep_saved_state_and_a_deep_price_table_are_one_line(tmp_path):
    from lifebench.api import UserError
    from lifebench.llm.prices import load_prices
    from lifebench.store.results import ResultsStore

    store = ResultsStore(tmp_path)
    store.state_path("s", 0).parent.mkdir(parents=True)
    store.state_path("s", 0).write_text(DEEP)
    with pytest.raises(UserError, match="saved method state .* is corrupt; delete"):
        store.read_state("s", 0)
    prices = tmp_path / "prices.json"
    prices.write_text(DEEP)
    with pytest.raises(UserError, match="expected a JSON file like"):
        load_prices(str(prices))
