"""The TODO forest (AutoContext, Section 4.2): shallow trees of tried and planned actions,
each rooted at a named state of the instance with a short summary.

A node is an action (action mode) or a sub-task handed to a sub-agent (agent mode) with its
key result; a node whose result is None is a TODO not run yet. The forest checks the paths
the Planner proposes (the feedback that makes it propose again), keeps the env snapshot
reached after each node, and promotes nodes to new states so that trees stay shallow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

INIT_STATE = "init_state"
FAILED = "action failed"

_AGENT_CALL = re.compile(r"""^agent\s*\(\s*["']?(.*?)["']?\s*\)$""", re.S)


def normalise_action(action: str) -> str:
    """Actions compare without case or surrounding and repeated spaces."""
    return " ".join(action.lower().split())


def state_name(text: str) -> str:
    """A state name as the forest keeps it: lower case, words joined by underscores."""
    return "_".join(re.findall(r"[a-z0-9]+", text.lower()))


@dataclass
class Node:
    action: str
    result: Optional[str] = None  # None: a TODO, not run yet
    failed: bool = False
    children: list["Node"] = field(default_factory=list)
    reaches: Optional[str] = None  # the state this node was promoted to
    snapshot: Any = None  # the env's snapshot after the action (not saved)
    # The episode ended with this node (done: the test task may have been won). Never
    # rendered: the context is task-agnostic, so nothing the Planner or the Extractor reads
    # says where an episode ended; nothing is run or promoted after it.
    ended: bool = False

    def child(self, action: str) -> Optional["Node"]:
        wanted = normalise_action(action)
        return next((c for c in self.children if normalise_action(c.action) == wanted), None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action, "result": self.result}
        if self.failed:
            out["failed"] = True
        if self.ended:
            out["ended"] = True
        if self.reaches:
            out["reaches"] = self.reaches
        if self.children:
            out["children"] = [c.to_json() for c in self.children]
        return out


@dataclass
class State:
    name: str
    summary: str
    snapshot: Any
    path: tuple[str, ...]  # the actions from the instance's reset to this state
    root: Node = field(default_factory=lambda: Node(action=""))


@dataclass(frozen=True)
class TodoPath:
    """A checked proposal: the state it starts from and its nodes (run ones, then TODOs)."""

    state: State
    nodes: tuple[Node, ...]

    @property
    def text(self) -> str:
        return " -> ".join([self.state.name, *(n.action for n in self.nodes)])


class TodoForest:
    def __init__(self, init_summary: str, init_snapshot: Any, agent_mode: bool = False) -> None:
        self.agent_mode = agent_mode
        self.states: dict[str, State] = {}
        self.states[INIT_STATE] = State(INIT_STATE, init_summary, init_snapshot, ())

    # --- proposals -------------------------------------------------------------------
    def parse(self, text: str) -> tuple[str, list[str]]:
        """(state name, actions) of "state -> action -> ... -> action"."""
        parts = [p.strip().strip("`'\"") for p in text.strip().split("->")]
        parts = [p for p in parts if p]
        if not parts:
            return "", []
        actions = [self._action(p) for p in parts[1:]]
        return parts[0], [a for a in actions if a]

    def _action(self, text: str) -> str:
        if self.agent_mode:
            call = _AGENT_CALL.match(text.strip())
            if call:
                return " ".join(call.group(1).split())
        return " ".join(text.split())

    def check(self, text: str, max_length: int, know_tree: bool = True) -> TodoPath | str:
        """The path `text` proposes, or the feedback that says why it cannot be run: a state
        that does not exist, no actions, too many new actions, nothing new (every action
        already run), or a path that goes on after an action that failed. `know_tree`
        False (the ablation without the forest) checks only the state."""
        name, actions = self.parse(text)
        state = self.states.get(name) or self.states.get(state_name(name))
        if state is None:
            return (f"The state '{name}' does not exist. Start the path with one of: "
                    f"{', '.join(self.states)}.")
        if not actions:
            return f"The path '{text.strip()}' has no action after its state."
        node, new = state.root, 0
        for i, action in enumerate(actions):
            known = node.child(action) if know_tree else None
            if known is not None and known.failed and i < len(actions) - 1:
                return (f"'{known.action}' failed from there ({known.result}); a path that "
                        f"goes on after it leads nowhere. Start from a state or an action "
                        f"that succeeded.")
            if known is not None and known.ended and i < len(actions) - 1:
                return (f"Nothing can be run after '{known.action}' on this path. Start from "
                        f"a state or another action.")
            new += known is None or known.result is None
            node = known if known is not None else Node(action)
        if new > max_length:
            return (f"The path has {new} new actions; at most {max_length} are allowed. "
                    f"Start from a state closer to the target.")
        if know_tree and new == 0:
            return (f"'{text.strip()}' was already explored: every action on it has a key "
                    f"result in the forest. Propose a path that tries something new.")
        return TodoPath(state, tuple(self._grow(state, actions, know_tree)))

    def _grow(self, state: State, actions: list[str], shared: bool) -> Iterator[Node]:
        node = state.root
        for action in actions:
            known = node.child(action) if shared else None
            if known is None:
                known = Node(action)
                node.children.append(known)
            node = known
            yield node

    # --- states ----------------------------------------------------------------------
    def promotion(self, path_text: str, new_name: str) -> tuple[TodoPath, str] | str:
        """The path a promotion names and the new state's name, or feedback: the path must
        be in the forest already, run, not end in a failure, and the name must be new."""
        name, actions = self.parse(path_text)
        state = self.states.get(name) or self.states.get(state_name(name))
        if state is None:
            return (f"The state '{name}' does not exist. Start the path with one of: "
                    f"{', '.join(self.states)}.")
        if not actions:
            return "The selected path must end at a node of the forest, not at a state."
        node, nodes = state.root, []
        for action in actions:
            found = node.child(action)
            if found is None or found.result is None:
                return (f"'{action}' after '{' -> '.join([name, *[n.action for n in nodes]])}' "
                        f"is not an explored node of the forest; select a path that is already "
                        f"in it, with no added actions.")
            nodes.append(found)
            node = found
        if node.failed:
            return f"The selected node '{node.action}' failed; select a node that succeeded."
        if node.ended:
            return f"Nothing can be run after '{node.action}'; select another node."
        new = state_name(new_name)
        if not new:
            return "Give the new state a name."
        if new in self.states:
            return f"A state named '{new}' exists already; choose a new name."
        return TodoPath(state, tuple(nodes)), new

    def promote(self, path: TodoPath, name: str, summary: str) -> State:
        last = path.nodes[-1]
        state = State(name, " ".join(summary.split()), last.snapshot,
                      path.state.path + tuple(n.action for n in path.nodes))
        last.reaches = name
        self.states[name] = state
        return state

    # --- views -----------------------------------------------------------------------
    def render(self, trees: bool = True) -> str:
        """The forest as indented text (what the Planner reads); without `trees`, only the
        states and their summaries."""
        lines: list[str] = []
        for state in self.states.values():
            lines.append(f"- {state.name}: {state.summary}")
            if trees:
                self._render(state.root, 1, lines)
        return "\n".join(lines)

    def _render(self, node: Node, depth: int, lines: list[str]) -> None:
        for child in node.children:
            label = f'agent("{child.action}")' if self.agent_mode else child.action
            result = "TODO" if child.result is None else child.result
            reach = f" [reach {child.reaches}]" if child.reaches else ""
            lines.append(f"{'  ' * depth}- {label}: {result}{reach}")
            self._render(child, depth + 1, lines)

    def prune(self, unrun: tuple[Node, ...]) -> None:
        """Drops TODO nodes that will never run (they follow where an episode ended), with
        anything below them."""
        gone = {id(n) for n in unrun if n.result is None}
        for node in [s.root for s in self.states.values()] + list(self.nodes()):
            node.children = [c for c in node.children if id(c) not in gone]

    def nodes(self) -> Iterator[Node]:
        for state in self.states.values():
            stack = list(state.root.children)
            while stack:
                node = stack.pop()
                yield node
                stack.extend(node.children)

    def to_json(self) -> dict[str, Any]:
        return {"mode": "agent" if self.agent_mode else "action",
                "states": [{"name": s.name, "summary": s.summary, "path": list(s.path),
                            "tree": [c.to_json() for c in s.root.children]}
                           for s in self.states.values()]}
