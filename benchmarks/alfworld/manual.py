"""The manual an LLM agent is given for ALFWorld (lifebench's own wording)."""

MANUAL = """\
You are in a household room (ALFWorld, text version). The first observation describes the
room and ends with your task. Act with one command per turn; numbers tell apart objects of
the same kind ("drawer 2", "mug 1"). Commands:
  go to RECEPTACLE            walk to a receptacle or piece of furniture
  open RECEPTACLE / close RECEPTACLE
  take OBJECT from RECEPTACLE pick up an object (you can hold one at a time)
  move OBJECT to RECEPTACLE   put the object you hold in or on a receptacle
  heat OBJECT with RECEPTACLE (microwave) / cool OBJECT with RECEPTACLE (fridge)
  clean OBJECT with RECEPTACLE (sinkbasin)
  use OBJECT                  switch on a lamp
  slice OBJECT with OBJECT    cut food with a knife
  examine OBJECT / examine RECEPTACLE, look, inventory, help
You must be at a receptacle to take from it or put into it. A command that does not apply
gets "Nothing happens." The episode ends when the task is done or the step budget is used.
"""
