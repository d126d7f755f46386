"""`oracle`: the benchmark's own solver (Plancraft: the package's planner), as an upper
bound and as a check that the adapter's success semantics are right."""

from __future__ import annotations

from lifebench.api import EpisodeTools, Method, MethodNeeds, Observation, TaskInfo


class OracleMethod(Method):
    name = "oracle"
    version = "1"  # bump when a change alters what it does (lifebench.api.Method.version)
    needs = MethodNeeds(oracle=True)
    stateless = True

    def begin_episode(self, task: TaskInfo, tools: EpisodeTools) -> None:
        assert tools.oracle is not None, "the harness gives an oracle to needs.oracle methods"
        self.policy = tools.oracle

    def act(self, observation: Observation) -> str:
        return self.policy.next_action(observation)
