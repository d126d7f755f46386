"""The Ray cluster's per-endpoint request limit (`lifebench.llm.ray_slots.EndpointSlots`,
the actor's class, here run on an asyncio loop of this process; tests/runner/test_ray.py
runs it as the actor): at most `limit` leases per endpoint, a release wakes a waiter, and
a lease whose holder never released it expires."""

from __future__ import annotations

import asyncio

from lifebench.llm.ray_slots import EndpointSlots


def test_leases_are_limited_per_endpoint_and_a_release_wakes_a_waiter():
    async def scenario() -> None:
        slots = EndpointSlots()
        first = await slots.acquire("http://a", 2, lease_s=60)
        await slots.acquire("http://a", 2, lease_s=60)
        await slots.acquire("http://b", 2, lease_s=60)  # another endpoint, its own limit
        waiting = asyncio.ensure_future(slots.acquire("http://a", 2, lease_s=60))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await slots.release("http://a", first)
        await asyncio.wait_for(waiting, timeout=5)
        assert await slots.peak_in_flight("http://a") == 2
        assert await slots.peak_in_flight("http://b") == 1

    asyncio.run(scenario())


def test_a_lease_never_released_expires():
    async def scenario() -> None:
        slots = EndpointSlots()
        await slots.acquire("http://a", 1, lease_s=0.05)  # its holder died
        # the waiter rechecks at least every second and reclaims the expired lease
        await asyncio.wait_for(slots.acquire("http://a", 1, lease_s=60), timeout=5)
        assert await slots.peak_in_flight("http://a") == 1

    asyncio.run(scenario())
