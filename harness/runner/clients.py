"""The LLM client a worker builds for a stream or a context build."""

from __future__ import annotations

from typing import Any, Optional

from lifebench.config.run import LLMConfig


def make_llm_client(model: Optional[str], llm: LLMConfig, seed: int, **tags: Optional[str]) -> Any:
    """A client of `model` at the endpoint, its cache, the run's answers file and prices,
    that sends `seed` (and `tags`, what its calls are for: see `LLMClient.tag`)."""
    from lifebench.llm.answers import RunAnswers
    from lifebench.llm.cache import ResponseCache
    from lifebench.llm.client import LLMClient
    from lifebench.llm.prices import load_prices

    assert model and llm.base_url
    prices = load_prices(llm.prices) if llm.prices else {}
    answers = RunAnswers(llm.answers_path, llm.replay_answers) \
        if llm.answers_path or llm.replay_answers else None
    client = LLMClient(model, llm, ResponseCache(llm.cache_path, llm.cache), prices, seed=seed,
                       answers=answers)
    client.tag(**tags)
    return client
