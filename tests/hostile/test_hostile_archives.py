"""Submission archives from strangers: truncated, foreign, tampered, a member that climbs
out, a link, a bomb, duplicates. Each is refused in one line with exit 2 before anything is
unpacked where a reader would look, and leaves nothing behind."""

from __future__ import annotations

import gzip
import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import archive_members, one_line_error, rewrite_archive


def _rewrite(archive: Path, target: Path, change) -> Path:
    return rewrite_archive(archive, target, change)


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

    def absolute(files):
        files["/tmp/evil.jsonl"] = b"{}"

    one_line_error(cli("leaderboard", str(_rewrite(archive, tmp_path / "abs.tar.gz", absolute))),
                   "unexpected member '/tmp/evil.jsonl'")
    assert not Path("/tmp/evil.jsonl").exists()


def test_links_and_devices_in_an_archive_are_refused(submitted, cli, tmp_path):
    _, archive = submitted
    for kind, name in [(tarfile.SYMTYPE, "trajectories/link.jsonl"),
                       (tarfile.LNKTYPE, "trajectories/hard.jsonl"),
                       (tarfile.CHRTYPE, "trajectories/device.jsonl"),
                       (tarfile.FIFOTYPE, "trajectories/fifo.jsonl")]:
        target = tmp_path / f"{kind.decode() or 'x'}.tar.gz"
        with tarfile.open(target, "w:gz") as tar:
            for member_name, data in archive_members(archive).items():
                member = tarfile.TarInfo(member_name)
                member.size = len(data)
                tar.addfile(member, io.BytesIO(data))
            special = tarfile.TarInfo(name)
            special.type, special.linkname = kind, "/etc/passwd"
            tar.addfile(special)
        one_line_error(cli("view", str(target), "--output", str(tmp_path / "site")),
                       f"unexpected member {name!r}")
        assert not (tmp_path / "site").exists() and not (tmp_path / "site-submissions").exists()


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
        for name, data in archive_members(archive).items():
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
        member = tarfile.TarInfo("trajectories/huge.jsonl")
        member.size = 2 * 10**9
        tar.addfile(member, io.BufferedReader(_Zeros(member.size), 1 << 20))
    return target


def peak_rss_mb(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    """The peak RSS of `lifebench ARGS` (a fresh parent whose only child it is)."""
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
    assert not (tmp_path / "into").exists()  # no folder, no partial one, not even their parent
    twice = tmp_path / "twice.tar.gz"
    with tarfile.open(twice, "w:gz") as tar:
        for name, data in [*archive_members(archive).items(), ("episodes.jsonl", b"{}\n")]:
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    with pytest.raises(UserError, match="member 'episodes.jsonl' appears twice"):
        open_submission(twice, tmp_path / "into" / "again")
    assert not (tmp_path / "into").exists()
    # an intact archive unpacks as before
    unpacked = open_submission(archive, tmp_path / "into" / "ok")
    assert (unpacked / "episodes.jsonl").is_file() and [p.name for p in (tmp_path / "into").iterdir()] == ["ok"]
