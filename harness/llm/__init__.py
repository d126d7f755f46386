"""LLM access: one client for every OpenAI-compatible endpoint, a response cache, and a
local test server that speaks the protocol."""
