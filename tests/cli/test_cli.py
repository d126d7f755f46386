"""The CLI: listing, plugins from a separate package, spec files, and bad input."""

from __future__ import annotations


import pytest

from conftest import ROOT, key_of, one_line_error, read_records, without_timings

RUN = ["run", "--no-progress"]


def test_list(cli):
    assert cli("list", "benchmarks").stdout.split() == ["alfworld", "crafter", "plancraft",
                                                        "scienceworld", "textworld"]
    methods = cli("list", "methods").stdout
    for name in ("random", "oracle", "counter", "faulty"):
        assert name in methods
    splits = cli("list", "splits").stdout.splitlines()
    assert "plancraft:val (default)" in splits and "plancraft:val.repeated (default)" in splits
    assert "plancraft:test" in splits and "plancraft:val.small" in splits


def test_plugin_method_from_separate_package_runs(cli, tmp_path):
    out = tmp_path / "out"
    result = cli(*RUN, "--benchmark", "plancraft", "--split", "val.small", "--method", "counter",
                 "--limit", "4", "--method-arg", "patience=5", "--out", str(out))
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert [r["method"] for r in records] == ["counter"] * 4
    assert [r["extra"]["memory_size"] for r in records] == [1, 2, 3, 4]
    assert [r["extra"]["impossible_predicted"] for r in records] == [False, False, False, True]


def test_broken_plugin_is_reported_without_hiding_others(cli, tmp_path):
    assert "oracle" in cli("list", "methods").stdout  # listing does not import plugins
    result = cli(*RUN, "--benchmark", "plancraft", "--method", "broken", "--out", str(tmp_path))
    one_line_error(result, "plugin 'broken'", "lifebench-testplugin", "failed to import")


def test_toml_spec_equals_flags(cli, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text('benchmarks = ["plancraft"]\nsplits = ["val.small"]\n'
                    'methods = ["random", "counter"]\nseeds = [0, 1]\nlimit = 3\nmax_steps = [5, 10]\n'
                    '[method_args.counter]\npatience = 4\n')
    a, b = tmp_path / "a", tmp_path / "b"
    assert cli(*RUN, str(spec), "--out", str(a)).returncode == 0
    flags = cli(*RUN, "--benchmark", "plancraft", "--split", "val.small", "--method", "random",
                "--method", "counter", "--seeds", "0,1", "--limit", "3", "--max-steps", "5,10",
                "--method-arg", "counter.patience=4", "--out", str(b))
    assert flags.returncode == 0, flags.stderr
    ra, rb = read_records(a), read_records(b)
    assert len(ra) == 2 * 2 * 2 * 3  # methods x seeds x budgets x instances
    assert {key_of(r): without_timings(r) for r in ra} == {key_of(r): without_timings(r) for r in rb}
    assert {r["budget_steps"] for r in ra} == {5, 10}


def test_a_spec_of_parts_runs_each_part_into_one_directory(cli, tmp_path):
    spec = tmp_path / "parts.toml"
    spec.write_text('benchmarks = ["plancraft"]\nsplits = ["val.small"]\nmethods = ["counter"]\n'
                    'seeds = [0]\nlimit = 2\n[method_args.counter]\npatience = 4\n'
                    '[[part]]\nname = "short"\nmax_steps = [5]\n'
                    '[[part]]\nname = "long"\nmax_steps = [10]\nseeds = [1]\n'
                    '[part.method_args.counter]\nlimit_note = "x"\n')
    bad = cli(*RUN, str(spec), "--out", str(tmp_path / "bad"))  # every part checked first
    one_line_error(bad, "counter")
    assert not (tmp_path / "bad" / "episodes.jsonl").exists()
    spec.write_text(spec.read_text().replace('limit_note = "x"', 'patience = 6'))
    out = tmp_path / "out"
    result = cli(*RUN, str(spec), "--out", str(out), "--limit", "1")  # flags reach every part
    assert result.returncode == 0, result.stderr
    assert "part short" in result.stderr and "part long" in result.stderr
    records = read_records(out)
    assert sorted((r["budget_steps"], r["seed"]) for r in records) == [(5, 0), (10, 1)]
    assert len({r["method_config_hash"] for r in records}) == 2  # patience 4, then 6
    only = cli(*RUN, str(spec), "--out", str(tmp_path / "only"), "--part", "long")
    assert only.returncode == 0 and {r["budget_steps"] for r in read_records(tmp_path / "only")} == {10}
    one_line_error(cli(*RUN, str(spec), "--part", "medium"), "the spec's parts are short, long")
    # `lifebench grid` runs parts too, each a grid (cells that cannot run refused, not errors)
    grid = cli("grid", str(spec), "--out", str(tmp_path / "grid"), "--limit", "1", "--no-progress")
    assert grid.returncode == 0 and "part short" in grid.stderr and "part long" in grid.stderr
    assert sorted(r["budget_steps"] for r in read_records(tmp_path / "grid")) == [5, 10]


def test_default_out_is_results_run_id(cli, tmp_path):
    result = cli(*RUN, "--benchmark", "plancraft", "--split", "val.small", "--method", "oracle",
                 "--limit", "1", "--run-id", "pytest-default-out")
    out = ROOT / "results" / "pytest-default-out"
    try:
        assert result.returncode == 0, result.stderr
        assert read_records(out)[0]["run_id"] == "pytest-default-out"
    finally:
        import shutil

        shutil.rmtree(out, ignore_errors=True)


@pytest.mark.parametrize("args,fragments", [
    (["--benchmark", "plancraf", "--method", "oracle"], ["unknown benchmark 'plancraf'", "did you mean 'plancraft'"]),
    (["--benchmark", "plancraft", "--method", "orcle"], ["unknown method 'orcle'", "did you mean 'oracle'"]),
    (["--benchmark", "plancraft", "--split", "vall", "--method", "oracle"], ["unknown split 'vall'", "val.repeated"]),
    (["--benchmark", "plancraft", "--method", "oracle", "--seeds", "0,x"], ["--seeds", "'x' is not an integer"]),
    (["--benchmark", "plancraft", "--method", "oracle", "--max-steps", "0"], ["--max-steps", "at least 1"]),
    (["--benchmark", "plancraft", "--method", "oracle", "--trials", "0"], ["--trials", "at least 1"]),
    (["--benchmark", "plancraft", "--method", "oracle", "--timeout", "soon"], ["--timeout"]),
    (["--benchmark", "plancraft", "--method", "oracle", "--workers", "-1"], ["--workers"]),
    (["--benchmark", "plancraft", "--method", "oracle", "--executor", "slurm"], ["--executor", "'slurm' is not one of local, ray"]),
    (["--benchmark", "plancraft", "--method", "counter", "--method-arg", "patiense=3"], ["no requested method", "patiense"]),
    (["--benchmark", "plancraft", "--method", "counter", "--method-arg", "counter.patiense=3"], ["has no argument 'patiense'", "patience"]),
    (["--benchmark", "plancraft", "--method", "counter", "--method-arg", "patience=lots"], ["patience", "expected an integer"]),
    (["--benchmark", "plancraft", "--method", "counter", "--method-arg", "oops"], ["KEY=VALUE"]),
    (["--benchmark", "plancraft", "--split", "val", "--method", "oracle", "--instances", "VAL0001,NOPE"], ["unknown instance", "'NOPE'"]),
    (["--benchmark", "plancraft", "--method", "oracle", "--benchmark-arg", "depth=3"], ["--benchmark-arg 'depth'", "no requested benchmark"]),
    (["--benchmark", "plancraft", "--method", "oracle", "--benchmark-arg", "plancraft.depth=3"], ["benchmark 'plancraft' has no argument 'depth'"]),
    (["--benchmark", "scienceworld", "--method", "oracle", "--benchmark-arg", "simplification=hard"], ["unknown simplification 'hard'", "openDoors"]),
    ([], ["no benchmark given"]),
    (["--benchmark", "plancraft"], ["no method given"]),
])
def test_bad_input_is_one_line_exit_2(cli, tmp_path, args, fragments):
    result = cli(*RUN, *args, "--out", str(tmp_path / "out"))
    one_line_error(result, *fragments)
    assert not (tmp_path / "out" / "episodes.jsonl").exists()


def test_bad_spec_files(cli, tmp_path):
    one_line_error(cli(*RUN, str(tmp_path / "missing.toml")), "not found")
    bad = tmp_path / "bad.toml"
    bad.write_text("benchmarks = [plancraft\n")
    one_line_error(cli(*RUN, str(bad)), "not valid TOML")
    typo = tmp_path / "typo.toml"
    typo.write_text('benchmarks = ["plancraft"]\nmethod = ["oracle"]\n')
    one_line_error(cli(*RUN, str(typo)), "unknown key in typo.toml 'method'", "did you mean 'methods'")


def test_argparse_errors_are_one_line(cli):
    one_line_error(cli("list", "everything"), "invalid choice")
    one_line_error(cli("leaderboard", "x", "--format", "pdf"), "invalid choice")


def test_leaderboard_errors(cli, tmp_path):
    one_line_error(cli("leaderboard", str(tmp_path / "nowhere")), "no results at")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "episodes.jsonl").write_text("")
    one_line_error(cli("leaderboard", str(tmp_path / "empty")), "no episode records")


def test_leaderboard_formats(cli, tmp_path):
    out = tmp_path / "out"
    assert cli(*RUN, "--benchmark", "plancraft", "--split", "val.small", "--method", "oracle,random",
               "--limit", "20", "--out", str(out)).returncode == 0
    md = cli("leaderboard", str(out)).stdout
    assert md.startswith("The grid: methods × benchmarks\n\n| method ")
    assert "\n\nplancraft\n\n| split " in md and "| val.small | oracle   |" in md
    assert "impossible F1" in md
    csv_text = cli("leaderboard", str(out), "--format", "csv").stdout.splitlines()
    assert csv_text[0].startswith("benchmark,split,method,model,budget,trials,n,success")
    header = csv_text[0].split(",")
    oracle_row = dict(zip(header, next(line for line in csv_text if ",oracle," in line).split(",")))
    assert (oracle_row["n"], oracle_row["success"], oracle_row["budget"]) == ("20", "1.000", "30")
    assert oracle_row["trials"] == "all"
    assert "\\toprule" in cli("leaderboard", str(out), "--format", "latex").stdout
    assert "<table>" in cli("leaderboard", str(out), "--format", "html").stdout


def test_list_available_benchmarks_names_what_is_missing(cli, tmp_path):
    """`make bench` runs what can run here; the rest is named with how to get its data."""
    result = cli("list", "benchmarks", "--available",
                 env={"LIFEBENCH_DATA": str(tmp_path), "ALFWORLD_DATA": str(tmp_path / "none"),
                      "LIFEBENCH_IGE_COOKING": "", "HOME": str(tmp_path)})
    assert result.returncode == 0
    assert result.stdout.split() == ["crafter", "plancraft", "scienceworld"]
    skipped = result.stderr.strip().splitlines()
    assert len(skipped) == 2
    assert skipped[0].startswith("lifebench: skipping alfworld:") and "alfworld-download" in skipped[0]
    assert skipped[1].startswith("lifebench: skipping textworld:") and "LIFEBENCH_IGE_COOKING" in skipped[1]
