"""`lifebench verify`: a submission replayed from its answers with no server running (exit
0), a flipped record or a changed answer caught (exit 1, naming the record or the divergent
request), and what cannot be verified refused in one line (exit 2): no answers
(`--no-responses`), another harness version, a corrupt archive. The grid of every LLM
method on every benchmark is `make check`'s (`lifebench verify results/reference`)."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

import pytest

from conftest import ROOT, one_line_error, rewrite_archive
from lifebench.testing import ServerConfig, read_records, run_cli, serve

pytestmark = pytest.mark.xdist_group("verify")  # the module's run is made once


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> tuple[Path, Path]:
    """A scripted-model run (ReAct and Reflexion on corridor, trajectories kept) and its
    submission with answers; the server is gone when the tests run."""
    tmp = tmp_path_factory.mktemp("verify")
    out = tmp / "run"
    with serve(ServerConfig(policy="scripted")) as server:
        ran = run_cli("run", "--benchmark", "corridor", "--split", "tiny", "--method",
                      "react,reflexion", "--model", "scripted", "--base-url", server.url,
                      "--cache", "off", "--out", str(out), "--workers", "1", "--no-progress",
                      cwd=ROOT)
    assert ran.returncode == 0, ran.stderr
    archive = tmp / "mine.tar.gz"
    exported = run_cli("export", "--submission", str(archive), str(out), cwd=ROOT)
    assert exported.returncode == 0 and "answers (" in exported.stdout, exported.stderr
    return out, archive


def verify(*args: str):
    return run_cli("verify", *args, "--workers", "1", cwd=ROOT)


def rewritten(archive: Path, target: Path, change) -> Path:
    """`archive` with its members changed, submission.json's hashes updated to match."""
    return rewrite_archive(archive, target, change, rehash=True)


def test_a_submission_replays_exactly_from_its_answers_with_no_server(made):
    out, archive = made
    records = read_records(out)
    assert all(call["key"] for r in records for call in r["llm_call_tokens"])
    result = verify(str(archive))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(records)} of {len(records)} episodes replayed exactly" in result.stdout
    report = json.loads((archive.parent / "mine.verification.json").read_text())
    assert report["verdict"] == "exact" and report["mark"] == f"replayed exactly ({len(records)}/{len(records)})"
    # a sample replays whole streams, chosen with a stated seed
    sampled = verify(str(out), "--sample", "1", "--sample-seed", "3")
    assert sampled.returncode == 0, sampled.stdout + sampled.stderr
    assert "a sample of 1 of 2 streams, seed 3" in sampled.stdout


def test_a_flipped_success_is_caught_and_named(made, tmp_path):
    _, archive = made

    def flip(members):
        lines = members["episodes.jsonl"].decode().splitlines()
        record = json.loads(lines[-1])
        record["success"] = not record["success"]
        members["episodes.jsonl"] = ("\n".join(lines[:-1] + [json.dumps(record)]) + "\n").encode()

    result = verify(str(rewritten(archive, tmp_path / "flipped.tar.gz", flip)))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "corridor:tiny" in result.stdout and "success differs: submitted " in result.stdout
    assert "1 difference(s)" in result.stdout


def test_a_changed_answer_is_caught_at_the_first_divergent_request(made, tmp_path):
    _, archive = made

    def change_an_answer(members):
        path = tmp_path / "answers.sqlite"
        path.write_bytes(members["answers.sqlite"])
        with sqlite3.connect(path) as db:
            row, blob = db.execute("SELECT id, answer FROM contents ORDER BY id LIMIT 1").fetchone()
            text = zlib.decompress(blob).decode().replace("Action: right", "Action: left")
            db.execute("UPDATE contents SET answer = ? WHERE id = ?", (zlib.compress(text.encode()), row))
        db.close()
        members["answers.sqlite"] = path.read_bytes()

    result = verify(str(rewritten(archive, tmp_path / "changed.tar.gz", change_an_answer)))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "not among the answers" in result.stdout or "differs" in result.stdout


def test_what_cannot_be_verified_is_refused_in_one_line(made, tmp_path):
    out, archive = made
    bare = tmp_path / "bare.tar.gz"
    exported = run_cli("export", "--submission", str(bare), str(out), "--no-responses", cwd=ROOT)
    assert exported.returncode == 0 and "not replayable" in exported.stdout
    one_line_error(verify(str(bare)), "not replayable")
    assert json.loads((tmp_path / "bare.verification.json").read_text())["mark"] == "not replayable"

    def older(members):
        manifest = json.loads(members["manifest.json"])
        for run in manifest["runs"]:
            run["packages"]["lifebench"] = "0.0.1"
        members["manifest.json"] = json.dumps(manifest).encode()

    one_line_error(verify(str(rewritten(archive, tmp_path / "older.tar.gz", older))),
                   "lifebench 0.0.1 made it")
    corrupt = tmp_path / "corrupt.tar.gz"
    corrupt.write_bytes(archive.read_bytes()[:200])
    one_line_error(verify(str(corrupt)), "is not a lifebench submission")


def test_what_shaped_the_requests_is_in_the_manifest_and_replayed(tmp_path):
    """A server with a small window (its /v1/models), a /tokenize and no `seed`: prompts
    fitted with its token counts, the seed dropped; the manifest says so, and the replay
    (which asks the server nothing) fits and sends them alike."""
    out = tmp_path / "fitted"
    with serve(ServerConfig(policy="scripted", flavour="vllm", models=("scripted",),
                            max_model_len=450, rejects=("seed",))) as server:
        ran = run_cli("run", "--benchmark", "corridor", "--split", "small", "--limit", "2",
                      "--method", "react", "--model", "scripted", "--base-url", server.url,
                      "--cache", "off", "--out", str(out), "--workers", "1", "--no-progress",
                      cwd=ROOT)
    assert ran.returncode == 0, ran.stderr
    assert sum(r["llm_calls_trimmed"] for r in read_records(out)) > 0
    endpoint = json.loads((out / "manifest.json").read_text())["runs"][-1]["llm_endpoint"]
    assert endpoint["context_window"] == 450 and endpoint["context_window_source"] == "/v1/models"
    assert endpoint["token_counts"]["source"] == "/tokenize" and endpoint["token_counts"]["texts"] > 0
    assert endpoint["adapted"] == ["seed not sent (the endpoint refused it)"]
    result = verify(str(out))
    assert result.returncode == 0 and "2 of 2 episodes replayed exactly" in result.stdout, \
        result.stdout + result.stderr
