"""How²'s strategies (Table 1's rows) and ablations, as the parts of Algorithm 1 each uses."""

from __future__ import annotations

from dataclasses import dataclass

STRATEGIES = ("base", "just-ask", "memory-only", "parse", "relevance", "how2",
              "curriculum", "ask-first")


@dataclass(frozen=True)
class StrategyFlags:
    read_memory: bool
    store: bool
    relevance: bool
    parse: bool
    ask_first: bool = False


FLAGS = {
    "base": StrategyFlags(read_memory=False, store=False, relevance=False, parse=False),
    "just-ask": StrategyFlags(read_memory=True, store=False, relevance=False, parse=False),
    "memory-only": StrategyFlags(read_memory=True, store=True, relevance=False, parse=False),
    "parse": StrategyFlags(read_memory=True, store=True, relevance=False, parse=True),
    "relevance": StrategyFlags(read_memory=True, store=True, relevance=True, parse=False),
    "how2": StrategyFlags(read_memory=True, store=True, relevance=True, parse=True),
    "curriculum": StrategyFlags(read_memory=True, store=True, relevance=True, parse=True),
    "ask-first": StrategyFlags(read_memory=True, store=True, relevance=True, parse=True,
                               ask_first=True),
}
