"""The per-endpoint limit on LLM requests in flight, for a whole Ray cluster.

Under `--executor ray` the driver starts one named actor; every LLM client in every worker
takes a lease from it around each request (instead of its process-local semaphore), so
`--llm-concurrency N` holds across all nodes. A lease expires on its own after a while, so
a worker that dies holding one does not shrink the limit for the rest of the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import uuid
from typing import Any

ACTOR_NAME = "lifebench-llm-slots"
ENV = "LIFEBENCH_RAY_SLOTS"  # set in Ray workers: take slots from the actor


class EndpointSlots:
    """The actor: leases per endpoint (base URL), at most `limit` at a time."""

    def __init__(self) -> None:
        self.leases: dict[str, dict[str, float]] = {}
        self.peak: dict[str, int] = {}
        self.changed = asyncio.Condition()

    def _held(self, base_url: str) -> dict[str, float]:
        held = self.leases.setdefault(base_url, {})
        now = time.monotonic()
        for lease, expiry in list(held.items()):
            if expiry < now:  # its holder died or hung: reclaim it
                del held[lease]
        return held

    async def acquire(self, base_url: str, limit: int, lease_s: float) -> str:
        async with self.changed:
            while len(self._held(base_url)) >= max(1, limit):
                # woken by a release, or after a second to reclaim expired leases
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), timeout=1.0)
            lease = uuid.uuid4().hex
            held = self._held(base_url)
            held[lease] = time.monotonic() + lease_s
            self.peak[base_url] = max(self.peak.get(base_url, 0), len(held))
            return lease

    async def release(self, base_url: str, lease: str) -> None:
        async with self.changed:
            self.leases.get(base_url, {}).pop(lease, None)
            self.changed.notify_all()

    async def peak_in_flight(self, base_url: str) -> int:
        return self.peak.get(base_url, 0)


def ensure_slots_actor() -> Any:
    """The cluster's slots actor, started by the driver (once per Ray namespace)."""
    import ray

    actor_class = ray.remote(num_cpus=0, max_restarts=-1)(EndpointSlots)
    actor = actor_class.options(name=ACTOR_NAME, get_if_exists=True).remote()
    ray.get(actor.peak_in_flight.remote(""))  # registered before any task looks it up
    return actor


class ClusterSlots:
    """Used like a semaphore (`with slots:`), backed by the actor."""

    def __init__(self, base_url: str, limit: int, lease_s: float) -> None:
        import ray

        self.ray = ray
        self.actor = ray.get_actor(ACTOR_NAME)
        self.base_url = base_url
        self.limit = limit
        self.lease_s = lease_s
        self.local = threading.local()  # a client is shared by threads: leases per thread

    def __enter__(self) -> "ClusterSlots":
        self.local.lease = self.ray.get(self.actor.acquire.remote(self.base_url, self.limit,
                                                                   self.lease_s))
        return self

    def __exit__(self, *exc: Any) -> None:
        self.actor.release.remote(self.base_url, self.local.lease)


def under_ray() -> bool:
    return os.environ.get(ENV) == "1"
