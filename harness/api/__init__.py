"""The public surface for plugins: contracts, records, errors, reporting declarations.

A benchmark or method plugin imports from here and nothing else of lifebench's:

    from lifebench.api import Benchmark, Method, MethodNeeds, Observation, Step

`lifebench.api.stats` holds the intervals and tests that the leaderboard uses, for
plugins' own tables, and `lifebench.api.comparison` the rule every comparison follows (the
instance is the unit). This package imports nothing of lifebench above it.
"""

from lifebench.api.budget import DEFAULT_BUDGET, Budget
from lifebench.api.context import (ACTION_RULES_SCHEMA, ContextProvider, ContextSchema,
                                   ContextTools, ExplorationBudgetExhausted, ExplorationEnv,
                                   InstanceContext, InstanceFacts, coverage, normalise_name)
from lifebench.api.errors import (ContextOverflow, EndEpisode, EndpointUnusable, EnvError,
                                  LLMError, UserError, unknown_name)
from lifebench.api.evaluation import EvaluationProtocol
from lifebench.api.jobs import JobFunction, JobLost, Jobs, StartedJobs, run_jobs, start_jobs
from lifebench.api.llm import ChatModel, LLMReply, RoleParams, ToolCall, tag_calls
from lifebench.api.prompt import (Prompt, PromptPart, filled, fixed, history, mark_groups,
                                  split_history,
                                  mark_history)
from lifebench.api.protocols import (CURRICULUM_SUFFIX, FEW_SHOT_QUERY_SUFFIX,
                                     FEW_SHOT_SUPPORT_SUFFIX, Benchmark, Env, EpisodeTools,
                                     Method, MethodNeeds, NoConfig, OraclePolicy, StreamContext,
                                     base_split, curriculum_split, episode_rng, few_shot_base,
                                     few_shot_splits, is_curriculum_split, partition_few_shot)
from lifebench.api.records import (SCHEMA_VERSION, CallTokens, EpisodeOutcome, EpisodeRecord,
                                   EpisodeTrajectory, Instance, Observation, RecordKey,
                                   RoleUsage, RunManifest, Status, Step, TaskInfo,
                                   TrajectoryStep)
from lifebench.api.scripted import ScriptedReply, ScriptedRequest, generic_reply
from lifebench.api.reporting import (PER_TASK_METRICS, TRIAL_AGGREGATIONS, Metric, Table,
                                     TableMaker, aggregate_trials, config_setting)
from lifebench.api.teaching import (ANSWER_KINDS, PLAN_ABOUT, TEACHER_STYLES, PlanStep, Teacher, TeacherPlan,
                                    remaining_sequence)
from lifebench.api.training import TRAINING_CURVES, TrainingCurves

__all__ = [
    # contracts
    "Benchmark", "Env", "EpisodeTools", "Method", "MethodNeeds", "NoConfig", "OraclePolicy",
    "StreamContext", "episode_rng", "EvaluationProtocol",
    # a preparation's independent jobs, on the run's workers
    "JobFunction", "JobLost", "Jobs", "StartedJobs", "run_jobs", "start_jobs",
    # splits
    "CURRICULUM_SUFFIX", "base_split", "curriculum_split", "is_curriculum_split",
    "FEW_SHOT_QUERY_SUFFIX", "FEW_SHOT_SUPPORT_SUFFIX", "few_shot_base", "few_shot_splits",
    "partition_few_shot",
    # records
    "SCHEMA_VERSION", "CallTokens", "EpisodeOutcome", "EpisodeRecord", "EpisodeTrajectory",
    "Instance", "Observation", "RecordKey", "RoleUsage", "RunManifest", "Status", "Step",
    "TaskInfo", "TrajectoryStep",
    # budgets
    "Budget", "DEFAULT_BUDGET",
    # errors
    "ContextOverflow", "EndEpisode", "EndpointUnusable", "EnvError", "LLMError", "UserError",
    "unknown_name",
    # the LLM, as methods see it; their prompts' history, for the context window
    "ChatModel", "LLMReply", "RoleParams", "ToolCall", "tag_calls",
    "Prompt", "PromptPart", "filled", "fixed", "history", "mark_groups", "mark_history",
    "split_history",
    # instance contexts
    "ACTION_RULES_SCHEMA", "ContextProvider", "ContextSchema", "ContextTools",
    "ExplorationBudgetExhausted", "ExplorationEnv", "InstanceContext", "InstanceFacts",
    "coverage", "normalise_name",
    # the teacher
    "ANSWER_KINDS", "PLAN_ABOUT", "TEACHER_STYLES", "PlanStep", "Teacher", "TeacherPlan", "remaining_sequence",
    # the scripted model
    "ScriptedReply", "ScriptedRequest", "generic_reply",
    # reporting
    "PER_TASK_METRICS", "TRIAL_AGGREGATIONS", "Metric", "Table", "TableMaker",
    "aggregate_trials", "config_setting", "TRAINING_CURVES", "TrainingCurves",
]
