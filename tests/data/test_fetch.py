"""`lifebench data fetch` against a loopback mirror of the upstreams built from this
workspace's data (`../shared/data`, or `$LIFEBENCH_DATA`): the real downloads, checks and
renames, with a fresh HOME and LIFEBENCH_DATA set empty (the per-user cache is the data
home)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from lifebench.api.data import RemoteData
from lifebench.benchmarks.alfworld import AlfworldBenchmark
from lifebench.benchmarks.crafter.reporting import score_file_data
from lifebench.benchmarks.textworld import TextWorldBenchmark
from lifebench.data.download import FetchFailed, Limits, download
from lifebench.data.fetch import fetch
from lifebench.testing import read_records, run_cli
from lifebench.testing.datamirror import MirrorServer, build_mirror, mirror_path

SHARED = Path(os.environ.get("LIFEBENCH_DATA") or ROOT.parent / "shared" / "data").resolve()
HAVE_DATA = all((SHARED / folder).is_dir()
                for folder in ("alfworld/json_2.1.1", "textworld/ige_cooking", "crafter"))


@pytest.fixture(scope="session")
def remotes() -> dict[str, RemoteData]:
    return {"alfworld": AlfworldBenchmark().remote_data(),
            "textworld": TextWorldBenchmark().remote_data(),
            "crafter": score_file_data()}


@pytest.fixture(scope="session")
def mirror_root(tmp_path_factory, remotes) -> Path:
    if not HAVE_DATA:
        pytest.skip(f"the benchmark data to mirror is not at {SHARED} (set LIFEBENCH_DATA)")
    return build_mirror(SHARED, tmp_path_factory.mktemp("mirror"), remotes.values())


@pytest.fixture
def mirror(mirror_root):
    """The mirror on a loopback port of its own: faults and request counts per test."""
    with MirrorServer(mirror_root) as server:
        yield server


def fresh_environment(tmp_path: Path, mirror_url: str, **more: str) -> dict[str, str]:
    """A fresh HOME with nothing in its caches, LIFEBENCH_DATA set empty (the per-user
    cache is the data home), every other data location empty, and the mirror.
    (`ALFWORLD_DATA` names an empty folder: alfworld fails to import when it is "".)"""
    return {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": "", "LIFEBENCH_DATA": "",
            "ALFWORLD_DATA": str(tmp_path / "home" / "no-alfworld-data"),
            "LIFEBENCH_IGE_COOKING": "", "LIFEBENCH_OFFLINE": "", "LIFEBENCH_MIRROR": mirror_url,
            **more}


def data_home(tmp_path: Path) -> Path:
    """The data home under `fresh_environment`."""
    return tmp_path / "home" / ".cache" / "lifebench" / "data"


@pytest.fixture
def in_fresh_home(tmp_path, mirror, monkeypatch) -> Path:
    """This process in `fresh_environment`; the data home."""
    for name, value in fresh_environment(tmp_path, mirror.url).items():
        monkeypatch.setenv(name, value)
    return data_home(tmp_path)


WALKTHROUGH_MISSING = "without a walkthrough"


def lines_by_benchmark(stderr: str) -> dict[str, str]:
    """`lifebench data: NAME: LINE` lines by NAME."""
    out = {}
    for line in stderr.splitlines():
        if line.startswith("lifebench data: "):
            name, _, rest = line[len("lifebench data: "):].partition(": ")
            out[name] = rest
    return out


def test_fetch_verifies_and_runs_and_a_second_fetch_downloads_nothing(tmp_path, mirror):
    env = fresh_environment(tmp_path, mirror.url)
    first = run_cli("data", "fetch", "all", "--print-ready", env=env)
    assert first.returncode == 0, first.stderr
    said = lines_by_benchmark(first.stderr)
    assert said["alfworld"].startswith("fetched 474 file(s)"), said
    assert said["textworld"].startswith("fetched 50 file(s)"), said
    assert {"alfworld", "textworld", "plancraft"} <= set(first.stdout.strip().split(","))
    home = data_home(tmp_path)
    assert not list(home.rglob("*.partial"))
    served = sum(mirror.requests.values())

    out = tmp_path / "out"
    run = run_cli("run", "--no-progress", "--benchmark", "alfworld,textworld", "--method",
                  "oracle", "--limit", "1", "--workers", "0", "--out", str(out), env=env)
    assert run.returncode == 0, run.stderr
    records = read_records(out)
    assert sorted(r["benchmark"] for r in records) == ["alfworld", "textworld"]
    assert all(r["success"] for r in records)

    again = run_cli("data", "fetch", "all", env=env)
    assert again.returncode == 0, again.stderr
    said = lines_by_benchmark(again.stderr)
    assert said["alfworld"].startswith("ready:") and said["textworld"].startswith("ready:")
    assert sum(mirror.requests.values()) == served  # nothing downloaded

    # A game without its walkthrough still runs, but never silently: the run says so in
    # one line and the record names the planner's plan.
    [played] = [r["instance_id"] for r in records if r["benchmark"] == "alfworld"]
    game = home / "alfworld" / "json_2.1.1" / "valid_unseen" / played / "game.tw-pddl"
    content = json.loads(game.read_text())
    del content["walkthrough"]
    game.write_text(json.dumps(content))
    unguided = run_cli("run", "--no-progress", "--benchmark", "alfworld", "--method", "oracle",
                       "--limit", "1", "--workers", "0", "--out", str(tmp_path / "out2"), env=env)
    assert unguided.returncode == 0, unguided.stderr
    warnings = [line for line in unguided.stderr.splitlines() if WALKTHROUGH_MISSING in line]
    assert len(warnings) == 1 and "lifebench data fetch alfworld --force" in warnings[0]
    [record] = read_records(tmp_path / "out2")
    assert record["extra"]["walkthrough"].startswith("missing")


def test_old_and_unguided_alfworld_games_are_named_with_the_fix(tmp_path, mirror):
    """An upstream folder (`ALFWORLD_DATA`) with a game of alfworld before 0.4.0 and one
    without a walkthrough: `status` names each kind in one line with the fix, and the fix
    fetches lifebench's games into the data home, which readers look in first."""
    from lifebench.benchmarks.manifests import read_manifest

    upstream = tmp_path / "alfworld-old"
    old, unguided = [row["instance_id"] for row in read_manifest("alfworld", "valid_unseen")[:2]]
    for instance_id, edit in ((old, _old_format), (unguided, lambda g: g.pop("walkthrough"))):
        source = SHARED / "alfworld" / "json_2.1.1" / "valid_unseen" / instance_id / "game.tw-pddl"
        target = upstream / "json_2.1.1" / "valid_unseen" / instance_id / "game.tw-pddl"
        target.parent.mkdir(parents=True)
        game = json.loads(source.read_text())
        edit(game)
        target.write_text(json.dumps(game))
    env = fresh_environment(tmp_path, mirror.url, ALFWORLD_DATA=str(upstream))
    status = run_cli("data", "status", env=env)
    assert status.returncode == 1
    lines = [line for line in status.stdout.splitlines() if line.startswith("alfworld: ")]
    assert lines[0].startswith(f"alfworld: not ready: ALFWorld's 474 games in {upstream}, 0 of 474")
    fix = "fix: `lifebench data fetch alfworld --force`"
    [old_line] = [line for line in lines if "format of alfworld before 0.4.0" in line]
    [unguided_line] = [line for line in lines if WALKTHROUGH_MISSING in line]
    assert old_line.endswith(fix) and old in old_line
    assert unguided_line.endswith(fix) and unguided in unguided_line

    fixed = run_cli("data", "fetch", "alfworld", "--force", env=env)
    assert fixed.returncode == 0, fixed.stderr
    said = lines_by_benchmark(fixed.stderr)["alfworld"]
    assert said.startswith("fetched 474 file(s)") and f"not used: what was in {upstream}" in said


def _old_format(game: dict) -> None:
    """The game as alfworld wrote it before 0.4.0."""
    game["grammar"] = game["grammar"].replace("move {o} to {r}", "put {o} in/on {r}")
    game["pddl_domain"] = game["pddl_domain"].replace("(:action help", "(:action nohelp")


def test_an_interrupted_fetch_recovers(tmp_path, mirror, remotes):
    """Killed in the middle of a file: nothing under its real name; the next fetch removes
    the partial file and completes."""
    first = remotes["textworld"].files[0]
    mirror.fault(first.url, "stall")
    env = fresh_environment(tmp_path, mirror.url)
    folder = data_home(tmp_path) / "textworld" / "ige_cooking"
    partial = folder / f".{first.target}.partial"
    proc = subprocess.Popen([sys.executable, "-m", "lifebench.cli", "data", "fetch", "textworld"],
                            env={**os.environ, **env}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (partial.is_file() and partial.stat().st_size > 0):
            assert proc.poll() is None and time.monotonic() < deadline, "no partial file came"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert not (folder / first.target).exists()
    again = run_cli("data", "fetch", "textworld", env=env)
    assert again.returncode == 0, again.stderr
    assert lines_by_benchmark(again.stderr)["textworld"].startswith("fetched 50 file(s)")
    assert not list(folder.rglob("*.partial"))


def test_a_corrupted_file_is_refused_removed_and_fetched_once_more(in_fresh_home, mirror, remotes):
    crafter = remotes["crafter"]
    [scores] = crafter.files
    target = in_fresh_home / "crafter" / scores.target
    mirror.fault(scores.url, "corrupt", times=2)
    with pytest.raises(FetchFailed) as refused:
        fetch(crafter)
    message = str(refused.value)
    assert "\n" not in message and scores.target in message and "refused twice" in message
    assert [p.name for p in target.parent.iterdir()] == [".fetch.lock"]
    mirror.fault(scores.url, "corrupt", times=1)
    result = fetch(crafter)
    assert result.state == "fetched" and result.check.complete
    assert mirror.count(scores.url) == 4  # refused twice, then refused once and fetched
    mirror.fault(scores.url, "redirect")  # as GitHub's release downloads do
    assert fetch(crafter, force=True).check.complete and mirror.count(scores.url) == 6


def test_truncated_oversized_stalled_and_slow_downloads_end_in_one_line(in_fresh_home, mirror, remotes):
    crafter = remotes["crafter"]
    [scores] = crafter.files
    partial = in_fresh_home / "crafter" / f".{scores.target}.partial"
    cases = [("truncate", Limits(), "the connection closed after"),
             ("oversize", Limits(), "an answer of 1000000000000 bytes, over the limit of"),
             ("stall", Limits(stall_s=0.5), "stopped answering (nothing for 0.5 s)"),
             ("stall", Limits(stall_s=5, deadline_s=0.5), "did not finish within 0.5 s")]
    for kind, limits, said in cases:
        mirror.fault(scores.url, kind)
        started = time.monotonic()
        with pytest.raises(FetchFailed) as failed:
            fetch(crafter, limits=limits)
        assert said in str(failed.value) and "\n" not in str(failed.value)
        assert time.monotonic() - started < 4
        assert not partial.exists()


def test_a_full_disk_is_one_line_and_leaves_no_partial_file(in_fresh_home, mirror, remotes):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    [scores] = remotes["crafter"].files
    partial = in_fresh_home / "scores.partial"
    in_fresh_home.mkdir(parents=True)
    partial.symlink_to("/dev/full")  # every write there fails with ENOSPC
    with pytest.raises(FetchFailed) as full:
        download(f"{mirror.url}/{scores.url[len('https://'):]}", partial, Limits(), "scores")
    assert str(full.value).startswith(f"no space left on the device writing {partial}")
    assert not partial.exists() and not partial.is_symlink()


@pytest.mark.parametrize("member", ["../escaped.txt", "/etc/escaped.txt", "link"])
def test_an_archive_member_outside_its_folder_or_a_link_is_refused(in_fresh_home, tmp_path,
                                                                    member, remotes, monkeypatch):
    """As submissions are: the whole archive refused in one line, nothing written."""
    import stat
    import zipfile


    alfworld = remotes["alfworld"]
    game = alfworld.files[0]
    root = tmp_path / "hostile-mirror"
    archive = mirror_path(root, alfworld.archive.url)
    archive.parent.mkdir(parents=True)
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr(game.member, b"{}")
        if member == "link":
            info = zipfile.ZipInfo(game.member.replace("game.tw-pddl", "link"))
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            out.writestr(info, "/etc/passwd")
        else:
            out.writestr(member, b"outside")
    one_game = dataclasses.replace(alfworld, files=(game,))
    with MirrorServer(root) as server:
        monkeypatch.setenv("LIFEBENCH_MIRROR", server.url)
        with pytest.raises(FetchFailed) as refused:
            fetch(one_game)
    said = str(refused.value)
    assert "refused: its member" in said and "\n" not in said
    assert ("is a link" if member == "link" else "outside the folder") in said
    assert not (in_fresh_home / "alfworld" / game.target).exists()
    assert not (tmp_path / "escaped.txt").exists()


def closed_port_url() -> str:
    """A loopback URL nothing listens on (a port just freed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_make_bench_skips_what_it_cannot_fetch_in_one_line_and_exits_0(tmp_path):
    """`make bench` with an unreachable mirror and no data: each benchmark whose data cannot
    be had is one line (what failed, the command to retry), the others run (a grid of
    random and oracle on one instance, 3 steps), and make exits 0."""
    if subprocess.run(["make", "-q", "install"], cwd=ROOT).returncode != 0:
        pytest.skip("the venv's install is not up to date (`make install` first)")
    mirror_url = closed_port_url()
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env.update(fresh_environment(tmp_path, mirror_url))
    env["LIFEBENCH_EMBEDDED"] = "0"  # random and oracle only: no embedded model's LLM part
    grid = ("GRID=.venv/bin/lifebench grid specs/grid.toml --method random,oracle --limit 1 "
            "--max-steps 3 --no-progress --workers 0")
    bench = subprocess.run(["make", "-s", "bench", f"BENCH_OUT={tmp_path / 'bench'}", grid],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert bench.returncode == 0, bench.stderr[-2000:]
    said = lines_by_benchmark(bench.stderr)
    where = mirror_url[len("http://"):]
    for name in ("alfworld", "textworld"):
        assert said[name] == (f"skipped: connection refused ({where}); "
                              f"retry: `lifebench data fetch {name}`")
        assert sum(name in line for line in bench.stderr.splitlines()) == 1
    ran = {r["benchmark"] for r in read_records(tmp_path / "bench")}
    assert ran == {"plancraft", "scienceworld", "crafter"}

    offline = run_cli("data", "fetch", "textworld", env={**env, "LIFEBENCH_OFFLINE": "1"})
    assert offline.returncode == 1
    assert lines_by_benchmark(offline.stderr)["textworld"].startswith(
        "skipped: offline (LIFEBENCH_OFFLINE is set), and in ")


def test_sources_lists_every_pin_and_marks_what_was_not_checked(capsys, in_fresh_home):
    from lifebench.cli import main

    assert main(["data", "sources", "--json"]) == 0
    listed = {b["benchmark"]: b for b in json.loads(capsys.readouterr().out)["benchmarks"]}
    [archive] = listed["alfworld"]["archives"]
    assert archive["url"].startswith("https://github.com/alfworld/alfworld/releases/download/0.4.0/")
    assert archive["sha256"] is None and not archive["checked"] and len(archive["members"]) == 474
    assert all(len(m["sha256"]) == 64 and len(m["content_sha256"]) == 64 for m in archive["members"])
    files = listed["textworld"]["files"]
    assert len(files) == 50 and all("/99c0aefa161a547f09f0ea962b5db0df6925a2c8/" in f["url"]
                                    for f in files)
    assert listed["alfworld"]["upstream"]["checked"] is False
