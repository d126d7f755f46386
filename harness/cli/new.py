"""`lifebench new method|benchmark NAME [--dir D]`: a plugin package to start from.

It writes a pip-installable package: pyproject.toml (the entry point in group
`lifebench.methods` or `lifebench.benchmarks`), the plugin class with every hook documented,
a README, tests that run the plugin through the harness (with `lifebench.testing`'s local
OpenAI-compatible server and its tiny `corridor` benchmark), and `.github/workflows/ci.yml`
for the plugin's own repository (its tests, then `lifebench check` against a committed
baseline). The templates are this package's data (`templates/`), rendered with
`string.Template`; nothing is written over an existing file.
"""

from __future__ import annotations

import argparse
import re
import string
from importlib import resources
from pathlib import Path

import lifebench
from lifebench.api.errors import UserError
from lifebench.cli.base import SubCommand

NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
KINDS = ("method", "benchmark")
# template (kind folder or "common") -> path in the package ({module} is the import name)
FILES = {
    ("common", "pyproject.toml"): "pyproject.toml",
    ("common", "README.md"): "README.md",
    ("common", "ci.yml"): ".github/workflows/ci.yml",
    ("common", "conftest.py"): "tests/conftest.py",
    ("common", "gitignore"): ".gitignore",
    ("kind", "plugin.py"): "{module}/__init__.py",
    ("kind", "test_plugin.py"): "tests/test_{module}.py",
}
NOTES = {
    "method": """
## Running it elsewhere

The method needs only an LLM, so it runs on every installed benchmark:
`lifebench run --benchmark plancraft --split val.small --method {name} --model M --base-url URL`
(`lifebench list benchmarks --available` names the benchmarks whose data is here).
""",
    "benchmark": """
## Running methods on it

Every method runs on it without changes: `random` and `oracle` need nothing, the LLM methods
an endpoint (`lifebench run --benchmark {name} --method react --model M --base-url URL`).
""",
}


def names_for(kind: str, name: str) -> dict[str, str]:
    """The template's fields for plugin `name` of `kind`."""
    if not NAME.fullmatch(name):  # fullmatch: "$" would let a trailing newline through
        raise UserError(f"plugin name {name!r}: use lowercase letters, digits and single dashes, "
                        f"starting with a letter (e.g. my-{kind})")
    words = name.split("-")
    camel = "".join(w.capitalize() for w in words)
    suffix = kind.capitalize()
    class_name = camel if camel.endswith(suffix) else camel + suffix
    module = "lifebench_" + "_".join(words)
    if kind == "method":
        example = (f"lifebench run --benchmark corridor --split tiny --method {name} "
                   f"--model M --base-url URL")
        # the LLM of the baseline and of CI: lifebench's local server, always answering "right"
        baseline_setup = ("echo '[\"right\"]' > ci-replies.json\n"
                          "python -m lifebench.testing.fakeserver --port 8765 --script "
                          "ci-replies.json &\nsleep 2\n")
        ci_setup = "".join("\n          " + line for line in baseline_setup.splitlines())
        ci_run = (f"lifebench run --benchmark corridor --split small --method {name} "
                  f"--model ci --base-url http://127.0.0.1:8765/v1 --cache off --no-progress")
    else:
        example = f"lifebench run --benchmark {name} --method random,oracle"
        ci_setup = baseline_setup = ""
        ci_run = f"lifebench run --benchmark {name} --method random,oracle --no-progress"
    return {
        "kind": kind, "name": name, "module": module, "class_name": class_name,
        "config_name": class_name + "Config", "distribution": "lifebench-" + name,
        "description": f"The {name} {kind} for lifebench.",
        "lifebench_requirement": f"lifebench=={lifebench.__version__}",
        "example_run": example, "ci_run": ci_run, "ci_setup": ci_setup,
        "baseline_setup": baseline_setup,
        "kind_notes": NOTES[kind].format(name=name),
    }


def render_plugin(kind: str, name: str, directory: Path) -> list[Path]:
    """Write the package of plugin `name` into `directory`; the files written."""
    fields = names_for(kind, name)
    if directory.exists() and not directory.is_dir():
        raise UserError(f"{directory} is a file, not a folder; give another --dir")
    if directory.exists() and any(directory.iterdir()):
        raise UserError(f"{directory} exists and is not empty; give another --dir")
    templates = resources.files("lifebench.cli").joinpath("templates")
    written = []
    for (folder, template), target in FILES.items():
        source = templates.joinpath(kind if folder == "kind" else folder, template + ".tmpl")
        try:
            text = string.Template(source.read_text()).substitute(fields)
        except (KeyError, ValueError) as exc:  # a template's bug, not the user's
            raise RuntimeError(f"template {folder}/{template}: {exc}") from exc
        path = directory / target.format(module=fields["module"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


class New(SubCommand):
    name = "new"
    help = "write a plugin package (method or benchmark) to start from"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("kind", choices=KINDS)
        parser.add_argument("plugin", metavar="NAME", help="the plugin's name, e.g. my-method")
        parser.add_argument("--dir", help="where to write it (default: ./lifebench-NAME)")

    def run(self, args: argparse.Namespace) -> int:
        directory = Path(args.dir or f"lifebench-{args.plugin}")
        written = render_plugin(args.kind, args.plugin, directory)
        fields = names_for(args.kind, args.plugin)
        print(f"wrote the {args.kind} plugin {args.plugin!r} ({len(written)} files) to {directory}:\n"
              f"  {fields['module']}/__init__.py  the class {fields['class_name']}, every hook documented\n"
              f"  tests/                   run it through the harness (pytest)\n"
              f"  .github/workflows/ci.yml its tests and `lifebench check` against baseline/\n"
              f"next: pip install -e {directory} && pytest {directory}")
        return 0
