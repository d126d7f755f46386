"""Records as a Hugging Face `datasets` dataset: parquet files and a dataset card, ready to
push as a leaderboard dataset (`huggingface-cli upload` or `Dataset.push_to_hub`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from lifebench.api.records import SCHEMA_VERSION, EpisodeRecord

CARD = """\
---
configs:
- config_name: default
  data_files:
  - split: train
    path: data/*.parquet
---
# lifebench episode records

One row per episode, as written by `lifebench run` (`EpisodeRecord`, schema version
{schema}): {count} records over {benchmarks}. `extra` (the benchmark's and the method's own
fields), `llm_usage`, `llm_call_tokens` and `benchmark_config` are JSON strings. Load with
`datasets.load_dataset("<this folder or repo>")`.
"""


# Nested fields that differ between benchmarks and methods: one JSON column each keeps
# one schema for the whole dataset.
JSON_COLUMNS = ("extra", "llm_usage", "llm_call_tokens", "benchmark_config")


def record_row(record: EpisodeRecord) -> dict:
    row = record.to_dict()
    for name in JSON_COLUMNS:
        row[name] = json.dumps(row[name], sort_keys=True)
    return row


def export_hf(records: list[EpisodeRecord], out: str | Path) -> Path:
    import datasets

    datasets.disable_progress_bars()
    out = Path(out)
    (out / "data").mkdir(parents=True, exist_ok=True)
    ordered = sorted(records, key=lambda r: tuple(str(v) for v in dataclasses.astuple(r.key)))
    dataset = datasets.Dataset.from_list([record_row(r) for r in ordered])
    dataset.to_parquet(str(out / "data" / "train-00000-of-00001.parquet"))
    benchmarks = ", ".join(sorted({r.benchmark for r in records}))
    (out / "README.md").write_text(CARD.format(count=len(records), benchmarks=benchmarks,
                                               schema=SCHEMA_VERSION))
    return out
