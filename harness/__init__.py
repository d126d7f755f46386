"""lifebench: a benchmark harness and leaderboard for LLM planning agents.

The package is layered; a module imports only from its own layer or those below it:

    lifebench.api          contracts, records, errors, reporting declarations (all a plugin needs)
    lifebench.config       options, run configs, plugin configs; lifebench.registry
    lifebench.llm          the OpenAI-compatible client and its cache
    lifebench.store        the results directory (records, trajectories, state, manifest)
    lifebench.runner       streams, the episode loop, executors, the teacher service
    lifebench.leaderboard  tables, statistics, plots, the regression check
    lifebench.testing      the local LLM server and helpers for plugins' tests
    lifebench.cli          the `lifebench` command (imported by nothing)

Benchmarks (`lifebench.benchmarks`) and methods (`lifebench.methods`) are plugins: they
import the api (methods also the llm layer), never the runner or the leaderboard.
"""

__version__ = "0.1.0"
