"""Plugin registry: benchmarks, methods and context providers from entry points, built-ins included.

Loading is lazy and fault-tolerant: a plugin that fails to import does not hide the others;
the failure is reported when that plugin is asked for by name. What an entry point loads
must be a `Benchmark` (or `Method`) subclass: its declarations are checked as its class is
made (see `lifebench.api.protocols`), so a typo in them is reported here, as the plugin's
load error.

Plugins that `lifebench.testing` ships for tests (the `corridor` benchmark) are loadable by
name but never listed: `lifebench list`, `make bench` and suggestions show real plugins only.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Optional

from lifebench.api.context import ContextProvider
from lifebench.api.errors import UserError, unknown_name
from lifebench.api.protocols import Benchmark, Method

BENCHMARK_GROUP = "lifebench.benchmarks"
METHOD_GROUP = "lifebench.methods"
CONTEXT_GROUP = "lifebench.contexts"
# The name of "no instance context" in `--context` (a grid's baseline row).
NO_CONTEXT = "none"
# Entry points into this package are test plugins: loadable, not listed.
TESTING_PACKAGE = "lifebench.testing."


@dataclass(frozen=True)
class PluginEntry:
    name: str
    target: str  # "module:attr"
    distribution: Optional[str]


@functools.lru_cache(maxsize=None)
def _entries(group: str) -> dict[str, PluginEntry]:
    found: dict[str, PluginEntry] = {}
    for ep in entry_points(group=group):
        dist = ep.dist.name if getattr(ep, "dist", None) is not None else None
        # The first registration of a name wins; a duplicate (e.g. an editable install
        # seen twice on sys.path) must not silently replace it.
        found.setdefault(ep.name, PluginEntry(ep.name, ep.value, dist))
    return found


_BASES = {BENCHMARK_GROUP: Benchmark, METHOD_GROUP: Method, CONTEXT_GROUP: ContextProvider}


@functools.lru_cache(maxsize=None)
def _load(group: str, name: str) -> type:
    entry = _entries(group)[name]
    module_name, _, attr = entry.target.partition(":")
    try:
        import importlib

        obj = importlib.import_module(module_name)
        for part in attr.split(".") if attr else []:
            obj = getattr(obj, part)
    except ImportError as exc:
        if entry.distribution in (None, "lifebench"):
            fix = f"install its extra (`pip install 'lifebench[{name}]'`) or run `make install`"
        else:
            fix = f"reinstall {entry.distribution} or uninstall it"
        where = f" (from {entry.distribution})" if entry.distribution else ""
        raise UserError(f"plugin {name!r}{where} failed to import: {exc}; {fix}") from exc
    except Exception as exc:  # a broken plugin must not take the whole CLI down
        raise UserError(f"plugin {name!r} failed to load: {type(exc).__name__}: {exc}") from exc
    base = _BASES[group]
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise UserError(f"plugin {name!r} ({entry.target}) is not a lifebench.api.{base.__name__} "
                        f"subclass; fix its entry point in group {group!r}")
    return obj


def _listed(group: str) -> list[str]:
    return sorted(n for n, e in _entries(group).items() if not e.target.startswith(TESTING_PACKAGE))


def benchmark_names() -> list[str]:
    return _listed(BENCHMARK_GROUP)


def method_names() -> list[str]:
    return _listed(METHOD_GROUP)


def distribution(kind: str, name: str) -> Optional[str]:
    """The distribution (pip package) that registers plugin `name` of `kind` ("benchmark",
    "method", "context"); None when unknown."""
    group = {"benchmark": BENCHMARK_GROUP, "method": METHOD_GROUP, "context": CONTEXT_GROUP}[kind]
    entry = _entries(group).get(name)
    return entry.distribution if entry else None


def context_names() -> list[str]:
    return sorted(_entries(CONTEXT_GROUP))


def context_class(name: str) -> type:
    if name not in _entries(CONTEXT_GROUP):
        raise unknown_name("context provider", name, [NO_CONTEXT] + context_names())
    return _load(CONTEXT_GROUP, name)


def benchmark_class(name: str) -> type:
    if name not in _entries(BENCHMARK_GROUP):
        raise unknown_name("benchmark", name, benchmark_names())
    return _load(BENCHMARK_GROUP, name)


def method_class(name: str) -> type:
    if name not in _entries(METHOD_GROUP):
        raise unknown_name("method", name, method_names())
    return _load(METHOD_GROUP, name)


def get_benchmark(name: str, config: object = None):
    """The process-wide benchmark object for a config (adapters cache their loaded data)."""
    cls = benchmark_class(name)
    return _benchmark(name, config if config is not None else cls.Config())


@functools.lru_cache(maxsize=None)
def _benchmark(name: str, config: object):
    return benchmark_class(name)(config)
