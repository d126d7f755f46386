"""`lifebench export --submission OUT.tar.gz DIR`, and the commands that read results
(leaderboard, view, compare, check) reading such an archive as they read the directory;
a corrupt, foreign or hostile archive is refused in one line with exit 2
(`tests/hostile/test_hostile_archives.py`)."""

from __future__ import annotations

import json

from conftest import archive_members, one_line_error, read_records

def test_the_archive_holds_records_manifests_configs_and_versions(submitted):
    out, archive = submitted
    files = archive_members(archive)
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


def test_export_refuses_what_is_not_a_results_directory(cli, tmp_path):
    one_line_error(cli("export", "--submission", str(tmp_path / "s.tar.gz"), str(tmp_path)),
                   "has no episodes.jsonl")
    one_line_error(cli("export", "--submission", str(tmp_path / "s.zip"), str(tmp_path)),
                   "name it OUT.tar.gz")
    assert not (tmp_path / "s.tar.gz").exists()
