"""The Extractor (AutoContext, Section 4.3): turns trajectories into document edits.

For each section (Observations, then Action Rules) it asks for candidate edits (add,
update, remove), checks each one alone against the trajectory and the schema (accept,
revise or reject), and has the accepted and revised ones applied; a section with no
accepted edit is left as it was, with no call. The ablation "w/o Extractor" replaces all of
this with one naive prompt that rewrites the whole document, schema unseen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lifebench.api import ChatModel, ContextSchema, Prompt, RoleParams, filled

from lifebench.methods.autocontext import prompts
from lifebench.methods.autocontext.actor import steps_as_history
from lifebench.methods.autocontext.replies import is_none, numbered_tags, tag

OBSERVATIONS_HEADING = "#### Observations"
RULES_HEADING = "#### Action Rules"


@dataclass
class Knowledge:
    """The document being built: its two sections, or one free text (naive updates)."""

    observations: str = prompts.EMPTY_SECTION
    rules: str = prompts.EMPTY_SECTION
    free_text: str = ""

    def document(self) -> str:
        if self.free_text:
            return self.free_text
        return f"{OBSERVATIONS_HEADING}\n{self.observations.strip()}\n\n" \
               f"{RULES_HEADING}\n{self.rules.strip()}"

    def gaps_view(self) -> str:
        """What the Planner reads for gaps: the Observations (all of a naive text)."""
        return self.free_text or self.observations

    def section(self, which: str) -> str:
        """Only one section of the document ("observations" or "action_rules") as a
        method is shown it; the free text of naive updates has no sections."""
        if self.free_text or which == "all":
            return self.document()
        if which == "observations":
            return f"{OBSERVATIONS_HEADING}\n{self.observations.strip()}"
        return f"{RULES_HEADING}\n{self.rules.strip()}"


def split_document(document: str) -> Knowledge:
    """A document back into its sections (the inverse of `Knowledge.document`)."""
    if OBSERVATIONS_HEADING not in document or RULES_HEADING not in document:
        return Knowledge(free_text=document)
    head, _, rules = document.partition(RULES_HEADING)
    observations = head.partition(OBSERVATIONS_HEADING)[2]
    return Knowledge(observations.strip(), rules.strip())


@dataclass
class ExtractorStats:
    proposed: int = 0
    accepted: int = 0
    revised: int = 0
    rejected: int = 0
    applied_calls: int = 0
    rejected_edits: list[str] = field(default_factory=list)


class Extractor:
    def __init__(self, llm: ChatModel, params: RoleParams, schema: ContextSchema,
                 background: str, naive: bool) -> None:
        self.llm = llm
        self.params = params
        self.schema = schema
        self.background = background
        self.naive = naive
        self.stats = ExtractorStats()

    def update(self, knowledge: Knowledge, trajectory: str) -> Knowledge:
        """The knowledge updated from `trajectory` (its steps history: `steps_as_history`)."""
        if not isinstance(trajectory, Prompt):
            trajectory = steps_as_history(trajectory)
        if self.naive:
            return self._naive(knowledge, trajectory)
        observations = self._section(prompts.EXTRACT_OBSERVATIONS, self.schema.observations,
                                     knowledge.observations, trajectory)
        rules = self._section(prompts.EXTRACT_RULES, self.schema.action_rules, knowledge.rules,
                              trajectory)
        return Knowledge(observations, rules)

    def _chat(self, prompt: str, role: str) -> str:
        return self.llm.chat([{"role": "user", "content": prompt}], role=role,
                             params=self.params).text

    def _section(self, template: str, definition: str, section: str, trajectory: Prompt) -> str:
        reply = self._chat(filled(template, "trajectory", trajectory.parts, background=self.background,
                                  knowledge_definition=definition, knowledge=section), "extract")
        edits = numbered_tags(reply, "modification")
        self.stats.proposed += len(edits)
        kept = [e for e in (self.check(edit, definition, section, trajectory) for edit in edits)
                if e is not None]
        if not kept:
            return section
        self.stats.applied_calls += 1
        reply = self._chat(prompts.APPLY_EDITS.format(
            knowledge_definition=definition, knowledge=section,
            modifications="\n".join(f"{i + 1}. {e}" for i, e in enumerate(kept))), "apply")
        updated = tag(reply, "knowledge")
        return updated if updated and not is_none(updated) else section

    def check(self, edit: str, definition: str, section: str, trajectory: Prompt) -> str | None:
        """The edit as it should be applied (itself, or its revision), or None when the
        trajectory does not support it."""
        reply = self._chat(filled(
            prompts.CHECK_EDIT, "trajectory", trajectory.parts, background=self.background,
            knowledge_definition=definition, knowledge=section, modification=edit), "check")
        decision = (tag(reply, "decision") or "").strip().lower()
        content = tag(reply, "content")
        if decision.startswith("accept"):
            self.stats.accepted += 1
            return edit
        if decision.startswith("revise") and not is_none(content):
            self.stats.revised += 1
            return content
        self.stats.rejected += 1  # "Reject", or a reply that decides nothing
        self.stats.rejected_edits.append(edit[:300])
        return None

    def _naive(self, knowledge: Knowledge, trajectory: Prompt) -> Knowledge:
        reply = self._chat(filled(
            prompts.NAIVE_UPDATE, "trajectory", trajectory.parts, background=self.background,
            knowledge=knowledge.free_text or prompts.EMPTY_SECTION), "extract")
        updated = tag(reply, "knowledge")
        return Knowledge(free_text=updated if updated and not is_none(updated)
                         else knowledge.free_text or prompts.EMPTY_SECTION)
