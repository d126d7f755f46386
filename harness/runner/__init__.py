"""Running a config: streams, the plan that skips what is recorded, the episode loop, the
executors (local processes or Ray) and the one writer, the teacher service."""
