"""AutoContext's prompts, written for lifebench after the roles and sections of the paper's
Appendix D (objective, guidelines, background, forest, document, output format). Every
prompt opens with a title line no other prompt has, which is also how tests route scripted
replies to each role. Fields in braces are filled with str.format."""

FOREST_DEFINITION_ACTION = """The TODO forest records everything tried so far. Each tree starts at a named state (a
point of the instance the agent can be put back to) with a short summary. Under a state,
each node is an action played from there, followed by its key result (what the
environment answered, shortened); children are actions played after it. 'TODO' marks an
action planned but not run yet; 'action failed' marks an action the environment refused.
'[reach NAME]' marks a node that became the state NAME.
A path is written: state_name -> action -> action -> ... -> action"""

FOREST_DEFINITION_AGENT = """The TODO forest records everything tried so far. Each tree starts at a named state (a
point of the instance the agent can be put back to) with a short summary. Under a state,
each node is a sub-task, written agent("what to achieve"), handed to a sub-agent that
plays many actions for it, followed by a summary of what came of it; children are
sub-tasks done after it. 'TODO' marks a sub-task planned but not run yet. '[reach NAME]'
marks a node that became the state NAME.
A path is written: state_name -> agent("sub-task") -> agent("sub-task")"""

# What the Planner reads of the build so far (the TODO and loop-control prompts share it).
PLANNER_VIEW = """## Background
{background}
{trajectory}
## Definition of the TODO forest
{forest_definition}

## Current TODO forest
{forest}

## Format of the knowledge document
{knowledge_format}

## Knowledge document
{knowledge}
"""

PLAN_OBSERVATIONS = """# AutoContext planner: propose one TODO for the Observations
## Objective
An agent explores an interactive environment to write a knowledge document about it. Find
what the document's Observations section still lacks and propose one new TODO: a path of
actions that will let the agent observe it.

## Guidelines
- The path starts at any state of the TODO forest and may go through nodes already
  explored; it ends with actions not tried yet.
- Write every action exactly as the environment accepts it: no placeholders, nothing left
  to fill in.
- At most {max_length} new actions.
- The path must differ from what the forest already holds.
- If the Observations section has no Unknown entry and nothing is missing, answer None.

## Workflow
1. List the entries of the Observations section that are Unknown or missing.
2. Look in the forest for the shortest way to a place where one of them can be observed.

""" + PLANNER_VIEW + """
## Knowledge gaps (entries marked {unknown})
{gaps}

## Output format
Think step by step, then answer in exactly this format:
<thought>
your analysis
</thought>
<missing_observations>
the Unknown or missing entries you found
</missing_observations>
<todo>
state_name -> action -> ... -> action   (or None)
</todo>"""

PLAN_RULES = """# AutoContext planner: propose TODOs for the Action Rules
## Objective
An agent explores an interactive environment to learn how its actions work: their exact
wording, what they need first, and what they do. Propose new TODOs that try actions.

## Guidelines
- Aim at actions never tried in the forest, or tried only with 'action failed' results.
- When an action failed, think about why: try it after other actions that could satisfy
  what it needs, or with other wording or other object names.
- Write every action exactly as the environment accepts it: no placeholders.
- Each path has at most {max_length} new actions; propose at most {num_todo} paths.
- Each path starts at a state of the forest.

## Background
{background}
{trajectory}
## Definition of the TODO forest
{forest_definition}

## Current TODO forest
{forest}

## Output format
Think step by step, then give the new TODOs as a JSON list of paths, one string per TODO
(leave the key results out):
```json
["state -> action -> action", "state -> action"]
```
An empty list means nothing is worth trying."""

PROMOTE_STATE = """# AutoContext planner: promote a node to a new state
## Objective
Choose one explored node of the TODO forest from which further exploration would fill gaps
of the knowledge document, and make it a new state.

## Guidelines
- Prefer a node from which a few actions would resolve entries marked {unknown}.
- The node must not be an 'action failed' one.
- The new state must clearly differ from every existing state.
- The path must already be in the forest: from an existing state to the node, with no
  action added.

## Background
{background}

## Definition of the TODO forest
{forest_definition}

## Current TODO forest
{forest}

## Format of the knowledge document
{knowledge_format}

## Knowledge document
{knowledge}

## Output format
Think step by step, then answer with one JSON object:
```json
{{"target_missing_observation": "the gap this state helps with",
  "selected_path": "existing_state -> action -> ... -> action",
  "new_state_name": "short_descriptive_name",
  "state_summary": "a short factual description of the environment at that node"}}
```
Answer None instead of the JSON object if no node is worth promoting."""

LOOP_CONTROL = """# AutoContext planner: decide whether to keep exploring
## Objective
An iteration of exploration has ended. Judge from the TODO forest and the knowledge
document whether gaps remain that more exploration of this environment could fill.

## Guidelines
- Gaps are entries marked {unknown}, places or objects the forest shows but the document
  does not describe, and actions never tried or whose preconditions are still unclear.
- A gap that no path from a state of the forest could fill does not count.

""" + PLANNER_VIEW + """
## Output format
Name the most important remaining gap (or say there is none), then answer
<continue>yes</continue> to keep exploring or <continue>no</continue> to stop."""

SUBAGENT = """# AutoContext actor: carry out a sub-task
## Objective
You control an agent in an interactive environment. Each action you send returns a result
as text. Carry out the sub-task below.

## Guidelines
- Plan ahead, but change course when a result shows something new.
- Learn from the results of your last actions.

## Background
{background}

## Sub-task
{subtask}

## Output format
Send exactly one action per reply, in this format:
<thought>
your reasoning
</thought>
<action>
the action
</action>"""

SUMMARISE_SUBTASK = """# AutoContext actor: summarise a sub-task's outcome
A sub-agent was asked to: {subtask}
Here is what it did:
{trajectory}

Say in one or two factual sentences what came of it (what changed, what was found, what
failed), then whether the sub-task was achieved, in this format:
<key_result>
the summary
</key_result>
<achieved>
yes / no
</achieved>"""

EXTRACT_OBSERVATIONS = """# AutoContext extractor: propose edits to the Observations
## Objective
You analyse the trajectory of an agent in an interactive environment against a knowledge
document about that environment. Propose the changes the trajectory justifies to the
document's Observations section. If nothing needs to change, answer None.

## Background
{background}

## Guidelines
- Add every object, place and property the trajectory shows that the document lacks.
- Write only what the document format asks for.
- Each change is one of: add ..., update: from ... to ..., remove ...
- Correct errors with an update when the trajectory shows one.
- The document was written from earlier trajectories: add to it and correct it, but do not
  drop what it already holds.

## Trajectory
{trajectory}

## Definition of the Observations section
{knowledge_definition}

## Current Observations section
{knowledge}

## Output format
Think step by step, then answer in this format, one block per change:
<thought>
your analysis
</thought>
<modification1>
the first change / None
</modification1>
<modification2>
the second change
</modification2>"""

EXTRACT_RULES = """# AutoContext extractor: propose edits to the Action Rules
## Objective
You analyse the trajectory of an agent in an interactive environment against a knowledge
document about that environment. Propose the changes the trajectory justifies to the
document's Action Rules section. If nothing needs to change, answer
<modification1>None</modification1>.

## Background
{background}

## Definition of the Action Rules section
{knowledge_definition}

## Guidelines
- List the actions that succeeded in the trajectory; add those the document lacks.
- Compare the observations before and after each action to find what it requires and what
  it results in; make sure the requirements are enough for the result.
- Each change is one of: add ..., update: from ... to ..., remove ...
- Remove a rule only when the trajectory proves it wrong.
- Change only the Action Rules section.

## Trajectory (the latest actions; earlier ones are left out)
{trajectory}

## Current Action Rules section
{knowledge}

## Output format
Think step by step, then answer in this format, one block per change:
<thought>
your analysis
</thought>
<modification1>
Add:
- action: ...
  - requirements: ...
  - key_result: ...
  - note: ...
</modification1>"""

CHECK_EDIT = """# AutoContext extractor: check one proposed edit
## Objective
You are given a trajectory of an agent in an interactive environment, the current
knowledge about that environment, and one change someone wants to make to it. Decide
whether the trajectory supports the change.

## Background
{background}

## Definition of the knowledge
{knowledge_definition}

## Guidelines
- Accept a change that is consistent with the trajectory and reasonable; it need not be
  proven beyond doubt.
- Revise a change that has errors you can correct from the trajectory, and give the
  corrected change.
- Reject a change the trajectory contradicts or does not support and that cannot be
  corrected.
- Leave out statements that something cannot be used or interacted with: write "door",
  not "door (cannot be opened)"; drop "the door cannot be opened".

## Current knowledge
{knowledge}

## Trajectory
{trajectory}

## Proposed change
{modification}

## Output format
Think step by step, then answer in this format:
<thought>
your analysis
</thought>
<decision>
Accept / Revise / Reject
</decision>
<content>
the corrected change when you revise it; otherwise None
</content>"""

APPLY_EDITS = """# AutoContext extractor: apply accepted edits
## Objective
Apply the listed changes to the knowledge section below and write the whole section out
again, keeping every important detail and keeping it well organised.

## Definition of the knowledge
{knowledge_definition}

## Guidelines
- Merge entries that say the same thing.
- Follow the format of the definition exactly; drop anything that does not fit it.
- Plain text: no bold or other emphasis.

## Knowledge
{knowledge}

## Changes
{modifications}

## Output format
<thought>
your analysis
</thought>
<knowledge>
the whole updated section
</knowledge>"""

NAIVE_UPDATE = """# AutoContext naive update: rewrite the notes
An agent is exploring an interactive environment. Here are its notes about the environment
and what it just did. Rewrite the notes with whatever the trajectory teaches.

## Background
{background}

## Notes
{knowledge}

## Trajectory
{trajectory}

## Output format
<knowledge>
the updated notes
</knowledge>"""

RECENT_TRAJECTORY = """
## Recent trajectory
What the agent did last, for reference:
{trajectory}
"""

EMPTY_SECTION = "Nothing recorded yet."
