"""LLM access: one client for every OpenAI-compatible endpoint, its response cache, price
tables, and the cluster-wide request limit under Ray."""
