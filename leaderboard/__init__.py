"""The leaderboard: records of one or more results directories aggregated into tables,
statistics, figures and the regression check. What is a benchmark's or a method's own
(metrics, tables, how trials count) is asked of the plugin (`plugins`), never named here."""
