"""The manual an LLM agent is given for ScienceWorld (lifebench's own wording)."""

MANUAL = """You act in ScienceWorld, a text simulation of a house with rooms such as a \
kitchen, a workshop, a greenhouse and an outside area. Each turn you send one command; \
the world answers in text. The task is stated at the start of the episode.

Commands (OBJ is an object or a room, named as the observations name it):
- look around: describe the current room; look at OBJ / look in OBJ: inspect one thing
- inventory: list what you carry; task: repeat the task description
- go to OBJ: walk to an adjacent room (through an open door); teleport to OBJ: move to any room when that is available
- open OBJ / close OBJ: doors and containers; activate OBJ / deactivate OBJ: devices such as a stove or a sink
- pick up OBJ / put down OBJ / move OBJ to OBJ: carry and place objects
- pour OBJ in OBJ, dunk OBJ in OBJ, mix OBJ: combine substances (mix acts on a container)
- use OBJ on OBJ: apply a tool, e.g. a thermometer on a substance
- read OBJ, eat OBJ, flush OBJ, connect OBJ to OBJ / disconnect OBJ (electrical tasks)
- wait: let 10 time steps pass; wait1: let one pass (plants grow and substances heat over time)
- focus on OBJ: declare the object the task is about. Do this only for the object the task \
names, and only when the task tells you to: focusing on a wrong object fails the task at once.

When several objects share a name, the simulator asks which one you mean; answer with the \
number of your choice. Scores run from 0 to 100 and rise as the task's steps are achieved."""
