"""The embeddings' store on disk (lifebench.embedding_store): what one process computed,
another reads bit for bit; a file from outside is checked before use (header, cut records,
vectors that are not unit rows, its size), concurrent writers add whole records, and a store
that cannot be used turns itself off with one line while embeddings go on."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from lifebench.embedding_store import MAGIC, STORE_ENV, VectorStore, store_folder
from lifebench.embeddings import DEFAULT_MODEL, Embedder, get_embedder

TEXTS = ["open door to kitchen", "move [I12] to [A1] with quantity 1", "pick up the thermometer"]


@pytest.fixture(scope="module")
def model():
    return get_embedder()._model


def embedder_on(folder, model, **kw) -> Embedder:
    """A fresh embedder (empty memory) on the store in `folder`."""
    return Embedder(DEFAULT_MODEL, model, store=VectorStore(folder, DEFAULT_MODEL, "here", model.dim, **kw))


def test_a_second_process_reads_the_first_ones_vectors_bit_for_bit(tmp_path, model):
    expected = Embedder(DEFAULT_MODEL, model).embed(TEXTS)  # no store
    first = embedder_on(tmp_path, model)
    assert np.array_equal(first.embed(TEXTS), expected) and first.store.found == 0
    [path] = tmp_path.iterdir()
    assert path.stat().st_size == len(MAGIC) + 4 + 3 * (16 + 4 * model.dim)
    second = embedder_on(tmp_path, model)
    assert np.array_equal(second.embed(TEXTS[::-1]), expected[::-1])
    assert second.store.found == 3
    # another identity (model, BLAS, CPU, threads) is another file: nothing read across
    other = Embedder(DEFAULT_MODEL, model, store=VectorStore(tmp_path, DEFAULT_MODEL, "elsewhere", model.dim))
    other.embed(TEXTS[:1])
    assert other.store.found == 0 and len(list(tmp_path.iterdir())) == 2


def test_a_file_from_outside_is_checked_before_use(tmp_path, model, capsys):
    store = VectorStore(tmp_path, DEFAULT_MODEL, "here", model.dim)
    expected = Embedder(DEFAULT_MODEL, model).embed(TEXTS)
    embedder_on(tmp_path, model).embed(TEXTS[:2])
    data = bytearray(store.path.read_bytes())
    record = 16 + 4 * model.dim
    first = len(MAGIC) + 4
    data[first + 16: first + 20] = np.float32(np.nan).tobytes()    # not finite
    second = first + record
    data[second + 16: second + record] = (np.ones(model.dim, "<f4") * 2).tobytes()  # norm 39
    store.path.write_bytes(bytes(data) + b"\x00" * 100)             # and a record cut short
    reader = embedder_on(tmp_path, model)
    assert np.array_equal(reader.embed(TEXTS), expected)            # computed again, not read
    assert reader.store.found == 0 and reader.store.skipped == 2
    size = store.path.stat().st_size
    assert (size - first) % record == 0                              # the cut record dropped
    # a file in another format is set aside, said in one line, and started again
    store.path.write_bytes(b"not a vector file at all" * 10)
    again = embedder_on(tmp_path, model)
    assert np.array_equal(again.embed(TEXTS[:1]), expected[:1])
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "moved to" in said[0] and "started again" in said[0]
    assert store.path.with_suffix(".unreadable").exists()
    assert store.path.read_bytes()[:len(MAGIC)] == MAGIC


def test_the_file_is_bounded_and_concurrent_writers_add_whole_records(tmp_path, model):
    record = 16 + 4 * model.dim
    small = embedder_on(tmp_path, model, limit_bytes=len(MAGIC) + 4 + 2 * record)
    small.embed(TEXTS)
    assert small.store.path.stat().st_size == len(MAGIC) + 4 + 2 * record  # room for two
    texts = [f"go to room {i}" for i in range(24)]
    big = tmp_path / "big"
    writers = [embedder_on(big, model) for _ in range(3)]
    threads = [threading.Thread(target=w.embed, args=(texts[i::2],)) for i, w in enumerate(writers[:2])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    reader = writers[2]
    assert np.array_equal(reader.embed(texts), Embedder(DEFAULT_MODEL, model).embed(texts))
    assert reader.store.found == 24 and reader.store.skipped == 0


def test_a_store_that_cannot_be_used_is_off_and_embeddings_go_on(tmp_path, model, monkeypatch, capsys):
    monkeypatch.setenv(STORE_ENV, "off")
    assert store_folder() is None
    monkeypatch.setenv(STORE_ENV, str(tmp_path / "x"))
    assert store_folder() == tmp_path / "x"
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would be")
    embedder = embedder_on(blocked / "sub", model)
    assert np.array_equal(embedder.embed(TEXTS), Embedder(DEFAULT_MODEL, model).embed(TEXTS))
    embedder.embed(["one more text"])
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "the embedding cache is off for this process" in said[0]
    assert STORE_ENV in said[0] and embedder.store.off
