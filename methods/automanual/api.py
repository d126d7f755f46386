"""The agent a plan calls: its methods, how each call becomes one of the benchmark's text
commands, what the Planner is told about them, and what a benchmark starts with (helpers
defined in the sandbox, seed rules, a worked example).

ALFWorld gets named methods, as in AutoManual's code (`agent.go_to(r)`, `agent.take_from(o,
r)`, ...), each mapped to the text command ALFWorld 0.4.2 parses (its put is "move X to Y"),
with the agent's `location` and `holding` read from the observations; ids may be written
the authors' way (`cabinet_1`) or the game's (`cabinet 1`). Every other benchmark gets
`agent.act("command")`, the command as its manual writes it. ALFWorld's agent has `act` too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

from lifebench.methods.automanual import prompts

_ID = re.compile(r"_(\d+)\b")


@dataclass(frozen=True)
class Method:
    name: str
    params: tuple[str, ...]
    template: str  # the command, with {0}, {1} for the arguments
    doc: str


@dataclass(frozen=True)
class ActionApi:
    """What the agent can do on one benchmark."""

    name: str
    methods: tuple[Method, ...]
    helpers: tuple[str, ...] = ()          # sandbox code defined before any plan
    seed_rules: tuple[dict[str, str], ...] = ()
    demonstration: str = prompts.GENERIC_DEMONSTRATION
    tracks_state: bool = False             # location and holding (ALFWorld)

    @property
    def action_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.methods)

    def describe(self) -> str:
        lines = []
        for m in self.methods:
            lines.append(f"  agent.{m.name}({', '.join(m.params)}) -> str: {m.doc}")
        if self.tracks_state:
            lines.append("  agent.location, agent.holding: where the agent is and what it holds "
                         "(None when unknown or nothing)")
        return "\n".join(lines)

    def command(self, name: str, args: tuple[str, ...]) -> str:
        """The text command of a call; ValueError (shown in the plan) for a malformed one."""
        method = next((m for m in self.methods if m.name == name), None)
        if method is None:
            raise ValueError(f"the agent has no method {name!r}")
        if len(args) != len(method.params):
            raise ValueError(f"agent.{name} takes {len(method.params)} argument(s) "
                             f"({', '.join(method.params) or 'none'}), got {len(args)}")
        cleaned = [" ".join(_ID.sub(r" \1", str(a)).split()) if self.tracks_state
                   else " ".join(str(a).split()) for a in args]
        if any(not a for a in cleaned):
            raise ValueError(f"agent.{name} was given an empty argument")
        return method.template.format(*cleaned)


@dataclass
class AgentState:
    """ALFWorld's `location` and `holding`, as the observations tell them."""

    location: Optional[str] = None
    holding: Optional[str] = None
    tracked: bool = False

    def after(self, command: str, observation: str) -> dict[str, Any]:
        if not self.tracked:
            return {}
        arrived = re.search(r"You arrive at (?:the )?(.+?)\.", observation)
        if arrived:
            self.location = arrived.group(1).strip()
        picked = re.search(r"You pick up the (.+?) from", observation)
        if picked:
            self.holding = picked.group(1).strip()
        elif re.search(r"You (?:move|put) the .+? (?:to|in|on) ", observation):
            self.holding = None
        return {"location": self.location, "holding": self.holding}

    def describe(self) -> str:
        if not self.tracked:
            return ""
        return (f"You are at {self.location or 'the starting point'} and holding "
                f"{self.holding or 'nothing'}.")


_ALFWORLD_METHODS = (
    Method("go_to", ("receptacle",), "go to {0}", "walk to a receptacle; says what is on or in it "
           "(or that it is closed)"),
    Method("open", ("receptacle",), "open {0}", "open a closed receptacle; lists its contents"),
    Method("close", ("receptacle",), "close {0}", "close a receptacle"),
    Method("take_from", ("obj", "receptacle"), "take {0} from {1}",
           "pick up an object from the receptacle you are at (one held at a time)"),
    Method("put_in_or_on", ("obj", "receptacle"), "move {0} to {1}",
           "put the object you hold in or on the receptacle you are at"),
    Method("use", ("obj",), "use {0}", "switch on an object such as a desklamp"),
    Method("clean_with", ("obj", "receptacle"), "clean {0} with {1}",
           "clean the held object at a sinkbasin you are at"),
    Method("heat_with", ("obj", "receptacle"), "heat {0} with {1}",
           "heat the held object with a microwave you are at"),
    Method("cool_with", ("obj", "receptacle"), "cool {0} with {1}",
           "cool the held object with a fridge you are at"),
    Method("slice_with", ("obj", "knife"), "slice {0} with {1}", "slice food while holding a knife"),
    Method("examine", ("thing",), "examine {0}", "look at an object or receptacle closely"),
    Method("look", (), "look", "describe where you are"),
    Method("inventory", (), "inventory", "say what you hold"),
    Method("act", ("command",), "{0}", "send any other command, as the manual writes it"),
)

_GENERIC_METHODS = (
    Method("act", ("command",), "{0}",
           "send one command, written exactly as the manual above describes, and return what the "
           "environment answers"),
)

ALFWORLD = ActionApi("alfworld", _ALFWORLD_METHODS, helpers=prompts.ALFWORLD_HELPERS,
                     seed_rules=prompts.ALFWORLD_SEED_RULES,
                     demonstration=prompts.ALFWORLD_DEMONSTRATION, tracks_state=True)
GENERIC = ActionApi("generic", _GENERIC_METHODS)
APIS = {"alfworld": ALFWORLD}
API_CHOICES = ("auto", "generic")


def api_for(benchmark: str, choice: str) -> ActionApi:
    """The benchmark's own agent (`auto`, where there is one) or the generic `act`."""
    return APIS.get(benchmark, GENERIC) if choice == "auto" else GENERIC


@dataclass
class ActionLog:
    """One action a plan took: its call, the command played and what came back."""

    call: str
    command: str
    observation: str = ""
    attempt: int = 0
