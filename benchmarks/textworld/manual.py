"""The manual an LLM agent is given for TextWorld cooking games (lifebench's own wording)."""

MANUAL = """\
You are in a house (a TextWorld cooking game). Find the cookbook, read its recipe, gather
the ingredients, prepare them as the recipe says, then prepare the meal and eat it. Act
with one command per turn, in plain words:
  go north|south|east|west     open / close a door or container ("open fridge")
  examine THING, look, inventory
  take THING, take THING from CONTAINER, drop THING, put THING on SUPPORTER,
  insert THING into CONTAINER
  slice / dice / chop INGREDIENT with knife (hold the knife)
  cook INGREDIENT with stove (fried), with oven (roasted) or with BBQ (grilled)
  prepare meal (in the kitchen, holding every ingredient), eat meal
Cooking or cutting an ingredient in a way the recipe does not ask for can ruin the game.
Points are given for each useful step; the game is won when you eat the meal.
"""

# The command forms alone (AutoContext's Table 5: "only the action list"): no goal, no tips.
MINIMAL_MANUAL = """\
Each turn, write one command:
  go DIRECTION, open THING, close THING, examine THING, look, inventory, take THING,
  take THING from THING, drop THING, put THING on THING, insert THING into THING,
  slice THING with THING, dice THING with THING, chop THING with THING,
  cook THING with THING, prepare meal, eat THING
"""
