"""Speedups for textworld's PDDL engine (the one ALFWorld's games run on). Same
observations, same admissible commands, same outcomes; `tests/test_alfworld.py` checks
that by playing games with them on and off.

1. `fast_downward.pddl2sas` is memoised. `PddlState` translates the game's PDDL twice on
   every load and again on every reset (~0.45 s); the translation is a function of its
   inputs only. (It also overwrites `sys.argv`, which the memo restores.) The second,
   optimised translation only feeds the planner (`replan`), which playing a game never
   calls: it is skipped, and `load_planner_task` loads it when the planner is wanted.
2. Grammar templates are parsed once. Every step derives the text of each applicable
   command by parsing its template with tatsu (about half of a step); parses are memoised
   and cloned per use, since derivation sets fields on the parsed symbols.
3. Derivation contexts are copied with `dict` instead of `deepcopy`: the entity infos and
   variables they map to are read during derivation, never changed.
4. Conjunctive queries are parsed once. Every step checks each grammar rule's condition
   (`Rule.parse_conjunctive_query`, tatsu again) for every command it derives: the same few
   hundred condition strings on every step of every game. A parsed query is a rule that
   matching only reads, so the parse is shared.
5. The game logic's grammar is parsed once per text. Every game embeds the same ALFRED
   logic (its actions and their grammar), which `GameLogic` parsed again on every load
   (about a second); parses are memoised and deep-copied per game, since a game's logic
   gains its own types.

Steps are ~3.5x faster, loads ~2x and resets ~7x (items 1-3); items 4-5 take tatsu from a
third of an ALFWorld run to under a tenth (tests/perf/perf_alfworld_speedups.py).
`enable()` installs them (the adapter does, on import) and `disable()` restores the
package's functions.
"""

from __future__ import annotations

import copy
import sys
import threading
from collections import OrderedDict
from typing import Any

import fast_downward
from textworld.envs.pddl import logic as pddl_logic
from textworld.envs.pddl import textgen
from textworld.logic import Rule

_TRANSLATIONS_KEPT = 16
_ORIGINAL = {"pddl2sas": fast_downward.pddl2sas, "parse": textgen._parse_and_convert,
             "copy_context": textgen.copy_context,
             "query": Rule.__dict__["parse_conjunctive_query"],
             "logic_parse": pddl_logic._parse_and_convert}
_translations: "OrderedDict[tuple, Any]" = OrderedDict()
_parses: dict[tuple, Any] = {}
_queries: dict[str, Any] = {}
_logics: dict[tuple, Any] = {}
_lock = threading.Lock()


def _memo_pddl2sas(domain: str, problem: str, verbose: bool = False, optimize: bool = False):
    # The planner's optimised task is not translated: the plain one stands in for it until
    # `load_planner_task`.
    return _translate(domain, problem, verbose, False)


def load_planner_task(pddl_state: Any) -> None:
    """Give the engine's planner its real (optimised) task, as textworld would have."""
    _, sas = _translate(pddl_state._logic.domain, pddl_state.pddl_problem, False, True)
    pddl_state.downward_lib.load_sas_replan(sas.encode("utf-8"))


def _translate(domain: str, problem: str, verbose: bool, optimize: bool):
    key = (domain, problem, bool(verbose), bool(optimize))
    # One translation at a time: fast-downward's translator keeps options in module
    # state, and streams may play in threads of one worker.
    with _lock:
        if key in _translations:
            _translations.move_to_end(key)
            return _translations[key]
        argv = list(sys.argv)
        try:
            result = _ORIGINAL["pddl2sas"](domain, problem, verbose=verbose, optimize=optimize)
        finally:
            sys.argv[:] = argv
        _translations[key] = result
        while len(_translations) > _TRANSLATIONS_KEPT:
            _translations.popitem(last=False)
        return result


def _memo_parse(text: str, rule_name: str, trace: bool = False, **kwargs: Any):
    if trace or kwargs:  # debugging output wanted: parse for real
        return _ORIGINAL["parse"](text, rule_name=rule_name, trace=trace, **kwargs)
    key = (text, rule_name)
    parsed = _parses.get(key)
    if parsed is None:
        parsed = _parses.setdefault(key, _ORIGINAL["parse"](text, rule_name=rule_name))
    return copy.deepcopy(parsed)


def _memo_query(cls: type, expr: str) -> Any:
    query = _queries.get(expr)
    if query is None:
        query = _queries.setdefault(expr, _ORIGINAL["query"].__func__(cls, expr))
    return query


def _memo_logic_parse(text: str, rule_name: str, **kwargs: Any) -> Any:
    if kwargs:
        return _ORIGINAL["logic_parse"](text, rule_name=rule_name, **kwargs)
    key = (text, rule_name)
    parsed = _logics.get(key)
    if parsed is None:
        parsed = _logics.setdefault(key, _ORIGINAL["logic_parse"](text, rule_name=rule_name))
    return copy.deepcopy(parsed)


def _dict_copy_context(context: dict) -> dict:
    return {"state": context["state"], "facts": context["facts"],
            "variables": dict(context["variables"]), "mapping": dict(context["mapping"]),
            "entity_infos": context["entity_infos"]}


def enable() -> None:
    fast_downward.pddl2sas = _memo_pddl2sas
    textgen._parse_and_convert = _memo_parse
    textgen.copy_context = _dict_copy_context
    Rule.parse_conjunctive_query = classmethod(_memo_query)
    pddl_logic._parse_and_convert = _memo_logic_parse


def disable() -> None:
    fast_downward.pddl2sas = _ORIGINAL["pddl2sas"]
    textgen._parse_and_convert = _ORIGINAL["parse"]
    textgen.copy_context = _ORIGINAL["copy_context"]
    Rule.parse_conjunctive_query = _ORIGINAL["query"]
    pddl_logic._parse_and_convert = _ORIGINAL["logic_parse"]
    for memo in (_translations, _parses, _queries, _logics):
        memo.clear()


def enabled() -> bool:
    return fast_downward.pddl2sas is _memo_pddl2sas
