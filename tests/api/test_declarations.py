"""What a plugin declares is checked when its class is made: a typo is an error at load."""

from __future__ import annotations

import pytest

from lifebench.api import Benchmark, Method, Metric


def make_benchmark(**attributes):
    return type("Made", (Benchmark,), {"name": "made", "default_budget": 3, **attributes})


def test_a_typo_in_a_declaration_is_refused_with_a_suggestion():
    with pytest.raises(TypeError, match="unknown attribute 'trial_agregation'.*did you mean 'trial_aggregation'"):
        make_benchmark(trial_agregation="max")
    with pytest.raises(TypeError, match="unknown attribute 'stateles'"):
        type("M", (Method,), {"name": "m", "stateles": True})


@pytest.mark.parametrize("attributes,message", [
    ({"trial_aggregation": "best"}, "trial_aggregation must be one of all, max, last, first"),
    ({"per_task_metric": "reward"}, "per_task_metric must be one of success, score"),
    ({"metrics": ("impossible_f1",)}, "metrics must be a tuple of lifebench.api.Metric"),
    ({"tables": ("not a function",)}, "tables must be a tuple of functions"),
    ({"budget_curves": "yes"}, "budget_curves must be bool"),
])
def test_declared_values_are_checked(attributes, message):
    with pytest.raises(TypeError, match=message):
        make_benchmark(**attributes)


def test_valid_declarations_and_a_plugins_own_names_pass():
    metric = Metric("x", "x", lambda records: 0.0)
    made = make_benchmark(metrics=(metric,), trial_aggregation="max", MY_CONSTANT=3,
                          helper=lambda self: None, _private=1)
    assert made.metrics == (metric,) and made.trial_aggregation == "max"


def test_the_registry_reports_a_broken_declaration_as_the_plugins_load_error(cli, tmp_path):
    package = tmp_path / "typo_plugin"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from lifebench.api import Method\n"
        "class Typo(Method):\n    name = 'typo'\n    stateles = True\n"
        "    def act(self, observation):\n        return 'look'\n")
    dist = tmp_path / "typo_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: typo-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[lifebench.methods]\ntypo = typo_plugin:Typo\n")
    result = cli("run", "--benchmark", "plancraft", "--method", "typo", "--out", str(tmp_path / "o"),
                 env={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 2
    assert "unknown attribute 'stateles'" in result.stderr and "did you mean 'stateless'" in result.stderr
