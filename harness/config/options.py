"""Options declared once: a dataclass field carries its flag, help text and default.

`option(...)` makes such a field. From a config dataclass made of them come the command
line flags (`add_arguments`), the keys a TOML file may use (`toml_keys`), the merge of
defaults < file < flags with every value coerced to its field's type (`from_sources`), and
what the manifest records (`dataclasses.asdict`). Adding an option is adding one field.
A nested config dataclass (e.g. the LLM endpoint's) contributes its own options.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from dataclasses import MISSING, dataclass, field
from typing import Any, Callable, Iterator, Optional

from lifebench.api.errors import UserError, unknown_name

_OPTION = "lifebench.option"


@dataclass(frozen=True)
class Option:
    help: str
    flag: Optional[str]          # "--max-steps"; None: not on the command line
    aliases: tuple[str, ...]     # other flags for it
    toml: Optional[str]          # its key in a spec file; None: not in files
    toml_aliases: tuple[str, ...]
    parse: Optional[Callable[[Any, str], Any]]  # (raw value, where) -> typed value
    repeat: bool                 # the flag may be given several times (values collect)
    metavar: Optional[str]
    show_default: bool
    minimum: Optional[float]     # numbers (or each number of a list) at least this


def option(default: Any = MISSING, *, help: str, flag: Optional[str] = "", aliases: tuple[str, ...] = (),
           toml: Optional[str] = "", toml_aliases: tuple[str, ...] = (),
           parse: Optional[Callable[[Any, str], Any]] = None, repeat: bool = False,
           metavar: Optional[str] = None, factory: Any = MISSING, show_default: bool = True,
           minimum: Optional[float] = None) -> Any:
    """A config field. `flag` and `toml` default to the field's name (`--field-name`,
    `field_name`); None keeps the option off the command line or out of spec files."""
    meta = {_OPTION: Option(help=help, flag=flag, aliases=aliases, toml=toml,
                            toml_aliases=toml_aliases, parse=parse, repeat=repeat,
                            metavar=metavar, show_default=show_default, minimum=minimum)}
    if factory is not MISSING:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class BoundOption:
    """An option with its place: `path` is the field's attribute path (("llm", "cache"))."""

    path: tuple[str, ...]
    field: dataclasses.Field
    annotation: Any
    spec: Option

    @property
    def name(self) -> str:
        return self.path[-1]

    @property
    def dest(self) -> str:
        return "__".join(self.path)

    @property
    def flag(self) -> Optional[str]:
        if self.spec.flag is None:
            return None
        return self.spec.flag or "--" + self.name.replace("_", "-")

    @property
    def toml(self) -> Optional[str]:
        if self.spec.toml is None:
            return None
        return self.spec.toml or self.name

    @property
    def where(self) -> str:
        """How the user names this option in messages (its flag and the flag's aliases)."""
        if self.flag:
            return "/".join((self.flag, *self.spec.aliases))
        return self.toml or self.name

    def default(self) -> Any:
        if self.field.default is not MISSING:
            return self.field.default
        if self.field.default_factory is not MISSING:  # type: ignore[misc]
            return self.field.default_factory()  # type: ignore[misc]
        return MISSING

    def convert(self, raw: Any) -> Any:
        if self.spec.parse is not None:
            value = self.spec.parse(raw, self.where)
        else:
            value = coerce(raw, self.annotation, self.where)
        low = self.spec.minimum
        if low is not None:
            for number in value if isinstance(value, tuple) else (value,):
                if isinstance(number, (int, float)) and not number >= low:
                    shown = int(low) if float(low).is_integer() else low
                    raise UserError(f"{self.where} must be at least {shown}, got {number}")
        return value


def options(cls: type, prefix: tuple[str, ...] = ()) -> Iterator[BoundOption]:
    """The options of a config dataclass, nested configs flattened, in field order."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(_OPTION)
        annotation = hints[f.name]
        if spec is None:
            if dataclasses.is_dataclass(annotation):
                yield from options(annotation, prefix + (f.name,))
            continue
        yield BoundOption(prefix + (f.name,), f, annotation, spec)


def toml_keys(cls: type) -> dict[str, BoundOption]:
    keys = {}
    for opt in options(cls):
        if opt.toml is not None:
            for key in (opt.toml, *opt.spec.toml_aliases):
                keys[key] = opt
    return keys


def add_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """One flag per option; the help text ends with the default. Parsed values stay raw
    (None when not given) so that `from_sources` can tell a flag from a default."""
    for opt in options(cls):
        if opt.flag is None:
            continue
        help_text = opt.spec.help
        # a default made by a factory (the cores, $LIFEBENCH_WORKERS) is made on use, where
        # a bad environment is a one-line error, unless the help shows it
        made = opt.field.default is MISSING and not opt.spec.show_default
        default = MISSING if made else opt.default()
        if opt.spec.show_default and default not in (MISSING, None, (), {}, []):
            help_text += f" (default: {_show(default)})"
        kwargs: dict[str, Any] = {"dest": opt.dest, "help": help_text, "default": None}
        if opt.spec.metavar:
            kwargs["metavar"] = opt.spec.metavar
        if opt.annotation is bool:
            kwargs["action"] = "store_const"
            kwargs["const"] = not default
        elif opt.spec.repeat:
            kwargs["action"] = "append"
        parser.add_argument(opt.flag, *opt.spec.aliases, **kwargs)


def _show(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return ",".join(map(str, value))
    return str(value)


def from_sources(cls: type, file_values: Optional[dict[str, Any]] = None,
                 args: Optional[argparse.Namespace] = None, **given: Any) -> Any:
    """A config from its defaults, then a spec file's values (by TOML key), then flags
    (`args`, from `add_arguments`), then `given` (by field name, top level): each value
    coerced and checked; a bad one is a UserError naming its flag or key."""
    values: dict[tuple[str, ...], Any] = {}
    for opt in options(cls):
        if file_values is not None and opt.toml is not None:
            for key in (opt.toml, *opt.spec.toml_aliases):
                if key in file_values:  # checked even when a flag overrides it
                    values[opt.path] = opt.convert(file_values[key])
        if args is not None and getattr(args, opt.dest, None) is not None:
            values[opt.path] = opt.convert(getattr(args, opt.dest))
    return _build(cls, values, (), given)


def _build(cls: type, values: dict[tuple[str, ...], Any], prefix: tuple[str, ...],
           given: dict[str, Any]) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        path = prefix + (f.name,)
        if not prefix and f.name in given:
            kwargs[f.name] = given[f.name]
        elif f.metadata.get(_OPTION) is None and dataclasses.is_dataclass(hints[f.name]):
            kwargs[f.name] = _build(hints[f.name], values, path, {})
        elif path in values:
            kwargs[f.name] = values[path]
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise UserError(str(exc)) from None


def check_toml_keys(data: dict[str, Any], classes: tuple[type, ...], where: str) -> None:
    """A UserError for a key that no option of `classes` takes."""
    keys: dict[str, BoundOption] = {}
    for cls in classes:
        keys.update(toml_keys(cls))
    unknown = sorted(set(data) - set(keys))
    if unknown:
        raise unknown_name(f"key in {where}", unknown[0], keys)


# ---------------------------------------------------------------- coercion

def coerce(value: Any, annotation: Any, where: str) -> Any:
    """A CLI string or TOML value as a field's declared type; UserError otherwise."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null")):
            if type(None) in args:
                return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return coerce(value, arg, where)
            except UserError as exc:
                errors.append(str(exc))
        raise UserError(errors[0] if errors else f"{where}: bad value {value!r}")
    if origin is typing.Literal:
        for choice in args:
            if str(choice) == str(value):
                return choice
        raise UserError(f"{where}: {value!r} is not one of {', '.join(map(str, args))}")
    if annotation is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise UserError(f"{where}: expected true or false, got {value!r}")
    if annotation in (int, float):
        return _number(value, annotation, where)
    if annotation is str:
        if isinstance(value, (dict, list, tuple)):
            raise UserError(f"{where}: expected text, got {value!r}")
        return str(value)
    if origin in (list, tuple) and isinstance(value, (list, tuple, str)):
        items = split_list(value)
        inner = args[0] if args else str
        return tuple(coerce(v, inner, where) for v in items)
    return value


def _number(value: Any, kind: type, where: str) -> Any:
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]  # a repeatable flag given once
    try:
        if isinstance(value, bool) or isinstance(value, (dict, list, tuple)):
            raise ValueError
        if kind is int and isinstance(value, float):
            if not value.is_integer():
                raise ValueError
            return int(value)
        return kind(str(value).strip())
    except (TypeError, ValueError):
        raise UserError(f"{where}: expected {'an integer' if kind is int else 'a number'}, "
                        f"got {value!r}") from None


def split_list(value: Any) -> list[Any]:
    """Comma-separated text, a list, or a list of comma-separated texts (repeated flags),
    flattened; empty items dropped."""
    items = value if isinstance(value, (list, tuple)) else [value]
    out: list[Any] = []
    for item in items:
        if isinstance(item, str):
            out.extend(t.strip() for t in item.split(",") if t.strip())
        else:
            out.append(item)
    return out
