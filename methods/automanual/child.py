"""The sandbox that runs the Planner's code: a separate Python process (this file, run as
`python -I -S -c <this source> <limits>`), which imports only the standard library.

Why a process and not a thread: a thread cannot be stopped, so an endless loop or a huge
computation in the Planner's code would keep a core of the worker busy for the rest of the
run; a process is killed (`sandbox.CodeProcess` does it when the code computes for too long
without acting), and the kernel caps what it may use (`_limit`: address space, CPU seconds,
no new processes, no files written, few descriptors). It starts with an empty environment
(no API key reaches it) and without site-packages.

Inside, the code runs with `exec` in a namespace that holds only the agent (whose action
methods send the action to the parent and block until its observation comes back), the
helpers the parent defines, a few safe built-ins and a cut-down `re`. Before anything runs,
`check_code` allows only the syntax a plan needs (an allow list of node types: no `match`,
whose patterns read attributes without an attribute node, no `with`, `yield`, classes,
imports or async), and refuses names such as `open`, `eval` or `__import__`, dunder names
(in strings too; bound as well as loaded: `except E as __builtins__`), `return`, `break`
and `continue` that leave a `finally`, and any attribute outside an allow list (the public
methods of str, list, dict, set, tuple, numbers, regex matches, and the agent's own), so
`().__class__.__subclasses__()` or a generator's frame are out of reach.

Confined (`confine.py`), the process the parent starts forks the init of its PID namespace,
which forks the plan's process (`pid_init.py`); only that one runs `main` on.

Protocol: one JSON object per line. Parent -> child: {"type": "init", "actions": [...],
"variables": {...}}, {"type": "define", "source": ...}, {"type": "run", "code": ...},
{"type": "exit"}; while code runs, each action is sent as {"type": "action", "name",
"args", "call"} and answered with {"type": "result", "observation", "state"}, {"type":
"refused", "error"} (a malformed call: raised in the code as ActionError) or the fixed
line `STOP_LINE` (the task is over or the step cap is reached: the child sends the plan's
end and exits, whatever the plan would run next; it is recognised by its bytes and ended
in a `finally` with calls that need no stack, so a plan recursing to the limit cannot
catch it). Child -> parent after each message: {"type": "ready"}, {"type": "defined",
"errors"}, {"type": "finished", "error", "printed"}. Every string the child sends is valid
text (`valid_text`). Whether and why a run was stopped is the parent's to know: it reads
no such field from the child.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import traceback
from typing import Any, Callable, Optional

MAX_CODE_CHARS = 30_000
MAX_PRINTED = 4_000
MAX_ERROR_CHARS = 2_000
STOP_LINE = b'{"type": "stop"}\n'  # the parent's stop, byte for byte
# The end a stopped plan sends when the full one (with its prints) cannot be made (the
# plan used up the stack): written as it is, no encoding needed.
STOPPED_END = b'{"type": "finished", "error": null, "printed": ""}\n'

# Built-ins an escape would start from, refused by name wherever they appear (with every
# dunder name). Other built-ins are simply absent from the namespace: a plan may use their
# names as its own variables (`object`, `type`), and calling them is a NameError.
FORBIDDEN_NAMES = frozenset({
    "eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "globals", "locals",
    "vars", "input", "breakpoint",
})
# Statements and expressions refused outright, with the reason shown to the Planner.
FORBIDDEN_NODES: dict[type, str] = {
    ast.Import: "imports are not allowed",
    ast.ImportFrom: "imports are not allowed",
    ast.ClassDef: "classes are not allowed: define functions",
    ast.AsyncFunctionDef: "async code is not allowed",
    ast.AsyncFor: "async code is not allowed",
    ast.AsyncWith: "async code is not allowed",
    ast.Await: "async code is not allowed",
}
# The syntax a plan may use: everything else (match statements, whose class and mapping
# patterns read attributes without an attribute node; `with`; generators' `yield`; classes;
# imports; async) is refused by name.
ALLOWED_NODES = frozenset({
    ast.Module, ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If,
    ast.Break, ast.Continue, ast.Pass, ast.Return, ast.FunctionDef, ast.Lambda, ast.arguments,
    ast.arg, ast.keyword, ast.Try, ast.ExceptHandler, ast.Raise, ast.Assert, ast.Delete,
    ast.Global, ast.Nonlocal, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp,
    ast.Call, ast.Name, ast.Attribute, ast.Subscript, ast.Slice, ast.Starred, ast.List,
    ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
    ast.comprehension, ast.Constant, ast.JoinedStr, ast.FormattedValue, ast.NamedExpr,
    ast.Load, ast.Store, ast.Del, ast.And, ast.Or, ast.Add, ast.Sub, ast.Mult, ast.Div,
    ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift, ast.BitOr, ast.BitXor, ast.BitAnd,
    ast.MatMult, ast.Invert, ast.Not, ast.UAdd, ast.USub, ast.Eq, ast.NotEq, ast.Lt, ast.LtE,
    ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn,
})
_DUNDER = re.compile(r"__\w+__")
# Attribute names that would reach beyond the namespace even without an underscore.
_UNSAFE_ATTRIBUTES = frozenset({"format", "format_map", "mro"})


def _builtins() -> dict[str, Any]:
    import builtins

    names = ("abs", "all", "any", "bool", "dict", "enumerate", "filter", "float", "int",
             "isinstance", "len", "list", "map", "max", "min", "range", "repr", "reversed",
             "round", "set", "sorted", "str", "sum", "tuple", "zip", "frozenset", "divmod",
             "chr", "ord", "iter", "next", "Exception", "AssertionError", "ValueError",
             "KeyError", "IndexError", "TypeError", "RuntimeError", "StopIteration",
             "ZeroDivisionError", "NameError", "AttributeError")
    return {name: getattr(builtins, name) for name in names}


class SafeRe:
    """The part of `re` a plan needs; its attributes are all in the allow list."""

    IGNORECASE = I = re.IGNORECASE
    MULTILINE = M = re.MULTILINE
    DOTALL = S = re.DOTALL

    def __init__(self) -> None:
        for name in ("search", "match", "fullmatch", "findall", "finditer", "sub", "subn",
                     "split", "escape", "compile"):
            setattr(self, name, getattr(re, name))


RE_NAMES = frozenset({"search", "match", "fullmatch", "findall", "finditer", "sub", "subn",
                      "split", "escape", "compile", "IGNORECASE", "I", "MULTILINE", "M",
                      "DOTALL", "S"})


def allowed_attributes(extra: frozenset = frozenset()) -> frozenset:
    """Public methods and fields of the values a plan works with, plus `extra` (the
    agent's actions and fields)."""
    values: list[Any] = ["", [], {}, set(), frozenset(), (), 0, 0.0, True,
                         re.compile(""), re.match("", ""), Exception()]
    names = {n for v in values for n in dir(v) if not n.startswith("_")}
    names |= RE_NAMES | {"args", "location", "holding"}
    return frozenset((names - _UNSAFE_ATTRIBUTES) | extra)


def check_code(code: str, allowed: Optional[frozenset] = None) -> list[str]:
    """What makes `code` unfit to run (empty when it may run): each problem with its line."""
    if len(code) > MAX_CODE_CHARS:
        return [f"the code is longer than {MAX_CODE_CHARS} characters"]
    try:
        tree = ast.parse(code, filename="<plan>")
    except SyntaxError as exc:
        return [f"line {exc.lineno}: syntax error: {exc.msg}"]
    except (RecursionError, MemoryError):  # (this file imports only the standard library)
        return ["the code nests too deeply to be read"]
    allowed = allowed if allowed is not None else allowed_attributes()
    problems: list[str] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        reason = FORBIDDEN_NODES.get(type(node))
        if reason:
            problems.append(f"line {line}: {reason}")
        elif type(node) not in ALLOWED_NODES:
            problems.append(f"line {line}: `{type(node).__name__}` is not allowed in a plan")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and _DUNDER.search(node.value):
            problems.append(f"line {line}: a dunder name in a string is not allowed")
        elif isinstance(node, ast.Name) and _forbidden_name(node.id):
            problems.append(f"line {line}: `{node.id}` is not available in the sandbox")
        elif isinstance(node, ast.Attribute) and node.attr == "format" and _plain_template(node.value):
            continue  # "go to {}".format(x): a literal template that reaches no attribute
        elif isinstance(node, ast.Attribute) and (node.attr.startswith("_") or node.attr not in allowed):
            problems.append(f"line {line}: the attribute `.{node.attr}` is not allowed"
                            + (" (use an f-string)" if node.attr == "format" else ""))
        elif isinstance(node, ast.ExceptHandler) and node.type is None:
            problems.append(f"line {line}: a bare `except:` is not allowed; use `except Exception:`")
        elif isinstance(node, ast.Try) and (exit_ := _leaves_finally(node.finalbody)) is not None:
            problems.append(f"line {exit_.lineno}: `{type(exit_).__name__.lower()}` inside "
                            f"`finally` is not allowed (it would swallow the exception in flight)")
        bad = [name for name in _bound_names(node) if _forbidden_name(name)]
        if bad:
            problems.append(f"line {line}: the name `{bad[0]}` is not allowed")
    seen: set[str] = set()
    return [p for p in problems if not (p in seen or seen.add(p))][:8]


def _forbidden_name(name: str) -> bool:
    """The one rule for a name, loaded or bound: no dunder, none of FORBIDDEN_NAMES."""
    return name.startswith("__") or name in FORBIDDEN_NAMES


def _bound_names(node: ast.AST) -> list[str]:
    """The names `node` binds without an `ast.Name` of its own (those are checked as
    names): a function's name, a parameter, an `except ... as` name, `global` and
    `nonlocal` names. (An `as` name left unchecked once restored the real built-ins: the
    handler deletes it on exit, and the next `exec` fills `__builtins__` again.)"""
    if isinstance(node, ast.FunctionDef):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.ExceptHandler):
        return [node.name] if node.name else []
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    return []


def _leaves_finally(statements: list[ast.stmt]) -> Optional[ast.stmt]:
    """The first `return`, `break` or `continue` among `statements` (a finally block) that
    leaves the block: it would swallow the exception in flight, the parent's stop among
    them. Nested functions are their own scope; loops inside the block keep their own
    `break` and `continue`. Iterative: the child runs with a small recursion limit."""
    stack = [(statement, False) for statement in reversed(statements)]
    while stack:
        node, in_loop = stack.pop()
        if isinstance(node, ast.Return) or (isinstance(node, (ast.Break, ast.Continue))
                                            and not in_loop):
            return node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        loop = isinstance(node, (ast.For, ast.While, ast.AsyncFor))
        for name in ("finalbody", "orelse", "handlers", "body"):
            for child in reversed(getattr(node, name, None) or []):
                stack.append((child, in_loop or (loop and name == "body")))
    return None


def _plain_template(node: ast.AST) -> bool:
    """Whether `node` is a string literal whose format fields are plain names or positions
    (`{}`, `{0}`, `{name}`): no attribute or index lookups, no nested fields."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return False
    import string

    try:
        fields = list(string.Formatter().parse(node.value))
    except ValueError:
        return False
    return all(name is None or (re.fullmatch(r"\w*", name) and "{" not in (spec or ""))
               for _, name, spec, _ in fields)


def function_sources(code: str) -> list[str]:
    """The top-level function definitions of `code` whose body is more than `pass`/`...`
    (a rule's example that only names a helper defines nothing)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, RecursionError, MemoryError):
        return []
    out = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(
            getattr(s, "value", None), ast.Constant) and isinstance(s.value.value, str))]
        trivial = all(isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(
            getattr(s, "value", None), ast.Constant) and s.value.value is Ellipsis) for s in body)
        if body and not trivial:
            segment = ast.get_source_segment(code, node)
            if segment:
                out.append(segment)
    return out


# -- the child process

class ActionError(Exception):
    """An action call the parent could not turn into a command (raised in the plan)."""


def _limit(limits: dict[str, Any]) -> None:
    try:
        import resource
    except ImportError:  # not on this platform: the parent's wall-clock cap remains
        return
    memory = int(limits.get("memory_mb", 1024)) * 1024 * 1024
    cpu = int(limits.get("cpu_s", 120))
    for kind, value in ((getattr(resource, "RLIMIT_AS", None), memory),
                        (getattr(resource, "RLIMIT_CPU", None), cpu),
                        (getattr(resource, "RLIMIT_NPROC", None), 0),
                        (getattr(resource, "RLIMIT_FSIZE", None), 0),
                        (getattr(resource, "RLIMIT_NOFILE", None), 16),
                        (getattr(resource, "RLIMIT_CORE", None), 0)):
        if kind is None:
            continue
        try:
            resource.setrlimit(kind, (value, value))
        except (ValueError, OSError):
            pass


# A lone surrogate (`chr(0xD800)`) is a str but no text: json escapes it, and the parent's
# prompt would then fail to encode. Every string the child sends is made valid first.
_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(value: Any) -> Any:
    """`value` (a string, or a list or dict of them) with every lone surrogate replaced by
    U+FFFD, as `lifebench.api.untrusted.encodable` does in the parent."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [valid_text(item) for item in value]
    if isinstance(value, dict):
        return {key: valid_text(item) for key, item in value.items()}
    return value


class _Channel:
    def __init__(self, reader: Any, writer: Any) -> None:
        import os

        self.reader = reader
        self.writer = writer
        # bound now: the stop's `finally` calls them without a lookup that could fail
        self.raw_write, self.exit, self.fd = os.write, os._exit, writer.fileno()

    def send(self, message: dict[str, Any]) -> None:
        self.writer.write((json.dumps(valid_text(message)) + "\n").encode("utf-8"))
        self.writer.flush()


class _Agent:
    """The object the plan calls `agent`: its action methods, `location` and `holding`.
    While functions are being defined again (a fresh process, `define`) it does not act:
    a default argument or a decorator that calls it fails that definition only."""

    def __init__(self, channel: _Channel, actions: list[str], on_stop: Callable[[], None]) -> None:
        self.location: Optional[str] = None
        self.holding: Optional[str] = None
        self._channel = channel
        self._defining = False
        self._on_stop = on_stop
        for name in actions:
            setattr(self, name, self._action(name))

    def _action(self, name: str) -> Callable[..., str]:
        def act(*args: Any) -> str:
            if self._defining:
                raise ActionError("the agent cannot act while functions are being defined "
                                  "(a default argument or a decorator that acts)")
            shown = ", ".join(repr(a) for a in args)
            channel = self._channel
            channel.send({"type": "action", "name": name, "args": [str(a) for a in args],
                          "call": f"agent.{name}({shown})"})
            line = channel.reader.readline()
            if line == STOP_LINE:
                try:
                    self._on_stop()  # sends the end with the prints, then exits
                finally:  # it could not (the stack is used up): the fixed end, then exit
                    channel.raw_write(channel.fd, STOPPED_END)
                    channel.exit(0)
            if not line:
                raise SystemExit(0)  # the parent is gone
            reply = json.loads(line.decode("utf-8"))
            if reply.get("type") == "refused":
                raise ActionError(str(reply.get("error")))
            state = reply.get("state") or {}
            if "location" in state:
                self.location = state["location"]
            if "holding" in state:
                self.holding = state["holding"]
            return str(reply.get("observation", ""))
        act.__name__ = name
        return act


def _error_text(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<plan>"]
    where = f" (line {frames[-1].lineno}: {frames[-1].line.strip()})" if frames and frames[-1].line \
        else (f" (line {frames[-1].lineno})" if frames else "")
    message = str(exc)
    if len(message) > MAX_ERROR_CHARS:  # an error the code raised with a huge text
        message = message[:MAX_ERROR_CHARS] + f" ... ({len(message) - MAX_ERROR_CHARS} more characters)"
    return f"{type(exc).__name__}: {message}{where}" if message else f"{type(exc).__name__}{where}"


class _Child:
    def __init__(self, channel: _Channel) -> None:
        self.channel = channel
        self.namespace: dict[str, Any] = {}
        self.allowed = allowed_attributes()
        self.printed: list[str] = []
        self.printed_chars = 0

    def _print(self, *args: Any, sep: str = " ", end: str = "\n") -> None:
        text = sep.join(str(a) for a in args) + end
        if self.printed_chars < MAX_PRINTED:
            self.printed.append(text[: MAX_PRINTED - self.printed_chars])
        self.printed_chars += len(text)

    def _finished(self, error: Optional[str]) -> None:
        printed = "".join(self.printed)
        if self.printed_chars > MAX_PRINTED:
            printed += f"... ({self.printed_chars - MAX_PRINTED} more characters)"
        self.channel.send({"type": "finished", "error": error, "printed": printed})

    def _stop(self) -> None:
        """The parent stopped the plan (the task is over, or the step cap is reached): its
        end is sent and the process ends, whatever the plan would have run next (a
        `finally` of its own, say); the parent starts a fresh process if it needs one."""
        self._finished(None)
        self.channel.exit(0)

    def init(self, message: dict[str, Any]) -> None:
        actions = [str(a) for a in message.get("actions", [])]
        self.allowed = allowed_attributes(frozenset(actions))
        builtins = _builtins()
        builtins["print"] = self._print
        builtins["ActionError"] = ActionError
        self.namespace = {"__builtins__": builtins, "__name__": "__plan__",
                          "agent": _Agent(self.channel, actions, self._stop), "re": SafeRe()}
        for name, value in (message.get("variables") or {}).items():
            if isinstance(name, str) and name.isidentifier() and not name.startswith("_"):
                self.namespace[name] = value
        self.channel.send({"type": "ready"})

    def define(self, source: str) -> None:
        """Top-level function definitions, one at a time (a broken one skips only itself)."""
        errors = []
        agent = self.namespace.get("agent")
        if isinstance(agent, _Agent):
            agent._defining = True
        for piece in function_sources(source) or ([source] if source.strip() else []):
            problems = check_code(piece, self.allowed)
            if problems:
                errors.append("; ".join(problems))
                continue
            try:
                tree = ast.parse(piece)
                if not all(isinstance(n, ast.FunctionDef) for n in tree.body):
                    errors.append("only function definitions can be predefined")
                    continue
                exec(compile(tree, "<helper>", "exec"), self.namespace)
            except Exception as exc:  # noqa: BLE001 (reported to the parent)
                errors.append(_error_text(exc))
        if isinstance(agent, _Agent):
            agent._defining = False
        self.channel.send({"type": "defined", "errors": errors})

    def run(self, code: str) -> None:
        self.printed, self.printed_chars = [], 0
        problems = check_code(code, self.allowed)
        error: Optional[str] = None
        if problems:
            error = "Refused: " + "; ".join(problems)
        else:
            import linecache

            # the plan's lines in its errors
            linecache.cache["<plan>"] = (len(code), None, code.splitlines(True), "<plan>")
            try:
                exec(compile(code, "<plan>", "exec"), self.namespace)
            except RecursionError:
                error = "RecursionError: maximum recursion depth exceeded"
            except MemoryError:
                error = "MemoryError: the code used too much memory"
            except Exception as exc:  # noqa: BLE001 (the plan's own error: its feedback)
                error = _error_text(exc)
        self._finished(error)

    def serve(self) -> None:
        while True:
            line = self.channel.reader.readline()
            if not line:
                return  # the parent is gone
            if line == STOP_LINE:
                continue  # a stop that arrived after the code had ended
            message = json.loads(line.decode("utf-8"))
            kind = message.get("type")
            if kind == "init":
                self.init(message)
            elif kind == "define":
                self.define(str(message.get("source", "")))
            elif kind == "run":
                self.run(str(message.get("code", "")))
            elif kind == "exit":
                return
            elif kind in ("result", "refused"):
                continue  # an answer that arrived after the code had ended
            else:
                self.channel.send({"type": "finished", "error": f"unknown message {kind!r}",
                                   "printed": ""})


class _Sink:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def main() -> None:
    import os

    limits = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    enter = globals().get("enter_pid_namespace")  # prepended by the parent (pid_init.py)
    if limits.get("pid_namespace") and enter is not None:
        enter(globals()["libc_prctl"]())  # from here on: the plan's process, PID 2
    _limit(limits)
    writer = os.fdopen(os.dup(1), "wb")
    reader = sys.stdin.buffer
    # Nothing the plan does can write to the protocol's stream (and a confined child has no
    # /dev/null: a sink in memory).
    sys.stdout = sys.stderr = _Sink()
    harden = globals().get("harden")  # prepended by the parent (harden.py)
    if harden is not None:
        harden()
    sys.setrecursionlimit(int(limits.get("recursion", 200)))
    _Child(_Channel(reader, writer)).serve()


if __name__ == "__main__":
    main()
