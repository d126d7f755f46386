"""Split manifests (data only): `<benchmark>/<split>.jsonl` and `checksums.sha256`, built by
each benchmark's `build_splits` script (see README.md here). Nothing here is code."""
