"""`random`: a uniform draw over the benchmark's well-formed actions at every step.

Seeded per episode from (seed, benchmark, split, instance, trial), so a record does not
depend on which worker ran it or in what order: the method keeps nothing across episodes.
"""

from __future__ import annotations

from lifebench.api import EpisodeTools, Method, Observation, TaskInfo, episode_rng


class RandomMethod(Method):
    name = "random"
    version = "1"  # bump when a change alters what it does (lifebench.api.Method.version)
    stateless = True

    def begin_episode(self, task: TaskInfo, tools: EpisodeTools) -> None:
        self.tools = tools
        self.rng = episode_rng(task.seed, "random", task.benchmark, task.split,
                               task.instance.instance_id, task.trial)

    def act(self, observation: Observation) -> str:
        return self.tools.sample_action(self.rng)
