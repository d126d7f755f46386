"""Configs: options declared once (flag, spec-file key, help, default), the run's config,
and plugins' typed configs."""
