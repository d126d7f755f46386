"""What an endpoint did wrong that a run survived: each kind a client counts when it retries
(or waits, as the server asked), per episode in `extra.endpoint_faults` and per run in the
manifest's `llm_endpoint.faults`; `lifebench verify` does not compare them (a replay asks
no server)."""

from __future__ import annotations

FAULT_NOTES = (("server_error", "server errors (5xx)"), ("reset", "dropped connections"),
               ("timeout", "timeouts"), ("in_band_error", "errors inside a 200 answer"),
               ("empty_choices", "answers with no choices"),
               ("rate_limited", "rate-limit answers (429)"),
               ("retry_after_waits", "waits the server asked for (Retry-After)"),
               ("other_status", "answers of another failing status"))


def faults_note(counts: dict[str, int]) -> str:
    """What the endpoint did wrong over the run (`extra.endpoint_faults`), each retried."""
    said = [f"{counts[name]} {what}" for name, what in FAULT_NOTES if counts.get(name)]
    return f"the endpoint misbehaved, each time retried: {', '.join(said)}" if said else ""
