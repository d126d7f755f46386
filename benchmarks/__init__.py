"""Benchmark adapters, one package per benchmark, registered through entry points."""
