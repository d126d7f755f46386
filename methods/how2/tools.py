"""How²'s actor tools as JSON function schemas, and their conversion to env actions.

On Plancraft the environment tools are the package's actions (`move`, `smelt` with
`slot_from`, `slot_to`, `quantity`; `impossible` with `reason`), as in plancraft's own tool
interface. Other benchmarks have free-text commands: one `act(command)` tool. `think` and
`read_memory` are the same everywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

_SLOT = re.compile(r"^\[?(0|[A-C][1-3]|I(?:[1-9]|[12][0-9]|3[0-6]))\]?$")


def _function(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties,
                       "required": list(properties)}}}


_SLOT_ARG = {"type": "string", "description": "a slot: [0], [A1]..[C3] or [I1]..[I36]"}
PLANCRAFT_ENV_TOOLS = (
    _function("move", "Move items from one slot to another.",
              {"slot_from": _SLOT_ARG, "slot_to": _SLOT_ARG,
               "quantity": {"type": "integer", "description": "how many items"}}),
    _function("smelt", "Smelt items from one slot into another slot.",
              {"slot_from": _SLOT_ARG, "slot_to": _SLOT_ARG,
               "quantity": {"type": "integer", "description": "how many items"}}),
    _function("impossible", "Declare that the target cannot be crafted (ends the episode).",
              {"reason": {"type": "string", "description": "why"}}),
)
TEXT_ENV_TOOLS = (
    _function("act", "Send one command to the environment, written as its manual says.",
              {"command": {"type": "string", "description": "the command"}}),
)
THINK = _function("think", "Think before acting; costs no step.",
                  {"thought": {"type": "string", "description": "your reasoning"}})


def read_memory_tool(argument: str, described: str) -> dict[str, Any]:
    return _function("read_memory", f"Look up what you know about a {described}; costs no step.",
                     {argument: {"type": "string", "description": f"the {described}"}})


@dataclass(frozen=True)
class ToolSet:
    env_tools: tuple[dict[str, Any], ...]
    memory_argument: str      # read_memory's argument: `recipe` on Plancraft, `query` else
    query_kind: str           # what a query names, for the prompts

    @classmethod
    def for_benchmark(cls, benchmark: str) -> "ToolSet":
        if benchmark == "plancraft":
            return cls(PLANCRAFT_ENV_TOOLS, "recipe", "recipe (the item to craft)")
        return cls(TEXT_ENV_TOOLS, "query", "goal or sub-task")

    @property
    def env_names(self) -> tuple[str, ...]:
        return tuple(t["function"]["name"] for t in self.env_tools)

    def schemas(self, with_memory: bool) -> list[dict[str, Any]]:
        tools = [*self.env_tools, THINK]
        if with_memory:
            tools.append(read_memory_tool(self.memory_argument, self.query_kind))
        return tools

    def env_action(self, name: str, arguments: dict[str, Any]) -> tuple[Optional[str], Optional[str]]:
        """(action text, None) for a well-formed environment call, (None, problem) else."""
        if name in ("move", "smelt") and "move" in self.env_names:
            slots = []
            for key in ("slot_from", "slot_to"):
                match = _SLOT.match(str(arguments.get(key, "")).strip())
                if not match:
                    return None, f"{name} needs {key} as a slot like [I3] or [A1]"
                slots.append(f"[{match.group(1)}]")
            try:
                quantity = int(arguments.get("quantity", 1))
            except (TypeError, ValueError):
                return None, f"{name} needs an integer quantity"
            if quantity < 1:
                return None, f"{name} needs a quantity of at least 1"
            return f"{name}: from {slots[0]} to {slots[1]} with quantity {quantity}", None
        if name == "impossible" and "impossible" in self.env_names:
            reason = str(arguments.get("reason") or "").strip() or "it cannot be crafted"
            return f"impossible: {reason}", None
        if name == "act" and "act" in self.env_names:
            command = str(arguments.get("command") or "").strip()
            if not command:
                return None, "act needs a non-empty command"
            return command, None
        return None, f"unknown tool {name!r}"
