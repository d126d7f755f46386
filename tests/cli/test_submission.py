"""`lifebench export --submission OUT.tar.gz DIR`, and the commands that read results
(leaderboard, view, compare, check) reading such an archive as they read the directory;
a corrupt or foreign archive is refused in one line with exit 2."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest

from conftest import read_records

RUN = ["run", "--no-progress"]


@pytest.fixture(scope="module")
def submitted(tmp_path_factory):
    """A small real run (random on Plancraft val.small, 2 instances) and its submission."""
    from lifebench.testing import run_cli

    root = tmp_path_factory.mktemp("submission")
    out, archive = root / "run", root / "random.tar.gz"
    result = run_cli(*RUN, "--benchmark", "plancraft", "--split", "val.small", "--method", "random",
                     "--limit", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr
    exported = run_cli("export", "--submission", str(archive), str(out))
    assert exported.returncode == 0, exported.stderr
    assert "2 episodes of random" in exported.stdout
    return out, archive


def one_line_error(result, *fragments):
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_the_archive_holds_records_manifests_configs_and_versions(submitted):
    out, archive = submitted
    files = members(archive)
    assert files["episodes.jsonl"] == (out / "episodes.jsonl").read_bytes()
    assert files["manifest.json"] == (out / "manifest.json").read_bytes()
    assert any(name.startswith("trajectories/") for name in files)
    info = json.loads(files["submission.json"])
    assert info["format"] == "lifebench-submission" and info["version"] == 1
    assert info["episodes"] == 2 and len(info["runs"]) == 1
    hashes = sorted({r["method_config_hash"] for r in read_records(out)})
    assert info["methods"] == {"random": {"config_hashes": hashes, "args": [{}], "grid": []}}
    manifest = json.loads(files["manifest.json"])["runs"][0]
    assert info["plugins"] == manifest["packages"] and info["plugins"]["plancraft"] == "0.4.9"
    assert set(info["files"]) == set(files) - {"submission.json"}


def test_leaderboard_of_the_archive_equals_the_directory(submitted, cli):
    out, archive = submitted
    for fmt in ("markdown", "csv"):
        from_dir = cli("leaderboard", str(out), "--no-plots", "--format", fmt)
        from_archive = cli("leaderboard", str(archive), "--no-plots", "--format", fmt)
        assert from_dir.returncode == 0 and from_archive.returncode == 0, from_archive.stderr
        assert from_archive.stdout == from_dir.stdout and "random" in from_dir.stdout
    # compare and check read it as well: the archive against its own directory is no regression
    check = cli("check", "--baseline", str(archive), "--candidate", str(out))
    assert check.returncode == 0, check.stdout + check.stderr


def test_view_builds_the_site_from_the_archive(submitted, cli, tmp_path):
    _, archive = submitted
    result = cli("view", str(archive), "--output", str(tmp_path / "site"))
    assert result.returncode == 0, result.stderr
    assert "of 2 episodes" in result.stdout and (tmp_path / "site" / "index.html").is_file()
    # unpacked beside the site, so the directory its pages name stays there
    [unpacked] = (tmp_path / "site-submissions").iterdir()
    assert (unpacked / "episodes.jsonl").is_file()
    assert str(unpacked) in (tmp_path / "site" / "data" / "summary.js").read_text()
    again = cli("view", str(archive), "--output", str(tmp_path / "site"))  # rebuilt in place
    assert again.returncode == 0, again.stderr


def _rewrite(archive: Path, target: Path, change) -> Path:
    files = members(archive)
    change(files)
    with tarfile.open(target, "w:gz") as tar:
        for name, data in files.items():
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    return target


def test_a_corrupt_or_foreign_archive_is_refused_in_one_line(submitted, cli, tmp_path):
    _, archive = submitted
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(archive.read_bytes()[:300])
    one_line_error(cli("leaderboard", str(truncated)), "is not a lifebench submission", "truncated")

    not_tar = tmp_path / "notes.tar.gz"
    not_tar.write_bytes(gzip.compress(b"just some text"))
    one_line_error(cli("leaderboard", str(not_tar)), "is not a lifebench submission")

    def tamper(files):
        first, rest = files["episodes.jsonl"].split(b"\n", 1)
        files["episodes.jsonl"] = rest  # an episode dropped after export

    one_line_error(cli("leaderboard", str(_rewrite(archive, tmp_path / "tampered.tar.gz", tamper))),
                   "episodes.jsonl does not match its checksum")

    def foreign(files):
        files.clear()
        files["README.md"] = b"someone else's archive"

    one_line_error(cli("view", str(_rewrite(archive, tmp_path / "foreign.tar.gz", foreign))),
                   "unexpected member 'README.md'")

    def escape(files):
        files["../evil.jsonl"] = b"{}"

    one_line_error(cli("leaderboard", str(_rewrite(archive, tmp_path / "escape.tar.gz", escape))),
                   "unexpected member '../evil.jsonl'")
    assert not (tmp_path.parent / "evil.jsonl").exists()


def test_export_refuses_what_is_not_a_results_directory(cli, tmp_path):
    one_line_error(cli("export", "--submission", str(tmp_path / "s.tar.gz"), str(tmp_path)),
                   "has no episodes.jsonl")
    one_line_error(cli("export", "--submission", str(tmp_path / "s.zip"), str(tmp_path)),
                   "name it OUT.tar.gz")
    assert not (tmp_path / "s.tar.gz").exists()


class _Zeros(io.RawIOBase):
    """`size` zero bytes, read without holding them."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


@pytest.fixture(scope="module")
def bomb(submitted, tmp_path_factory) -> Path:
    """The submission with a 2 GB zero-filled trajectory added: a few MB on disk."""
    _, archive = submitted
    target = tmp_path_factory.mktemp("bomb") / "bomb.tar.gz"
    with tarfile.open(target, "w:gz", compresslevel=1) as tar:
        for name, data in members(archive).items():
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
        member = tarfile.TarInfo("trajectories/huge.jsonl")
        member.size = 2 * 10**9
        tar.addfile(member, io.BufferedReader(_Zeros(member.size), 1 << 20))
    return target


def peak_rss_mb(*args: str) -> tuple[float, "subprocess.CompletedProcess"]:
    """The peak RSS of `lifebench ARGS` (a fresh parent whose only child it is)."""
    import subprocess
    import sys

    probe = ("import resource, subprocess, sys\n"
             "p = subprocess.run([sys.executable, '-m', 'lifebench.cli', *sys.argv[1:]], "
             "capture_output=True, text=True)\n"
             "sys.stderr.write(p.stderr)\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
             "sys.exit(p.returncode)")
    proc = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True,
                          timeout=300)
    return int(proc.stdout.split()[-1]) / 1024, proc


def test_an_archive_bomb_is_refused_in_one_line_with_bounded_memory(submitted, bomb, tmp_path):
    _, archive = submitted
    assert bomb.stat().st_size < 20 * 2**20
    small_mb, small = peak_rss_mb("leaderboard", str(archive))
    assert small.returncode == 0, small.stderr
    bomb_mb, refused = peak_rss_mb("leaderboard", str(bomb))
    one_line_error(refused, "is not a lifebench submission",
                   "member 'trajectories/huge.jsonl' unpacks to 2,000,000,000 bytes")
    assert bomb_mb <= small_mb + 50, (bomb_mb, small_mb)


def test_a_refused_archive_leaves_nothing_and_duplicates_are_refused(submitted, bomb, tmp_path):
    from lifebench.api import UserError
    from lifebench.store.submission import open_submission

    _, archive = submitted
    with pytest.raises(UserError, match="unpacks to"):
        open_submission(bomb, tmp_path / "into" / "results")
    assert list((tmp_path / "into").iterdir()) == []  # no folder, no partial one
    twice = tmp_path / "twice.tar.gz"
    with tarfile.open(twice, "w:gz") as tar:
        for name, data in [*members(archive).items(), ("episodes.jsonl", b"{}\n")]:
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    with pytest.raises(UserError, match="member 'episodes.jsonl' appears twice"):
        open_submission(twice, tmp_path / "into" / "again")
    assert list((tmp_path / "into").iterdir()) == []
    # an intact archive unpacks as before
    unpacked = open_submission(archive, tmp_path / "into" / "ok")
    assert (unpacked / "episodes.jsonl").is_file() and [p.name for p in (tmp_path / "into").iterdir()] == ["ok"]
