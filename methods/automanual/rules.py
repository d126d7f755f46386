"""AutoManual's memory: the rule system, the skill bank, and the manual made from the rules.

The Builder and the consolidator change the rules through operations parsed from a JSON
list (`parse_operations`), never by running code they write: `write_rule`, `update_rule`
and `delete_rule`, applied by `RuleSystem.apply` in the order given, ids as they stood
before the list (so several deletions in one list do not shift each other's targets).
Afterwards the rules are renumbered rule_1..rule_n and every reference in their texts
follows. A failed epoch may not write Success Process or Useful Helper Method rules (the
authors meant to refuse these; their check never fired, see README).
"""

from __future__ import annotations

import ast
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from lifebench.api.untrusted import parse_json, parse_python

from lifebench.methods.automanual import prompts
from lifebench.methods.automanual.prompts import RULE_TYPES

STATE_VERSION = 1
VALIDATION_KEPT = 3  # validation entries a rule keeps (the authors' last 3)
SUCCESS_ONLY = ("Success Process", "Useful Helper Method")
_RULE_REF = re.compile(r"\brule_(\d+)\b")
_TYPE_ALIASES = {
    "special phenomena": "Special Phenomena/Mechanism",
    "special phenomenon": "Special Phenomena/Mechanism",
    "special mechanism": "Special Phenomena/Mechanism",
    "special phenomena/mechanism": "Special Phenomena/Mechanism",
    "special phenomenon/mechanism": "Special Phenomena/Mechanism",
    "mechanism": "Special Phenomena/Mechanism",
    "success process": "Success Process",
    "useful helper method": "Useful Helper Method",
    "helper method": "Useful Helper Method",
    "useful helper": "Useful Helper Method",
    "helper": "Useful Helper Method",
    "corrected error": "Corrected Error",
    "unresolved error": "Unresolved Error",
    "unsolved error": "Unresolved Error",
}
OPERATIONS = ("write_rule", "update_rule", "delete_rule", "get_interactions")


def rule_type(text: Any) -> Optional[str]:
    """A rule type as the system spells it, or None for an unknown one."""
    if not isinstance(text, str):
        return None
    return _TYPE_ALIASES.get(" ".join(text.lower().replace("_", " ").split()))


@dataclass
class Rule:
    rule: str
    type: str
    example: str = ""
    validation: str = ""

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def looks_like_code(text: str) -> bool:
    """Whether an example is Python code (shown in a python fence) rather than prose."""
    if "\n" not in text.strip() and "(" not in text:
        return False
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(n, (ast.Call, ast.FunctionDef, ast.Assign)) for n in ast.walk(tree))


@dataclass(frozen=True)
class Operation:
    op: str
    rule_id: Optional[int] = None
    rule: Optional[str] = None
    type: Optional[str] = None
    example: Optional[str] = None
    epochs: tuple[str, ...] = ()


class OperationError(ValueError):
    """A reply whose operations cannot be read at all (the Builder is asked again)."""


def _rule_id(value: Any) -> Optional[int]:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(?:rule[_ ]?)?(\d+)\s*", value, re.I)
        if match:
            return int(match.group(1))
    return None


def _json_candidates(reply: str) -> list[str]:
    fenced = re.findall(r"```(?:json)?\s*\n(.*?)```", reply, re.S)
    out = [block for block in reversed(fenced) if block.strip()[:1] in "[{"]
    start = reply.rfind("\n[")
    if start >= 0:
        out.append(reply[start:].strip())
    if reply.strip().startswith(("[", "{")):
        out.append(reply.strip())
    return out


def parse_operations(reply: str) -> tuple[list[Operation], list[str]]:
    """The operations of a reply's last JSON block, and the problems of the items that
    could not be read (skipped). Raises OperationError when no JSON list is found."""
    data: Any = None
    for candidate in _json_candidates(reply):
        try:
            data = parse_json(candidate)
            break
        except ValueError:  # not JSON, or over the bounds (lifebench.api.untrusted)
            continue
    else:
        raise OperationError("no ```json block with a list of operations was found")
    if isinstance(data, dict):
        data = data.get("operations", [data] if "op" in data else None)
    if not isinstance(data, list):
        raise OperationError("the JSON block is not a list of operations")
    operations, problems = [], []
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            problems.append(f"item {index + 1} is not an object")
            continue
        op = str(item.get("op") or item.get("operation") or item.get("function") or "").strip()
        if op not in OPERATIONS:
            problems.append(f"item {index + 1}: unknown operation {op!r}")
            continue
        epochs = item.get("epochs") or ()
        if isinstance(epochs, str):
            epochs = [e.strip() for e in epochs.split(",")]
        operations.append(Operation(
            op=op, rule_id=_rule_id(item.get("rule_id", item.get("id"))),
            rule=item["rule"] if isinstance(item.get("rule"), str) and item["rule"].strip() else None,
            type=item.get("type") if isinstance(item.get("type"), str) else None,
            example=item["example"] if isinstance(item.get("example"), str) else None,
            epochs=tuple(str(e) for e in epochs if str(e).strip())))
    return operations, problems


@dataclass
class ApplyReport:
    applied: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


class RuleSystem:
    """The rules in order (rule_1 first) and the manual formulated from them."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self.manual = ""

    def __len__(self) -> int:
        return len(self.rules)

    def seed(self, rules: tuple[dict[str, str], ...]) -> None:
        for item in rules:
            self.rules.append(Rule(item["rule"], item["type"], item.get("example", ""), "seed"))

    # -- rendering
    def render_rule(self, index: int, validation: bool = False) -> str:
        rule = self.rules[index]
        text = f"rule_{index + 1} ({rule.type}): {rule.rule}"
        if rule.example.strip():
            if looks_like_code(rule.example):
                text += f"\nExample:\n```python\n{rule.example.strip()}\n```"
            else:
                text += f"\nExample: {rule.example.strip()}"
        if validation and rule.validation:
            text += f"\nValidation record: {rule.validation}"
        return text

    def listing(self, validation: bool = False) -> str:
        """Every rule, for the Builder (`validation`: with records) or the Planner."""
        if not self.rules:
            return "(no rules yet)"
        return "\n\n".join(self.render_rule(i, validation) for i in range(len(self.rules)))

    def for_planner(self) -> str:
        """What the Planner is shown: the manual once there is one, else the rules."""
        if self.manual:
            return f"{prompts.MANUAL_HEADER}\n{self.manual}"
        if not self.rules:
            return prompts.NO_RULES
        return f"{prompts.RULES_HEADER}\n{self.listing()}"

    def type_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for rule in self.rules:
            counts[rule.type] = counts.get(rule.type, 0) + 1
        return counts

    # -- operations
    def apply(self, operations: list[Operation], epoch: str, success: bool) -> ApplyReport:
        report = ApplyReport()
        slots: list[Optional[Rule]] = list(self.rules)
        start = len(slots)
        for op in operations:
            if op.op == "get_interactions":
                continue
            if op.op == "write_rule":
                kind = rule_type(op.type)
                if op.rule is None or kind is None:
                    report.refused.append(f"write_rule needs a rule text and a type of "
                                          f"{', '.join(RULE_TYPES)} (got type {op.type!r})")
                    continue
                if kind in SUCCESS_ONLY and not success:
                    report.refused.append(f"write_rule of type {kind!r}: not from a failed epoch")
                    continue
                slots.append(Rule(op.rule.strip(), kind, (op.example or "").strip(), epoch))
                report.applied.append(f"write_rule rule_{len(slots)} ({kind})")
                continue
            index = (op.rule_id - 1) if op.rule_id is not None else -1
            if not 0 <= index < start or slots[index] is None:
                report.refused.append(f"{op.op}: no rule {op.rule_id!r}")
                continue
            if op.op == "delete_rule":
                slots[index] = None
                report.applied.append(f"delete_rule rule_{op.rule_id}")
                continue
            current = slots[index]
            assert current is not None
            kind = rule_type(op.type) if op.type else current.type
            if kind is None:
                report.refused.append(f"update_rule rule_{op.rule_id}: unknown type {op.type!r}")
                continue
            records = [r for r in current.validation.split(" | ") if r] + [epoch]
            slots[index] = Rule(op.rule.strip() if op.rule else current.rule, kind,
                                op.example.strip() if op.example is not None else current.example,
                                " | ".join(records[-VALIDATION_KEPT:]))
            report.applied.append(f"update_rule rule_{op.rule_id}")
        self._compact(slots)
        return report

    def _compact(self, slots: list[Optional[Rule]], order: Optional[list[int]] = None) -> None:
        """Keep the rules left (in `order`, positions into `slots`), renumbered, with the
        references in their texts following the new numbers."""
        order = order if order is not None else [i for i, r in enumerate(slots) if r is not None]
        mapping = {old + 1: new + 1 for new, old in enumerate(order)}

        def renumber(text: str) -> str:
            def sub(match: re.Match) -> str:
                old = int(match.group(1))
                return f"rule_{mapping[old]}" if old in mapping else "(a removed rule)"
            return _RULE_REF.sub(sub, text)

        kept = []
        for old in order:
            rule = slots[old]
            assert rule is not None
            kept.append(Rule(renumber(rule.rule), rule.type, renumber(rule.example), rule.validation))
        self.rules = kept

    # -- the manual
    def formulate(self, reply: str, overview: str = "") -> bool:
        """Make the manual from the Formulator's reply: its markdown block, with each rule id
        line replaced by the full rule; the rules are renumbered in the manual's order and
        rules it leaves out follow under "Other rules". False (and a manual by type) when the
        reply has no usable markdown block."""
        blocks = re.findall(r"```(?:markdown|md)?\s*\n(.*?)```", reply, re.S)
        block = max(blocks, key=len) if blocks else ""
        cited: list[int] = []
        for line in block.splitlines():
            if re.match(r"^\s*(?:[-*+]|\d+[.)])\s", line):
                for number in _RULE_REF.findall(line):
                    index = int(number) - 1
                    if 0 <= index < len(self.rules) and index not in cited:
                        cited.append(index)
        if not cited:
            self._manual_by_type(overview)
            return False
        rest = [i for i in range(len(self.rules)) if i not in cited]
        new_number = {old: new for new, old in enumerate(cited + rest)}
        self._compact(list(self.rules), cited + rest)
        lines: list[str] = []
        shown: set[int] = set()
        for line in block.strip().splitlines():
            numbers = [int(n) - 1 for n in _RULE_REF.findall(line)]
            if re.match(r"^\s*(?:[-*+]|\d+[.)])\s", line) and numbers:
                for old in numbers:
                    if old in new_number and new_number[old] not in shown:
                        shown.add(new_number[old])
                        lines.append(self.render_rule(new_number[old]))
                continue
            lines.append(_RULE_REF.sub(lambda m: _renamed(m, new_number), line))
        if rest:
            lines += ["", "## Other rules"]
            lines += [self.render_rule(i) for i in range(len(cited), len(self.rules))]
        self.manual = "\n\n".join(_paragraphs(lines))
        return True

    def _manual_by_type(self, overview: str) -> None:
        parts = [overview.strip()] if overview.strip() else []
        for kind in RULE_TYPES:
            indices = [i for i, r in enumerate(self.rules) if r.type == kind]
            if indices:
                parts.append(f"## {kind}")
                parts += [self.render_rule(i) for i in indices]
        self.manual = "\n\n".join(parts)

    # -- state
    def to_json(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "rules": [r.to_dict() for r in self.rules],
                "manual": self.manual}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "RuleSystem":
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"automanual rules of state version {data.get('version')!r}, "
                             f"expected {STATE_VERSION}")
        system = cls()
        system.rules = [Rule(**r) for r in data["rules"]]
        system.manual = data.get("manual", "")
        return system


def _renamed(match: re.Match, mapping: dict[int, int]) -> str:
    old = int(match.group(1)) - 1
    return f"rule_{mapping[old] + 1}" if old in mapping else match.group(0)


def _paragraphs(lines: list[str]) -> list[str]:
    """Lines joined into blocks (consecutive plain lines stay together)."""
    out: list[str] = []
    current: list[str] = []
    for line in lines:
        if "\n" in line or line.startswith("#") or not line.strip():
            if current:
                out.append("\n".join(current))
                current = []
            if line.strip():
                out.append(line)
        else:
            current.append(line)
    if current:
        out.append("\n".join(current))
    return out


@dataclass
class Skill:
    """A task type's entry: code that solved one (direct: at the first attempt, locked;
    indirect: rewritten after several), or the reflection on a failure."""

    task_type: str
    kind: str  # direct | indirect | failure
    task: str
    code: str = ""
    reflection: str = ""
    epoch: str = ""


class SkillBank:
    """One entry per task type, kept as the authors' code keeps it: a direct success
    replaces anything and is never replaced; an indirect success replaces an indirect one or
    a failure; a failure is stored only where there is nothing or a failure."""

    def __init__(self) -> None:
        self.skills: dict[str, Skill] = {}

    def __len__(self) -> int:
        return len(self.skills)

    def offer(self, skill: Skill) -> bool:
        current = self.skills.get(skill.task_type)
        keep = (current is None or skill.kind == "direct" and current.kind != "direct"
                or skill.kind == "indirect" and current.kind in ("indirect", "failure")
                or skill.kind == "failure" and current.kind == "failure")
        if keep:
            self.skills[skill.task_type] = skill
        return keep

    def to_json(self) -> dict[str, Any]:
        return {key: asdict(skill) for key, skill in self.skills.items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "SkillBank":
        bank = cls()
        bank.skills = {key: Skill(**value) for key, value in data.items()}
        return bank
