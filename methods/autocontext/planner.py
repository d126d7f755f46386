"""The Planner (AutoContext, Section 4.3): proposes TODOs aimed at the document's gaps,
checks each against the forest and asks again with the reason when it cannot be run
(redundant, from a state that does not exist, too long, past a failure), and promotes
explored nodes to new states.

Without the forest (the Table 4 ablation) it is shown only the states and the recent
trajectory, its proposals are checked only for their starting state, and it promotes no
states.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from lifebench.api import ChatModel, Prompt, PromptPart, RoleParams, filled

from lifebench.methods.autocontext import prompts
from lifebench.methods.autocontext.forest import State, TodoForest, TodoPath
from lifebench.methods.autocontext.replies import is_none, json_value, tag

NO_GAPS = "(no entry is marked {unknown})"


@dataclass
class PlannerStats:
    proposed: int = 0
    admitted: int = 0
    feedback: list[str] = field(default_factory=list)
    promoted: list[str] = field(default_factory=list)
    loop_control: list[str] = field(default_factory=list)  # each iteration's answer


def knowledge_gaps(section: str, unknown: str) -> list[str]:
    """The entries of a document section that hold the Unknown marker, each with the entry
    it belongs to ("Corridor: east: exit to Unknown")."""
    gaps, parent = [], ""
    for line in section.splitlines():
        text = line.strip().lstrip("-* ").strip()
        if not text:
            continue
        indented = line[: len(line) - len(line.lstrip())] != ""
        if not indented:
            parent = text.rstrip(":")
        if unknown.lower() in text.lower():
            gaps.append(f"{parent}: {text}" if indented and parent else text)
    return gaps


class Planner:
    def __init__(self, llm: ChatModel, params: RoleParams, forest: TodoForest, background: str,
                 knowledge_format: str, unknown: str, config: Any) -> None:
        self.llm = llm
        self.params = params
        self.forest = forest
        self.background = background
        self.knowledge_format = knowledge_format
        self.unknown = unknown
        self.config = config
        self.stats = PlannerStats()

    @property
    def _definition(self) -> str:
        return prompts.FOREST_DEFINITION_AGENT if self.forest.agent_mode \
            else prompts.FOREST_DEFINITION_ACTION

    def _forest(self) -> str:
        return self.forest.render(trees=self.config.forest)

    def _recent(self, trajectory: Prompt) -> list[PromptPart]:
        """The recent trajectory's block of a Planner prompt (none when it is empty), its
        steps history (`actor.steps_as_history`)."""
        if not trajectory:
            return []
        return list(filled(prompts.RECENT_TRAJECTORY, "trajectory", trajectory.parts).parts)

    def _feedback(self, messages: list[dict[str, Any]], reply: str,
                  feedback: str) -> list[dict[str, Any]]:
        """The conversation asked again: the reply and why it cannot be used."""
        self.stats.feedback.append(feedback)
        return messages + [{"role": "assistant", "content": reply},
                           {"role": "user", "content": feedback}]

    def observation_todo(self, observations: str, trajectory: Prompt) -> Optional[TodoPath]:
        gaps = knowledge_gaps(observations, self.unknown)
        prompt = filled(
            prompts.PLAN_OBSERVATIONS, "trajectory", self._recent(trajectory),
            max_length=self.config.max_length, background=self.background,
            forest_definition=self._definition,
            forest=self._forest(), knowledge_format=self.knowledge_format,
            knowledge=observations, unknown=self.unknown,
            gaps="\n".join(f"- {g}" for g in gaps) or NO_GAPS.format(unknown=self.unknown))
        messages = [{"role": "user", "content": prompt}]
        for _ in range(self.config.plan_retries + 1):
            reply = self.llm.chat(messages, role="plan", params=self.params).text
            todo = tag(reply, "todo")
            if todo is None:
                todo = (reply.strip().splitlines() or ["None"])[-1]
            if is_none(todo):
                return None
            self.stats.proposed += 1
            checked = self.forest.check(todo.splitlines()[0], self.config.max_length,
                                        know_tree=self.config.forest)
            if isinstance(checked, TodoPath):
                self.stats.admitted += 1
                return checked
            checked += "\nAnswer again in the same format."
            messages = self._feedback(messages, reply, checked)
        return None

    def rule_todos(self, trajectory: Prompt) -> list[TodoPath]:
        prompt = filled(
            prompts.PLAN_RULES, "trajectory", self._recent(trajectory),
            max_length=self.config.max_length, num_todo=self.config.num_todo,
            background=self.background, forest_definition=self._definition, forest=self._forest())
        messages = [{"role": "user", "content": prompt}]
        admitted: list[TodoPath] = []
        for _ in range(self.config.plan_retries + 1):
            reply = self.llm.chat(messages, role="plan", params=self.params).text
            value = json_value(reply)
            paths = [p for p in value if isinstance(p, str)] if isinstance(value, list) else []
            problems = []
            for text in paths[: self.config.num_todo - len(admitted)]:
                self.stats.proposed += 1
                checked = self.forest.check(text, self.config.max_length,
                                            know_tree=self.config.forest)
                if isinstance(checked, TodoPath):
                    self.stats.admitted += 1
                    admitted.append(checked)
                else:
                    problems.append(f"- {text}: {checked}")
            if not problems or len(admitted) >= self.config.num_todo:
                break
            messages = self._feedback(messages, reply, "These paths cannot be run:\n"
                                      + "\n".join(problems)
                                      + "\nPropose replacements for them as a JSON list.")
        return admitted

    def keep_exploring(self, document: str, trajectory: Prompt) -> bool:
        """Loop control (Section 4.3): whether gaps remain, as the Planner judges from the
        forest and the whole document. A reply that says neither yes nor no continues: the
        iteration and step budgets still bound the build."""
        prompt = filled(
            prompts.LOOP_CONTROL, "trajectory", self._recent(trajectory),
            unknown=self.unknown, background=self.background,
            forest_definition=self._definition, forest=self._forest(),
            knowledge_format=self.knowledge_format, knowledge=document)
        reply = self.llm.chat([{"role": "user", "content": prompt}], role="loop_control",
                              params=self.params).text
        answer = (tag(reply, "continue") or "").strip().lower()
        self.stats.loop_control.append(answer or "unreadable")
        return not answer.startswith("no")

    def promote(self, observations: str) -> Optional[State]:
        if not self.config.forest:
            return None
        prompt = prompts.PROMOTE_STATE.format(
            unknown=self.unknown, background=self.background,
            forest_definition=self._definition, forest=self._forest(),
            knowledge_format=self.knowledge_format, knowledge=observations)
        messages = [{"role": "user", "content": prompt}]
        for _ in range(self.config.plan_retries + 1):
            reply = self.llm.chat(messages, role="plan", params=self.params).text
            value = json_value(reply)
            if not isinstance(value, dict):
                return None  # "None": nothing worth promoting
            checked = self.forest.promotion(str(value.get("selected_path", "")),
                                            str(value.get("new_state_name", "")))
            if not isinstance(checked, str):
                path, name = checked
                state = self.forest.promote(path, name, str(value.get("state_summary", "")))
                self.stats.promoted.append(name)
                return state
            checked += "\nAnswer again in the same format."
            messages = self._feedback(messages, reply, checked)
        return None
