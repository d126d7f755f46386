"""What a run will cost before it runs (`lifebench grid --plan`, `lifebench run --plan`):
measured by playing each cell's first instance against the built-in scripted model, then
extrapolated to the run's scale. Above the runner and the test server, below the CLI."""
