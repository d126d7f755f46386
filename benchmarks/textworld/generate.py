"""Generated cooking splits: `lifebench splits make textworld-cooking --n N --seed S`.

Game i of split `textworld-cooking-<N>-s<S>` is `tw-make tw-cooking` with IGE's flags
(`--recipe 5 --take 5 --go 12 --open --cook --cut --split test`) and a game seed derived
from (S, i), so a longer split with the same S starts with the same games. `tw-make` runs
with `PYTHONHASHSEED=0` (without it the same seed gives another game), in a scratch folder
with a relative output path (the path is written into the game's metadata). It also
stamps the compile date into the story file's header as its serial number; lifebench sets
that to 000000, so the same split is byte-identical on any day. The split's folder holds
the games and `manifest.json` (parameters, textworld version, every file's sha256).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path
from typing import Any, Optional

from lifebench.api import UserError
from lifebench.api.data import exclusive

from lifebench.benchmarks.textworld.data import GAME_SUFFIXES, cache_root, verify_games
from lifebench.benchmarks.manifests import sha256_file

KIND = "textworld-cooking"
TW_MAKE_ARGS = ("tw-cooking", "--recipe", "5", "--take", "5", "--go", "12", "--open",
                "--cook", "--cut", "--split", "test")
SPLIT_NAME = re.compile(rf"{KIND}-(\d+)-s(\d+)")
MANIFEST = "manifest.json"
# The Z-machine header's serial number (bytes 18-23); outside the header checksum's range.
SERIAL = slice(18, 24)
FIXED_SERIAL = b"000000"
MAX_GAMES = 10_000


def split_name(n: int, seed: int) -> str:
    return f"{KIND}-{n}-s{seed}"


# The support split (n, seed): generated on first use rather than on request.
SUPPORT_GAMES = (10, 1000)
SUPPORT_SPLIT = split_name(*SUPPORT_GAMES)


def parse_split_name(split: str) -> Optional[tuple[int, int]]:
    match = SPLIT_NAME.fullmatch(split)
    return (int(match.group(1)), int(match.group(2))) if match else None


def split_dir(split: str) -> Path:
    return cache_root() / split


def game_seeds(n: int, seed: int) -> list[int]:
    """Distinct tw-make seeds; game i's depends on (seed, i) only."""
    seeds: list[int] = []
    for i in range(n):
        salt = 0
        while True:
            digest = hashlib.sha256(f"{KIND}/{seed}/{i}/{salt}".encode()).digest()
            candidate = int.from_bytes(digest[:4], "big") % 2**31
            if candidate not in seeds:
                break
            salt += 1
        seeds.append(candidate)
    return seeds


def _tw_make() -> str:
    beside = Path(sys.executable).parent / "tw-make"
    found = str(beside) if beside.is_file() else shutil.which("tw-make")
    if not found:
        raise UserError("tw-make not found; install textworld (`make install` or "
                        "`pip install 'lifebench[textworld]'`)")
    return found


def _make_game(tw_make: str, scratch: Path, instance_id: str, game_seed: int) -> None:
    command = [tw_make, *TW_MAKE_ARGS, "--seed", str(game_seed), "--output",
               f"games/{instance_id}.z8", "--silent", "-f"]
    proc = subprocess.run(command, cwd=scratch, capture_output=True, text=True,
                          env={**os.environ, "PYTHONHASHSEED": "0"})
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"tw-make failed for game seed {game_seed}: {last}")
    z8 = scratch / "games" / f"{instance_id}.z8"
    data = bytearray(z8.read_bytes())
    data[SERIAL] = FIXED_SERIAL
    z8.write_bytes(bytes(data))


def _game_entry(games: Path, instance_id: str, game_seed: int) -> dict[str, Any]:
    meta = json.loads((games / f"{instance_id}.json").read_text())["metadata"]
    return {"instance_id": instance_id, "game_seed": game_seed,
            "max_score": meta["max_score"], "walkthrough_length": len(meta["walkthrough"]),
            "sha256": {s.lstrip("."): sha256_file(games / f"{instance_id}{s}") for s in GAME_SUFFIXES}}


def generate(n: int, seed: int, workers: int = 2) -> Path:
    """Generate the split (or find it already generated) and return its folder."""
    if not 1 <= n <= MAX_GAMES:
        raise UserError(f"--n must be between 1 and {MAX_GAMES}, got {n}")
    if seed < 0:
        raise UserError(f"--seed must be 0 or more, got {seed}")
    name = split_name(n, seed)
    out = split_dir(name)
    if _made(name, out):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    # one maker at a time (a run's workers and other runs wait for it, then find it made):
    # two would each spend a minute of CPU, and the later one's swap would pull the games
    # from under the earlier one's readers
    with exclusive(out.parent / f".{name}.lock"):
        return out if _made(name, out) else _make_split(name, n, seed, out, workers)


def _made(name: str, out: Path) -> bool:
    """Whether the split is there (its files then checked against its manifest)."""
    if not (out / MANIFEST).is_file():
        return False
    verify_games(out, read_manifest(name)["games"], remake_hint(name))
    return True


def _make_split(name: str, n: int, seed: int, out: Path, workers: int) -> Path:
    tw_make = _tw_make()
    seeds = game_seeds(n, seed)
    ids = [f"cooking_seed_{s}" for s in seeds]
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{name}-") as scratch_name:
        scratch = Path(scratch_name)
        with ThreadPoolExecutor(max(1, workers)) as pool:
            list(pool.map(lambda pair: _make_game(tw_make, scratch, *pair), zip(ids, seeds)))
        manifest = {"split": name, "kind": KIND, "n": n, "seed": seed,
                    "textworld": version("textworld"), "tw_make_args": list(TW_MAKE_ARGS),
                    "serial": FIXED_SERIAL.decode(),
                    "games": [_game_entry(scratch / "games", i, s) for i, s in zip(ids, seeds)]}
        (scratch / "games" / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        if out.exists():
            shutil.rmtree(out)
        (scratch / "games").rename(out)
    return out


def make_command(split: str) -> str:
    n, seed = parse_split_name(split) or (0, 0)
    return f"lifebench splits make {KIND} --n {n} --seed {seed}"


def remake_hint(split: str) -> str:
    return f"`rm -rf {split_dir(split)}` and run `{make_command(split)}`"


def read_manifest(split: str) -> dict[str, Any]:
    """A generated split's manifest (its files are checked by `verify_games`)."""
    path = split_dir(split) / MANIFEST
    if not path.is_file():
        raise UserError(f"split {split!r} has not been generated here (no {path}); run "
                        f"`{make_command(split)}`")
    try:
        manifest = json.loads(path.read_text())
        if not isinstance(manifest["games"], list) or not all(
                isinstance(g["sha256"], dict) for g in manifest["games"]):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise UserError(f"{path} is corrupt; {remake_hint(split)}") from None
    return manifest


def generated_splits() -> list[str]:
    root = cache_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir()
                  if parse_split_name(p.name) and (p / MANIFEST).is_file())
