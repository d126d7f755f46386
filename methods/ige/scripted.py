"""IGE's replies under the scripted model (`lifebench.api.scripted`), in the formats
`replies.py` reads:

- `explore`: a sentence and `> ACTION`, the scripted player's action for the prompt's user
  message (the path from the start, whose last observation is the current state; the
  system message holds only the manual and the strategy);
- `select`: a sentence, `Choose > N` naming the archive state with the highest score
  (where states show one), then the most actions from the start, then the newest (the
  last listed): on the scripted player's walk, where it got furthest; then, as the scored
  prompt asks, the highest score; and `Remove > []` (every state is kept: the prompt's own
  way to remove none).
"""

from __future__ import annotations

import re
from typing import Optional

from lifebench.api import ScriptedReply, ScriptedRequest

from lifebench.methods.ige.prompts import EXPLORE_HEAD, SELECT_HEAD

# The method's two roles (the package's SELECT and EXPLORE; named here, as the package
# imports this module).
SELECT, EXPLORE = "select", "explore"

# An archive state's first line (prompts.entry_block): its number, path length and score.
_STATE = re.compile(r"^State (\d+): (\d+) actions from the start"
                    r"(?:, score (-?\d+(?:\.\d+)?(?:e[+-]?\d+)?))?", re.M)


def scripted_reply(request: ScriptedRequest) -> Optional[ScriptedReply]:
    user = request.last
    if request.role == SELECT or user.startswith(SELECT_HEAD):
        return select_reply(user)
    if request.role == EXPLORE or user.startswith(EXPLORE_HEAD):
        return f"Continuing from the current state towards the goal.\n> {request.act(user)}"
    return None


def select_reply(prompt: str) -> str:
    found = _STATE.findall(prompt)
    if not found:
        return "Only the start is known.\nChoose > 0\nRemove > []"
    score, length, number = max((float(score or 0), int(length), int(number))
                                for number, length, score in found)
    lines = [f"State {number} made the most progress ({length} actions from the start); "
             f"exploring on from it.", f"Choose > {number}"]
    if any(score_text for _, _, score_text in found):
        lines.append(f"The highest score in the archive is {score:g}.")
    lines.append("Remove > []")
    return "\n".join(lines)
