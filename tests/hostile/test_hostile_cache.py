"""The LLM response cache read back from disk, where a crash, a hand edit or a stranger may
have damaged it: a bad row is a miss, said once and counted; a file that is not a cache
is one line with exit 2 that says what to do."""

from __future__ import annotations

from lifebench.config.run import LLMConfig
from lifebench.llm.cache import ResponseCache
from lifebench.llm.client import LLMClient


def hello(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def test_unreadable_cache_rows_are_misses_said_once_and_counted(llm_server, tmp_path, capsys):
    import sqlite3

    srv = llm_server()  # echoes the prompt
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path, "rw")
    client = LLMClient("fake-model", LLMConfig(base_url=srv.url, max_retries=0), cache)
    for text in ("one", "two", "three"):
        client.chat(hello(text))
    cache.flush()
    with sqlite3.connect(path) as conn:  # damage the file as a crash or a hand edit would
        keys = [k for (k,) in conn.execute("SELECT key FROM responses ORDER BY created")]
        conn.execute("UPDATE responses SET response = 'not json' WHERE key = ?", (keys[0],))
        conn.execute("UPDATE responses SET response = '{\"choices\": [1]}' WHERE key = ?", (keys[1],))
        deep = '{"choices": ' + "[" * 100_000 + "]" * 100_000 + "}"
        conn.execute("UPDATE responses SET response = ? WHERE key = ?", (deep, keys[2]))
        conn.execute("INSERT INTO responses (key, model, created, response) VALUES (NULL, 'm', 0, 'x')")
    fresh = LLMClient("fake-model", LLMConfig(base_url=srv.url, max_retries=0),
                      ResponseCache(path, "rw"))
    before = srv.stats()["requests"]
    assert [fresh.chat(hello(t)).text for t in ("one", "two", "three")] == ["one", "two", "three"]
    assert srv.stats()["requests"] == before + 3, "the three unreadable rows are asked again"
    assert fresh.chat(hello("three")).cached
    warnings = [line for line in capsys.readouterr().err.splitlines() if "unreadable" in line]
    assert len(warnings) == 1 and str(path) in warnings[0]
    assert ResponseCache(path).stats()["unreadable"] == 4  # three bad responses, one NULL key


def test_a_file_that_is_not_a_cache_is_one_line(llm_server, lifebench_cli, tmp_path):
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"\x00garbage" * 500)
    srv = llm_server()
    result = lifebench_cli("run", "--no-progress", "--benchmark", "plancraft", "--split",
                           "val.small", "--limit", "1", "--max-steps", "2", "--method", "react",
                           "--model", "m", "--base-url", srv.url, "--cache-path", str(path),
                           "--out", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert f"LLM cache {path} is unusable" in line and "lifebench cache clear" in line
    assert srv.stats()["requests"] == 0
