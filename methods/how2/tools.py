"""How²'s actor tools as JSON function schemas (Appendix G, Figures 11-15, in our words),
their conversion to environment actions, and how the benchmark's text is shown.

On Plancraft the environment tools are `move` and `smelt` (`slot_from`, `slot_to`,
`quantity`) and `impossible` (`reason`); slots are written without brackets (`I12`, `A1`,
`0`), in the tools, in the observations and in the teacher's answers, as the paper does
(models write bracketed slots poorly in JSON); the action sent to the environment gets its
brackets back. Other benchmarks take free-text commands: one `act(command)` tool.
`think` and `read_memory` are the same everywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from lifebench.methods.how2 import prompts

_SLOT = re.compile(r"^\[?(0|[A-C][1-3]|I(?:[1-9]|[12][0-9]|3[0-6]))\]?$")
_BRACKETED = re.compile(r"\[(0|[A-C][1-3]|I(?:[1-9]|[12][0-9]|3[0-6]))\]")


def _function(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties,
                       "required": list(properties)}}}


def _slot(what: str) -> dict[str, str]:
    return {"type": "string", "description": f"The slot to {what} (A1, A2, B1, B2, etc.)"}


_QUANTITY = {"type": "integer", "description": "How many items"}
PLANCRAFT_ENV_TOOLS = (
    _function("move", "Move a given quantity of an item from one slot to another",
              {"slot_from": _slot("move the item from"), "slot_to": _slot("move the item to"),
               "quantity": _QUANTITY}),
    _function("smelt", "Smelt an item in a furnace and put what it gives in a given slot",
              {"slot_from": _slot("smelt the item from"), "slot_to": _slot("put the smelted item in"),
               "quantity": _QUANTITY}),
    _function("impossible", "Stop the task when you are certain it cannot be done with the "
                            "items you have",
              {"reason": {"type": "string", "description": "Why it cannot be done"}}),
)
TEXT_ENV_TOOLS = (
    _function("act", "Send one command to the environment, written as its manual says",
              {"command": {"type": "string", "description": "The command"}}),
)
THINK = _function("think", "Think, to help you decide on the next action",
                  {"thought": {"type": "string", "description": "Your thought"}})


def read_memory_tool(argument: str, described: str) -> dict[str, Any]:
    return _function("read_memory", f"Search a database for memories or instructions about a "
                                    f"{described}. Call it first, or whenever you are unsure.",
                     {argument: {"type": "string",
                                 "description": f"The {described} to look up in memory"}})


def unbracket(text: str) -> str:
    """Plancraft's text with slots written as `I12` rather than `[I12]`."""
    return _BRACKETED.sub(r"\1", text)


@dataclass(frozen=True)
class ToolSet:
    env_tools: tuple[dict[str, Any], ...]
    memory_argument: str      # read_memory's argument: `recipe` on Plancraft, `query` else
    query_kind: str           # what a query names
    system: str               # the main system prompt; {manual} is the benchmark's
    memory: dict[str, str]    # fills the memory block
    present: Callable[[str], str]  # how the benchmark's text is shown to every role

    @classmethod
    def for_benchmark(cls, benchmark: str) -> "ToolSet":
        if benchmark == "plancraft":
            return cls(PLANCRAFT_ENV_TOOLS, "recipe", "recipe", prompts.PLANCRAFT_SYSTEM,
                       prompts.PLANCRAFT_MEMORY, unbracket)
        return cls(TEXT_ENV_TOOLS, "query", "goal or sub-task", prompts.TEXT_SYSTEM,
                   prompts.TEXT_MEMORY, lambda text: text)

    @property
    def env_names(self) -> tuple[str, ...]:
        return tuple(t["function"]["name"] for t in self.env_tools)

    def schemas(self, with_memory: bool, with_think: bool = True) -> list[dict[str, Any]]:
        tools = [*self.env_tools, *([THINK] if with_think else [])]
        if with_memory:
            tools.append(read_memory_tool(self.memory_argument, self.query_kind))
        return tools

    def system_prompts(self, manual: str, context: str = "") -> tuple[str, str]:
        """(the actor's system prompt, the memory roles' one: it adds the memory block).
        `manual` carries the instance context where the prompt has the manual; a prompt
        without one (Plancraft's Figure 10) gets `context` after it."""
        actor = self.system.format(manual=manual.strip())
        if context and "{manual}" not in self.system:
            actor = f"{actor}\n\n{context}"
        return actor, f"{actor}\n\n{prompts.MEMORY_SYSTEM.format(**self.memory)}"

    def env_action(self, name: str, arguments: dict[str, Any]) -> tuple[Optional[str], Optional[str]]:
        """(action text, None) for a well-formed environment call, (None, problem) else."""
        if name in ("move", "smelt") and "move" in self.env_names:
            slots = []
            for key in ("slot_from", "slot_to"):
                match = _SLOT.match(str(arguments.get(key, "")).strip())
                if not match:
                    return None, f"{name} needs {key} as a slot like I3 or A1"
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
