"""Crafter as text: the observation an LLM agent reads, and the actions it may write.

The observation is built from the game's state (the semantic map), never from pixels:
- the local view, 9 columns by 7 rows as Crafter's image shows it (north up, the player
  in the centre); cells beyond the world's edge read `edge`,
- the player's position [x, y] on the 64x64 map (x grows eastward, y southward, [0, 0] the
  north-west corner) and the span of coordinates the view covers,
- the nearest thing of each kind in that view, with its exact offset ("tree: 2 north,
  1 west"), nearest first,
- the cell the player faces, the vitals, the inventory, the time of day, whether the
  player sleeps, and the achievements unlocked so far.
After an action that names none of the game's actions (played as noop), a first line says so.
"""

from __future__ import annotations

import re
from typing import Any, Optional

# Crafter's action names (its index order) with the names and meanings agents are given.
ACTIONS: tuple[tuple[str, str, str], ...] = (
    ("noop", "noop", "do nothing"),
    ("move_left", "move west", "step one cell west (or turn to face it if blocked)"),
    ("move_right", "move east", "step one cell east"),
    ("move_up", "move north", "step one cell north"),
    ("move_down", "move south", "step one cell south"),
    ("do", "do", "act on the faced cell: collect material, drink water, hit or eat a creature"),
    ("sleep", "sleep", "sleep until rested (energy comes back; you wake up when hurt)"),
    ("place_stone", "place stone", "put a stone on the faced cell (needs 1 stone)"),
    ("place_table", "place table", "build a table on the faced cell (needs wood)"),
    ("place_furnace", "place furnace", "build a furnace on the faced cell (needs stone, near a table)"),
    ("place_plant", "place plant", "plant a sapling on the faced grass (needs a sapling)"),
    ("make_wood_pickaxe", "make wood pickaxe", "craft it (needs wood, near a table)"),
    ("make_stone_pickaxe", "make stone pickaxe", "craft it (needs wood and stone, near a table)"),
    ("make_iron_pickaxe", "make iron pickaxe", "craft it (needs wood, coal, iron, near a table and a furnace)"),
    ("make_wood_sword", "make wood sword", "craft it (needs wood, near a table)"),
    ("make_stone_sword", "make stone sword", "craft it (needs wood and stone, near a table)"),
    ("make_iron_sword", "make iron sword", "craft it (needs wood, coal, iron, near a table and a furnace)"),
)
ACTION_NAMES = tuple(readable for _, readable, _ in ACTIONS)
NOOP = 0
_ALIASES = {"move left": "move west", "move right": "move east", "move up": "move north",
            "move down": "move south", "west": "move west", "east": "move east",
            "north": "move north", "south": "move south", "no op": "noop"}
_INDEX = {readable: i for i, readable in enumerate(ACTION_NAMES)}
_INDEX.update({crafter_name.replace("_", " "): i for i, (crafter_name, _, _) in enumerate(ACTIONS)})
_INDEX.update({alias: _INDEX[target] for alias, target in _ALIASES.items()})

VIEW_COLUMNS, VIEW_ROWS = 9, 7  # Crafter's local view (its 9x9 image less 2 item rows)
VITALS = ("health", "food", "drink", "energy")
CELL_WIDTH = 9
_DIRECTIONS = {(0, -1): "north", (0, 1): "south", (-1, 0): "west", (1, 0): "east"}


_MOVE_TO = re.compile(r"move\s*to\s*\[?\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\]?")
# the macro as agents are given it (AutoContext's `Move To [x, y]`, Appendix B.2)
MOVE_TO = ("move to [x, y]", "walk toward position [x, y], each move a step; stops where "
           "the way is blocked")


def parse_move_to(text: str) -> Optional[tuple[int, int]]:
    """The target of a `move to [x, y]` action, or None when the text is not one."""
    found = _MOVE_TO.fullmatch(re.sub(r"[\s_\-]+", " ", text.strip().lower()).strip(" .!\"'`"))
    return (int(found.group(1)), int(found.group(2))) if found else None


def parse_action(text: str) -> Optional[int]:
    """Crafter's action index for a readable or Crafter name (any case, spaces, `_` or
    `-`), or None when the text names no action."""
    words = re.sub(r"[\s_\-]+", " ", text.strip().lower()).strip(" .!\"'`")
    return _INDEX.get(words)


INVALID_ACTION_NOTE = "Your action {action} names no action of the game; it was played as noop."
# What `ContextSchema.failure_patterns` looks for (the only failure Crafter's text states: a
# valid action that changes nothing, e.g. crafting without the materials, is silent).
INVALID_ACTION_PATTERN = r"names no action of the game; it was played as noop\."


def invalid_action_note(action: str) -> str:
    """The line that opens the observation after `action` named no action."""
    words = " ".join(action.split())
    shown = words if len(words) <= 60 else words[:57] + "..."
    return INVALID_ACTION_NOTE.format(action=f'"{shown}"')


def position_line(px: int, py: int) -> str:
    half_x, half_y = VIEW_COLUMNS // 2, VIEW_ROWS // 2
    return (f"Position: [{px}, {py}] (x grows east, y grows south; the view spans "
            f"x {px - half_x}..{px + half_x}, y {py - half_y}..{py + half_y}).")


def _offset_words(dx: int, dy: int) -> str:
    parts = []
    if dy:
        parts.append(f"{abs(dy)} {'north' if dy < 0 else 'south'}")
    if dx:
        parts.append(f"{abs(dx)} {'west' if dx < 0 else 'east'}")
    return ", ".join(parts) or "here"


def object_name(obj: Any, player: Any) -> str:
    if obj is player:
        return "you"
    name = type(obj).__name__.lower()
    if name == "plant":
        return "ripe plant" if obj.ripe else "sapling"
    return name


def _things(world: Any, player: Any, x0: int, y0: int, width: int, height: int) -> list[list[str]]:
    """What occupies each cell of a window of the world, by rows (y) of columns (x):
    the object there, else the material; `edge` beyond the world."""
    area_x, area_y = world.area
    lx, ly = max(0, x0), max(0, y0)
    hx, hy = min(area_x, x0 + width), min(area_y, y0 + height)
    inside = lx < hx and ly < hy
    # by rows of columns, as the view is read (transposed from the world's x-major maps)
    materials = world._mat_map[lx:hx, ly:hy].T.tolist() if inside else []
    objects = world._obj_map[lx:hx, ly:hy].T.tolist() if inside else []
    names, objs = world._mat_names, world._objects
    left, right = ["edge"] * (lx - x0), ["edge"] * (x0 + width - hx)
    rows = [["edge"] * width for _ in range(ly - y0)]
    for material_row, object_row in zip(materials, objects):
        rows.append(left + [object_name(objs[index], player) if index else
                            names[material] or "unknown"
                            for material, index in zip(material_row, object_row)] + right)
    rows += [["edge"] * width for _ in range(y0 + height - hy)]
    return rows


# Each cell of the view by rows: its offset from the centre and its distance (Manhattan)
_VIEW_CELLS = tuple(tuple((col - VIEW_COLUMNS // 2, row - VIEW_ROWS // 2,
                           abs(col - VIEW_COLUMNS // 2) + abs(row - VIEW_ROWS // 2))
                          for col in range(VIEW_COLUMNS)) for row in range(VIEW_ROWS))


def observe(world: Any, player: Any, achievements: dict[str, int]) -> str:
    px, py = int(player.pos[0]), int(player.pos[1])
    half_x, half_y = VIEW_COLUMNS // 2, VIEW_ROWS // 2
    grid = _things(world, player, px - half_x, py - half_y, VIEW_COLUMNS, VIEW_ROWS)
    rows, nearest = [], {}
    for row, cells in zip(grid, _VIEW_CELLS):
        for thing, (dx, dy, distance) in zip(row, cells):
            if thing != "you" and thing != "edge":
                known = nearest.get(thing)
                if known is None or distance < known[0]:
                    nearest[thing] = (distance, dx, dy)
        rows.append(" ".join([cell.ljust(CELL_WIDTH) for cell in row]).rstrip())
    fx, fy = int(player.facing[0]), int(player.facing[1])
    facing = grid[half_y + fy][half_x + fx]
    vitals = ", ".join(f"{v} {player.inventory[v]}/9" for v in VITALS)
    items = [f"{k.replace('_', ' ')} {n}" for k, n in player.inventory.items()
             if k not in VITALS and n > 0]
    daylight = float(world.daylight)
    unlocked = sorted(name for name, count in achievements.items() if count > 0)
    lines = ["Your view (9 columns x 7 rows, north up; you are in the centre):", *rows,
             position_line(px, py),
             "Nearest of each kind: " + ("; ".join(
                 f"{k}: {_offset_words(dx, dy)}"
                 for k, (_, dx, dy) in sorted(nearest.items(), key=lambda kv: (kv[1][0], kv[0])))
                 or "nothing"),
             f"You face {_DIRECTIONS[(fx, fy)]}: {facing}.",
             f"Vitals: {vitals}.",
             f"Inventory: {', '.join(items) if items else 'nothing'}.",
             f"Time: {'day' if daylight >= 0.5 else 'night'} (daylight {daylight:.2f}). "
             f"You are {'asleep' if player.sleeping else 'awake'}.",
             f"Achievements so far: {', '.join(unlocked) if unlocked else 'none'}."]
    return "\n".join(lines)


def minimal_manual() -> str:
    """The action list alone: no rules of the game, no hint of what an action needs."""
    return "Each turn, write one of these actions:\n" + "\n".join(
        f"  {readable}" for readable in (*ACTION_NAMES, MOVE_TO[0])) + "\n"


def manual(length: int) -> str:
    actions = "\n".join(f"  {readable:19s} {meaning}"
                        for _, readable, meaning in (*ACTIONS, ("", *MOVE_TO)))
    return f"""\
You play Crafter, a 2D survival game on a 64x64 grid seen from above. Each position is
[x, y]: x grows eastward, y southward ([0, 0] is the north-west corner); distances are
Manhattan distances (x distance plus y distance). Keep your health up:
eat (cows, ripe plants), drink (water), sleep when your energy is low, and avoid or fight
zombies (on grass, more at night), skeletons (in caves, they shoot arrows) and lava.
Collect materials and craft tools to unlock achievements: collect wood, place a table,
make a wood pickaxe, collect stone and coal, place a furnace, make stone and iron tools,
collect iron and diamonds, and more (22 in all). Each turn, write one action:
{actions}
Anything else counts as noop. The episode ends when you die or after {length} steps.
"""
