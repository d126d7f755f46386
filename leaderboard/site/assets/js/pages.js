/* The summary pages: the leaderboard grid (with each row's provenance and a link to its
   episodes), the paired comparisons, the further tables and the plots. */
"use strict";
LB.pages = LB.pages || {};

/* A results directory's replay mark ("replayed exactly (N/N)", "replayed, M differences",
   "not replayable", "not verified"), its report one click away where there is one. */
LB.replayMark = function (index) {
  var v = (LB.data.verifications || [])[index];
  if (!v) return null;
  var mark = LB.el("span.mark.mark-" + v.verdict.replace(/_/g, "-"), {text: v.mark, title: v.report ? v.report.summary : ""});
  return v.report ? LB.el("a.mark-link", {href: LB.href("verification", [String(index)])}, mark) : mark;
};

LB.runLine = function (run, index) {
  var spec = run.spec_file ? "spec " + run.spec_file : "command line (no spec file)";
  return LB.el("li", {},
    run.verification === undefined ? null : LB.el("div.small", {}, "replay from its answers: ", LB.replayMark(run.verification)),
    LB.el("a", {href: LB.href("runs", [String(index)]), text: "run " + (run.run_id || "?")}),
    " · " + (run.started_utc || "?") + " · " + spec,
    LB.el("div.small", {}, LB.el("code", {text: run.command || ""})),
    LB.el("div.small", {text: [
      "model: " + (run.model || "—"), "endpoint: " + (run.endpoint || "—"),
      "lifebench " + (run.lifebench || "?"),
      "git " + (run.git_revision ? run.git_revision.slice(0, 10) + (run.git_dirty ? " (uncommitted changes)" : "") : "—")
    ].join(" · ")}),
    LB.el("div.small", {text: "versions: " + Object.keys(run.packages || {}).filter(function (k) {
      return k !== "lifebench";
    }).map(function (k) { return k + " " + (run.packages[k] || "?"); }).join(", ")}));
};

LB.provenance = function (cell, panel, title) {
  LB.clear(panel);
  panel.hidden = false;
  var runs = LB.data.manifests;
  panel.appendChild(LB.el("h4", {text: "Where this row comes from: " + title}));
  panel.appendChild(LB.el("p.small", {text: [
    "method config " + (cell.method_config_hash || "—"),
    cell.context_config_hash ? "context config " + cell.context_config_hash : null,
    "benchmark config " + (cell.benchmark_config_hash || "default"),
    "records written by lifebench " + (cell.harness_versions.join(", ") || "?"),
    "run ids: " + cell.run_ids.join(", ")].filter(Boolean).join(" · ")}));
  if (!cell.runs.length) panel.appendChild(LB.note("No manifest.json entry for these runs."));
  panel.appendChild(LB.el("ul.runs", {}, cell.runs.map(function (i) { return LB.runLine(runs[i], i); })));
  panel.appendChild(LB.el("a", {href: LB.href("episodes", [], cell.filter), text: "its " + LB.plural(cell.episodes, "episode") + " →"}));
  panel.appendChild(LB.el("button.close", {type: "button", text: "close", onclick: function () { panel.hidden = true; }}));
};

LB.pages.leaderboard = function (view) {
  var grid = LB.data.grid, cells = grid.cells;
  var card = LB.section("Leaderboard");
  var marks = LB.data.verifications || [];
  if (marks.length) {  // each input's replay from its answers (`lifebench verify`)
    card.appendChild(LB.el("ul.verifications", {}, marks.map(function (v, i) {
      return LB.el("li", {}, LB.el("code", {text: v.directory}), " · ", LB.replayMark(i));
    })));
  }
  card.appendChild(LB.note("One table per benchmark, as `lifebench leaderboard` prints it: success and " +
    "mean score with 95% intervals (cluster-robust over task families where the benchmark names them). " +
    "Click a header to sort; “from…” shows where a row's results came from."));
  card.appendChild(LB.el("nav.chips", {}, grid.tables.map(function (t) {
    return LB.el("a", {href: "#leaderboard", text: t.title, onclick: function (e) {
      e.preventDefault(); document.getElementById("grid-" + t.title).scrollIntoView();
    }});
  })));
  view.appendChild(card);
  var head = LB.data.headline;
  if (head) {  // the methods x benchmarks table first, as `lifebench leaderboard` prints it
    view.appendChild(LB.el("section.card", {id: "grid-headline"},
      LB.table({title: head.title, headers: head.headers, rows: head.rows, notes: head.notes,
                className: "headline"})));
  }
  grid.tables.forEach(function (t) {
    var panel = LB.el("div.provenance", {hidden: true});
    var box = LB.table({title: t.title, headers: t.headers, rows: t.rows, notes: t.notes, className: "grid",
                        interval: "95% CI",
                        extra: [{header: "", cell: function (i) {
                          var cell = cells[t.cells[i]];
                          return [LB.el("a.episodes-link", {href: LB.href("episodes", [], cell.filter), text: "episodes"}), " ",
                                  LB.el("button.from", {type: "button", text: "from…", onclick: function () {
                                    LB.provenance(cell, panel, t.title + " " + t.rows[i].slice(0, 4).join(" · "));
                                  }})];
                        }}]});
    view.appendChild(LB.el("section.card", {id: "grid-" + t.title}, box, panel));
  });
};

LB.pages.comparisons = function (view, route) {
  var c = LB.data.comparisons, params = route.params;
  var card = LB.section("Paired comparisons");
  card.appendChild(LB.note("Every pair of arms on each benchmark split and budget, paired over the instances both ran " +
    "(unpaired where fewer than half of either arm's instances are shared; unpaired: the instances only a / only b ran). " +
    "diff: mean_a - mean_b, with its standard error (diff_se) and 95% interval (diff_95). " +
    "p_adjusted: " + c.correction + " over the tests of each metric (metrics: " +
    c.metrics.join(", ") + "), as `lifebench compare DIR " + c.metrics.map(function (m) { return "--metric " + m; }).join(" ") +
    " --correction " + c.correction + "`. Highlighted: p_adjusted < 0.05."));
  (c.notes || []).forEach(function (n) { card.appendChild(LB.note(n)); });
  if (!c.rows.length) {
    card.appendChild(LB.note("Nothing to compare: each benchmark split holds one arm only."));
    view.appendChild(card);
    return;
  }
  var col = function (name) { return c.headers.indexOf(name); };
  var benchmarks = Array.from(new Set(c.rows.map(function (r) { return r[col("benchmark")]; })));
  var metrics = Array.from(new Set(c.rows.map(function (r) { return r[col("metric")]; })));
  var holder = LB.el("div");
  var pick = function (name, values) {
    return LB.el("label", {}, name + " ", LB.el("select", {name: name, onchange: draw},
      LB.el("option", {value: "", text: "all"}),
      values.map(function (v) { return LB.el("option", {value: v, text: v, selected: params[name] === v}); })));
  };
  var significant = LB.el("input", {type: "checkbox", onchange: draw, checked: params.significant === "1"});
  var controls = LB.el("div.filters", {}, pick("benchmark", benchmarks), pick("metric", metrics),
                       LB.el("label", {}, significant, " significant only"));
  function draw() {
    var want = {};
    controls.querySelectorAll("select").forEach(function (s) { want[s.name] = s.value; });
    var keep = [];
    c.rows.forEach(function (r, i) {
      if (want.benchmark && r[col("benchmark")] !== want.benchmark) return;
      if (want.metric && r[col("metric")] !== want.metric) return;
      if (significant.checked && !(c.p_adjusted[i] !== null && c.p_adjusted[i] < 0.05)) return;
      keep.push(i);
    });
    LB.clear(holder).appendChild(LB.table({title: keep.length + " of " + c.rows.length + " comparisons",
      headers: c.headers, rows: keep.map(function (i) { return c.rows[i]; }), className: "comparisons",
      highlight: function (k) { var p = c.p_adjusted[keep[k]]; return p !== null && p < 0.05; }}));
  }
  card.appendChild(controls);
  card.appendChild(holder);
  view.appendChild(card);
  draw();
};

LB.TABLE_KINDS = [["models", "Methods × models"], ["plugin", "The benchmarks' and methods' own tables (papers' layouts)"],
                  ["per-task", "Per task"], ["budget", "Success within k steps"]];

LB.pages.tables = function (view) {
  var tables = LB.data.tables;
  var card = LB.section("Tables");
  card.appendChild(LB.note("The leaderboard's further tables, as `lifebench leaderboard` prints them after the grid; all sortable."));
  if (!tables.length) card.appendChild(LB.note("No further tables for these results."));
  var toc = LB.el("ul.toc");
  card.appendChild(toc);
  view.appendChild(card);
  LB.TABLE_KINDS.forEach(function (kind) {
    var mine = tables.filter(function (t) { return t.kind === kind[0]; });
    if (!mine.length) return;
    var section = LB.section(kind[1], "tables-" + kind[0]);
    toc.appendChild(LB.el("li", {}, LB.el("a", {href: "#tables", text: kind[1] + " (" + mine.length + ")", onclick: function (e) {
      e.preventDefault(); section.scrollIntoView();
    }})));
    mine.forEach(function (t) {
      section.appendChild(LB.table({title: t.title, headers: t.headers, rows: t.rows, notes: t.notes, className: "further"}));
    });
    view.appendChild(section);
  });
};

LB.pages.plots = function (view, route) {
  var figures = LB.data.figures;
  var card = LB.section("Plots");
  if (!figures.length) { card.appendChild(LB.note("No results to plot.")); view.appendChild(card); return; }
  var chosen = figures.filter(function (f) { return f.title === route.params.group; })[0] || figures[0];
  card.appendChild(LB.el("label", {}, "benchmark split ", LB.el("select", {name: "group", onchange: function () {
    location.hash = LB.href("plots", [], {group: this.value});
  }}, figures.map(function (f) {
    return LB.el("option", {value: f.title, text: f.title + (f.training.length ? " · training curves" : ""), selected: f === chosen});
  }))));
  card.appendChild(LB.note("The numbers of the leaderboard's figures, drawn here: hover for values, click a legend entry to hide it."));
  view.appendChild(card);
  var grid = LB.el("div.charts");
  var arms = chosen.cost.points.map(function (p) { return p.label; });
  var colorOf = function (label) { var i = arms.indexOf(label); return LB.color(i < 0 ? arms.length : i); };
  if (chosen.budget_curves) {
    grid.appendChild(LB.lineChart({title: "Success vs step budget: " + chosen.title, xlabel: chosen.budget_curves.xlabel,
                                   ylabel: chosen.budget_curves.ylabel, series: chosen.budget_curves.series, colorOf: colorOf}));
  }
  grid.appendChild(LB.lineChart({title: "Learning curve: " + chosen.title, xlabel: chosen.learning.xlabel,
                                 ylabel: chosen.learning.ylabel, series: chosen.learning.series, colorOf: colorOf}));
  var points = chosen.cost.points;
  var pareto = function (axis, label) {
    return LB.paretoChart({title: "Success vs " + label + " per episode: " + chosen.title, xlabel: label + " per episode", colorOf: colorOf,
      points: points.filter(function (p) { return p[axis] !== null; }).map(function (p) {
        return {label: p.label, x: p[axis], y: p.success, front: p["front_" + axis],
                detail: [LB.plural(p.episodes, "episode")]};
      })});
  };
  grid.appendChild(pareto("tokens", "tokens"));
  if (points.some(function (p) { return p.cost !== null; })) grid.appendChild(pareto("cost", "cost (USD)"));
  if (chosen.heatmap) {
    grid.appendChild(LB.heatmap({title: chosen.heatmap.label + " per task: " + chosen.title, rows: chosen.heatmap.rows,
                                 columns: chosen.heatmap.columns, values: chosen.heatmap.values, vmax: chosen.heatmap.vmax}));
  }
  view.appendChild(LB.el("section.card", {}, grid));
  if (chosen.training.length || chosen.training_skipped.length) {
    var training = LB.section("Training curves", "training-curves");
    training.appendChild(LB.note("What methods that train before testing recorded of their training " +
      "(extra.training_curves on a stream's first record): per stream, one chart per series, each on its own scale."));
    chosen.training.forEach(function (stream) { training.appendChild(LB.trainingFigure(stream, colorOf)); });
    chosen.training_skipped.forEach(function (text) { training.appendChild(LB.el("p.note", {text: text})); });
    view.appendChild(training);
  }
};
