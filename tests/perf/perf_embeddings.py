"""Sentence embeddings: texts/s of lifebench.embeddings (numpy) against sentence-transformers.

Texts are short valid-action-like sentences ("open door to kitchen", "move [I12] to [A1]
with quantity 1"); queries are free-form paraphrases of some of them. Contenders:
  1. lifebench.embeddings, BLAS on one thread (its default) and on BLAS's own count,
     each time with an empty cache; then the same texts again, from the cache;
  2. sentence-transformers on the same model files (torch on one thread, then its
     default), when it can be imported here, or in another interpreter given with
     --reference-python (the project's venv holds no torch).
Agreement: the cosine between both vectors of each text (min and mean), and whether the
nearest candidate of each query is the same. Target: cosine > 0.999 for every text,
every query's nearest candidate the same, speed at least sentence-transformers'.

    python tests/perf/perf_embeddings.py [--texts 500] [--queries 100] [--rounds 3]
        [--reference-python /path/to/venv-with-sentence-transformers/bin/python]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from lifebench.embedding_store import STORE_ENV, VectorStore
from lifebench.embeddings import DEFAULT_MODEL, THREADS_ENV, Embedder, find_model, load_embedder

os.environ[STORE_ENV] = "off"  # computing is measured here; the store on its own row

ROOMS = ["kitchen", "hallway", "bathroom", "bedroom", "living room", "greenhouse", "workshop",
         "art studio", "foundry", "outside"]
THINGS = ["thermometer", "apple", "knife", "mug", "sink", "stove", "fridge", "cupboard", "lighter",
          "metal pot", "glass jar", "seed packet", "flower pot", "battery", "wire", "light bulb",
          "book", "key", "lamp", "towel", "orange juice", "soap", "table", "drawer", "shelf"]
VERBS = ["open", "close", "pick up", "look at", "focus on", "activate", "eat", "drop", "heat", "cool"]
ITEMS = ["oak_planks", "stick", "crafting_table", "iron_ingot", "oak_log", "cobblestone", "torch"]
REWORDED = {"open": "please open the {}", "close": "shut the {}", "pick up": "grab the {}",
            "look at": "have a look at the {}", "focus on": "concentrate on the {}",
            "activate": "switch on the {}", "eat": "consume the {}", "drop": "put down the {}",
            "heat": "warm up the {}", "cool": "chill the {}"}

# Run by the reference interpreter: sentence-transformers' vectors and texts/s.
REFERENCE = r"""
import json, os, sys, time
os.environ["HF_HUB_OFFLINE"] = "1"
import numpy as np, torch
from sentence_transformers import SentenceTransformer
folder, texts_file, out, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
texts = json.load(open(texts_file))
model = SentenceTransformer(folder, device="cpu")
speeds = {}
for threads in (1, 0):
    torch.set_num_threads(threads or os.cpu_count())
    model.encode(texts[:64], normalize_embeddings=True)
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        model.encode(texts, normalize_embeddings=True)
        times.append(time.perf_counter() - began)
    speeds[str(threads or os.cpu_count())] = len(texts) / min(times)
np.save(out, model.encode(texts, normalize_embeddings=True))
print(json.dumps({"speeds": speeds, "torch": torch.__version__,
                  "version": __import__("sentence_transformers").__version__}))
"""


def candidates(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    made: set[str] = set()
    while len(made) < count:
        kind = rng.randrange(5)
        if kind == 0:
            made.add(f"{rng.choice(VERBS)} {rng.choice(THINGS)}")
        elif kind == 1:
            room = rng.choice(ROOMS)
            made.add(f"open door to {room}" if rng.random() < 0.5 else f"go to {room}")
        elif kind == 2:
            made.add(f"move {rng.choice(THINGS)} to {rng.choice(THINGS)}")
        elif kind == 3:
            made.add(f"move [I{rng.randrange(1, 37)}] to [A{rng.randrange(1, 10)}] "
                     f"with quantity {rng.randrange(1, 9)}")
        else:
            made.add(f"craft {rng.choice(ITEMS)} using {rng.choice(ITEMS)} and {rng.choice(ITEMS)}")
    return sorted(made)


def queries(texts: list[str], count: int, seed: int = 1) -> list[str]:
    """Free-form rewordings of randomly chosen candidates."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        text = rng.choice(texts)
        words = text.split()
        if text.startswith("open door to "):
            out.append(f"go through the door into the {text[13:]}")
        elif text.startswith("go to "):
            out.append(f"walk over to the {text[6:]}")
        elif text.startswith("move [I"):
            out.append(f"put {words[-1]} of the item in slot {words[1]} into {words[3]}")
        elif text.startswith("move "):
            first, second = text[5:].split(" to ")
            out.append(f"place the {first} on the {second}")
        elif text.startswith("craft "):
            out.append(f"make a {words[1].replace('_', ' ')}")
        else:
            verb = next(v for v in sorted(REWORDED, key=len, reverse=True) if text.startswith(v + " "))
            out.append(REWORDED[verb].format(text[len(verb) + 1:]))
    return out


def ours(texts: list[str], threads: str, rounds: int) -> tuple[float, float, np.ndarray]:
    """texts/s with an empty cache (best of `rounds`), texts/s from the cache, vectors."""
    before = os.environ.get(THREADS_ENV)
    os.environ[THREADS_ENV] = threads
    try:
        embedder = load_embedder()
    finally:
        if before is None:
            os.environ.pop(THREADS_ENV)
        else:
            os.environ[THREADS_ENV] = before
    embedder.embed(texts[:64])
    times = []
    for _ in range(rounds):
        embedder.clear_cache()
        began = time.perf_counter()
        vectors = embedder.embed(texts)
        times.append(time.perf_counter() - began)
    began = time.perf_counter()
    again = embedder.embed(texts)
    cached = time.perf_counter() - began
    assert np.array_equal(again, vectors)
    return len(texts) / min(times), len(texts) / cached, vectors


def from_the_store(texts: list[str]) -> float:
    """texts/s a fresh embedder (an empty memory, as a new process has) gets from a store
    another one filled; the vectors are the computed ones, bit for bit."""
    model = load_embedder()._model
    with tempfile.TemporaryDirectory() as folder:
        def fresh() -> Embedder:
            return Embedder(DEFAULT_MODEL, model, store=VectorStore(Path(folder), DEFAULT_MODEL, "perf", model.dim))

        computed = fresh().embed(texts)
        reader = fresh()
        began = time.perf_counter()
        read = reader.embed(texts)
        seconds = time.perf_counter() - began
        assert np.array_equal(read, computed) and reader.store.found == len(set(texts))
    return len(texts) / seconds


def reference(texts: list[str], python: str | None, rounds: int) -> tuple[dict, np.ndarray] | None:
    if python is None and importlib.util.find_spec("sentence_transformers") is None:
        return None
    folder, _ = find_model()
    if not folder.is_dir():
        sys.exit(f"sentence-transformers needs a folder, not {folder}")
    with tempfile.TemporaryDirectory() as scratch:
        texts_file, out = Path(scratch) / "texts.json", Path(scratch) / "vectors.npy"
        texts_file.write_text(json.dumps(texts))
        env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
        result = subprocess.run([python or sys.executable, "-c", REFERENCE, str(folder), str(texts_file),
                                 str(out), str(rounds)], capture_output=True, text=True, env=env)
        if result.returncode != 0:
            sys.exit(f"the reference failed:\n{result.stderr[-2000:]}")
        return json.loads(result.stdout.strip().splitlines()[-1]), np.load(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=500)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reference-python", help="an interpreter with sentence-transformers")
    args = parser.parse_args()
    texts = candidates(args.texts)
    asked = queries(texts, args.queries)
    everything = texts + asked
    print(f"{len(texts)} candidates, {len(asked)} queries, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")

    speeds = {}
    for threads in ("1", "0"):
        speed, cached, vectors = ours(everything, threads, args.rounds)
        speeds[threads] = speed
        print(f"lifebench.embeddings  BLAS threads {'1' if threads == '1' else 'default':>7}: "
              f"{speed:7.0f} texts/s   from the cache: {cached:9.0f} texts/s")

    stored = from_the_store(everything)
    print(f"the store on disk (lifebench.embedding_store): a fresh process reads "
          f"{stored:7.0f} texts/s, {stored / speeds['1']:.0f}x computing them on one thread")

    found = reference(everything, args.reference_python, args.rounds)
    if found is None:
        print("sentence-transformers: not importable here (give --reference-python)")
        return
    info, theirs = found
    print(f"sentence-transformers {info['version']} (torch {info['torch']}):")
    for threads, speed in info["speeds"].items():
        mine = speeds["1" if threads == "1" else "0"]
        print(f"  torch threads {threads}: {speed:7.0f} texts/s; "
              f"lifebench/sentence-transformers = {mine / speed:.2f}")
    cosines = np.sum(vectors * theirs, axis=1)
    n = len(texts)
    mine_top = (vectors[n:] @ vectors[:n].T).argmax(axis=1)
    their_top = (theirs[n:] @ theirs[:n].T).argmax(axis=1)
    agree = int(np.sum(mine_top == their_top))
    print(f"agreement: cosine min {cosines.min():.7f} mean {cosines.mean():.7f} "
          f"over {len(everything)} texts; "
          f"nearest candidate the same for {agree}/{len(asked)} queries")
    ok = cosines.min() > 0.999 and agree == len(asked) and speeds["1"] >= info["speeds"]["1"]
    print("target (cosine > 0.999, the same nearest, one thread at least as fast): "
          + ("met" if ok else "NOT met"))


if __name__ == "__main__":
    main()
