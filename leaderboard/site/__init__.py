"""The results site (`lifebench view`): a static folder, `index.html` with its scripts and
styles, and the results as JavaScript data files, readable from `file://` with no server
and no network.

Every number the site shows is computed here by the leaderboard's own functions (the grid,
the comparisons, the further and the plugins' tables, the figures' series), so it is the
number `lifebench leaderboard` and `lifebench compare` print; the page's scripts
(`assets/js/`) only lay them out, sort, filter and draw. Episodes are an index of columns
(`data/episodes.js`) and one file per stream (`data/streams/N.js`: its records and
trajectories), which the page loads when an episode of the stream is opened.
"""

from lifebench.leaderboard.site.build import SiteSummary, build_site

__all__ = ["SiteSummary", "build_site"]
