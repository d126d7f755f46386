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
