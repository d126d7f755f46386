"""`lifebench data`'s engine: benchmark data that no package registry ships, found,
verified and fetched into the data home (`lifebench.api.data.data_home()`).

A benchmark says what it needs with `remote_data()` (a `lifebench.api.data.RemoteData`:
every file with its pinned sha256 and its upstream URL or archive member); this package
never names a benchmark. `verify` checks a folder against those pins, `download` streams
one URL to a temporary file over the bounded transport (`lifebench.llm.transport`),
`archive` opens a zip the way submissions are opened (no member outside its folder, no
link), and `fetch` puts it together: what is missing is downloaded, verified, and renamed
into place; a file whose hash differs is removed and fetched once more.

`LIFEBENCH_MIRROR=URL` fetches `https://HOST/PATH` from `URL/HOST/PATH` (a mirror for tests
and air-gapped sites); `LIFEBENCH_OFFLINE=1` fetches nothing.
"""

from __future__ import annotations

from typing import Optional

from lifebench.api import Benchmark
from lifebench.api.data import RemoteData


def remote_data_of(benchmark: Benchmark) -> Optional[RemoteData]:
    """What `benchmark` needs from outside the package registries (`Benchmark.remote_data`);
    None: nothing (its package holds its data)."""
    return benchmark.remote_data()
