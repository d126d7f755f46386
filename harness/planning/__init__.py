"""What a run will cost before it runs (`lifebench grid --plan`, `lifebench run --plan`):
measured by a pilot on the endpoint (`--pilot N`: the first N instances of every cell, kept
as the run's results) or, sending nothing, by playing each cell's first instance against
the built-in scripted model; then extrapolated to what the run still has to play. Above the
runner and the test server, below the CLI.

- `plan.py`: the plan of a config, on either basis (the scripted estimate lives here);
- `pilot.py`: playing the pilot; `pilot_cells.py`: the plan from its records;
- `bootstrap.py`: the seeded bootstrap behind a pilot's central estimate and 90% interval;
- `preparation.py`: a method's preparation carried to the run's scale;
- `recorded.py`: what the results directory already holds (left out, shown apart);
- `cells.py`: the plan's records (`plan.json`, version 2) and shared arithmetic;
- `report.py`: the plan as text."""
