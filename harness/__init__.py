"""lifebench's harness: records, contracts, the episode loop, streams, executors, CLI."""

__version__ = "0.1.0"
