/* One episode, step by step (its record: status, scores, LLM usage and cost, the method's
   extra fields; its trajectory, attempt by attempt), and two episodes on the same instance
   side by side. A stream's file is loaded when one of its episodes is opened. */
"use strict";

LB.episodeOf = function (row) {
  var E = LB.episodes, C = E.columns;
  return {row: row, stream: C.stream[row], index: C.episode_index[row], attempt: C.attempt[row],
          title: [LB.cellText(row, "instance"), LB.cellText(row, "method"), LB.cellText(row, "model"),
                  "seed " + C.seed[row], "trial " + C.trial[row]].join(" · ")};
};

/* The record of an episode, its earlier failed attempts and its trajectories. */
LB.episodeData = function (row) {
  var ep = LB.episodeOf(row);
  return LB.loadStream(ep.stream).then(function (stream) {
    var key = String(ep.index);
    return {ep: ep, stream: stream, record: stream.records[key], failures: stream.failures[key] || [],
            attempts: stream.trajectories[key] || []};
  });
};

/* Other episodes on the same benchmark split and instance (same seed first). */
LB.counterparts = function (row) {
  var E = LB.episodes, C = E.columns, out = [];
  for (var i = 0; i < E.count; i++) {
    if (i === row || C.instance[i] !== C.instance[row] || C.split[i] !== C.split[row] ||
        C.benchmark[i] !== C.benchmark[row]) continue;
    out.push(i);
  }
  return out.sort(function (a, b) {
    return (C.seed[a] !== C.seed[row]) - (C.seed[b] !== C.seed[row]) || a - b;
  });
};

LB.facts = function (record) {
  var usage = record.llm_usage || {};
  var rows = [
    ["benchmark", record.benchmark + (record.benchmark_config_hash ? " [" + record.benchmark_config_hash + "]" : "")],
    ["split", record.split], ["instance", record.instance_id], ["task family", record.task_family || "—"],
    ["method", record.method + " [" + record.method_config_hash + "]" + (record.context ? " + " + record.context : "")],
    ["model", record.model || "—"], ["seed · trial · position", record.seed + " · " + record.trial + " · " + record.episode_index],
    ["status", record.status + (record.attempt ? " (attempt " + (record.attempt + 1) + ")" : "")],
    ["success", record.success ? "yes" + (record.success_step ? " (at step " + record.success_step + ")" : "") : "no"],
    ["score", LB.num(record.score)], ["steps / budget", record.steps + " / " + record.budget_steps],
    ["LLM calls · tokens in · out", record.llm_calls + " · " + record.tokens_in + " · " + record.tokens_out],
    ["cost", record.cost_usd === null ? "—" : "$" + record.cost_usd.toFixed(4)],
    ["wall time", LB.num(record.wall_s, 2) + " s"], ["run", record.run_id + " · lifebench " + record.harness_version]];
  if (record.explore_steps !== null) rows.push(["exploration steps", String(record.explore_steps)]);
  if (record.error) rows.push(["error", record.error]);
  var box = LB.el("dl.facts", {}, rows.map(function (r) { return [LB.el("dt", {text: r[0]}), LB.el("dd", {text: r[1]})]; }));
  var roles = Object.keys(usage);
  var usageTable = roles.length ? LB.table({title: "LLM usage by role", headers: ["role", "calls", "tokens in", "tokens out", "cached"],
    rows: roles.map(function (r) { var u = usage[r]; return [r, String(u.calls), String(u.tokens_in), String(u.tokens_out), String(u.cached)]; })}) : null;
  var calls = record.llm_call_tokens || [];
  var callTable = calls.length ? LB.el("details.calls", {}, LB.el("summary", {text: "tokens of each LLM call (" + calls.length + ")"}),
    LB.table({headers: ["#", "role", "tokens in", "tokens out", "cached"], rows: calls.slice(0, 500).map(function (c, i) {
      return [String(i + 1), c[0], String(c[1]), String(c[2]), c[3] ? "yes" : "no"];
    })})) : null;
  var extra = LB.el("details.extra", {open: true}, LB.el("summary", {text: "extra (the benchmark's and the method's own fields)"}),
                    LB.el("pre.json", {text: JSON.stringify(record.extra, null, 2)}));
  return LB.el("div.episode-facts", {}, box, usageTable, callTable, extra);
};

/* A trajectory as an ordered list of steps: the first is the observation after reset. */
LB.stepsList = function (steps) {
  var list = LB.el("ol.steps", {start: "0"});
  var n = 0;
  steps.forEach(function (s, k) {
    var item = LB.el("li.step", {dataset: {step: String(k)}});
    if (k === 0) item.appendChild(LB.el("div.action.reset", {text: "reset"}));
    else if (s.action === undefined || s.action === null) item.appendChild(LB.el("div.action.restore", {text: "returned to an earlier state"}));
    else {
      n += 1;
      item.appendChild(LB.el("div.action", {}, LB.el("span.step-no", {text: "step " + n}), LB.el("code", {text: "> " + s.action}),
        s.reward ? LB.el("span.reward", {text: "reward " + s.reward}) : null));
      // a reasoning model's reasoning before this action: folded, as it is long
      if (s.reasoning) item.appendChild(LB.el("details.reasoning", {}, LB.el("summary", {text: "reasoning (" + s.reasoning.length + " characters)"}),
                                              LB.el("pre.reasoning", {text: s.reasoning})));
    }
    item.appendChild(LB.el("pre.observation", {text: s.observation}));
    list.appendChild(item);
  });
  return list;
};

LB.attemptPicker = function (attempts, chosen, onpick) {
  if (attempts.length < 2) return null;
  return LB.el("div.attempts", {}, "attempts: ", attempts.map(function (a, i) {
    return LB.el("button", {type: "button", "aria-pressed": i === chosen ? "true" : "false",
                            text: "#" + (a.attempt + 1) + " " + a.status + (a.trial ? " (trial " + a.trial + ")" : ""),
                            onclick: function () { onpick(i); }});
  }));
};

LB.chosenAttempt = function (d) {
  var k = d.attempts.length - 1;
  d.attempts.forEach(function (a, i) { if (a.attempt === d.ep.attempt && a.trial === d.record.trial) k = i; });
  return k;
};

LB.pages.episode = function (view, route) {
  var row = +route.args[0];
  var card = LB.section("Episode");
  view.appendChild(card);
  if (!LB.episodes) { card.appendChild(LB.note("Loading…")); LB.loadEpisodes().then(LB.render); return; }
  if (!(row >= 0 && row < LB.episodes.count)) { card.appendChild(LB.note("No episode " + route.args[0] + ".")); return; }
  card.appendChild(LB.el("p.muted", {text: "Loading its stream…"}));
  LB.episodeData(row).then(function (d) {
    LB.clear(card);
    card.appendChild(LB.el("h2", {text: d.ep.title}));
    var others = LB.counterparts(row);
    card.appendChild(LB.el("div.toolbar", {},
      LB.el("a", {href: "javascript:history.back()", text: "← back"}),
      others.length ? LB.el("label", {}, "side by side with ", LB.el("select", {name: "pair", onchange: function () {
        if (this.value) location.hash = LB.href("pair", [String(row), this.value]);
      }}, LB.el("option", {value: "", text: "another episode on this instance…"}),
        others.map(function (o) {
          return LB.el("option", {value: String(o), text: [LB.cellText(o, "method"), LB.cellText(o, "model"), "seed " + LB.cellText(o, "seed"),
                                                             "trial " + LB.cellText(o, "trial"), LB.cellText(o, "status")].join(" · ")});
        }))) : LB.el("span.muted", {text: "no other episode on this instance"})));
    card.appendChild(LB.facts(d.record));
    d.failures.filter(function (f) { return f.attempt !== d.record.attempt || f.status !== d.record.status; }).forEach(function (f) {
      card.appendChild(LB.el("p.failure", {text: "attempt " + (f.attempt + 1) + ": " + f.status + " — " + (f.error || "")}));
    });
    var steps = LB.section("Trajectory");
    view.appendChild(steps);
    if (!d.attempts.length) {
      steps.appendChild(LB.note(d.stream.has_trajectories ? "No trajectory of this episode in its stream's file." :
        "No trajectory recorded for this stream (the run used --no-trajectories)."));
      return;
    }
    var holder = LB.el("div");
    function show(i) {
      var a = d.attempts[i], cursor = 0;
      var list = LB.stepsList(a.steps), items = list.children;
      var label = LB.el("span.step-at");
      function go(k) {
        cursor = Math.max(0, Math.min(items.length - 1, k));
        Array.prototype.forEach.call(items, function (it, j) { it.classList.toggle("current", j === cursor); });
        label.textContent = "entry " + cursor + " of " + (items.length - 1);
        items[cursor].scrollIntoView({block: "nearest"});
      }
      LB.clear(holder);
      LB.append(holder, LB.attemptPicker(d.attempts, i, show));
      holder.appendChild(LB.el("div.stepper", {},
        LB.el("button", {type: "button", text: "◀ step", onclick: function () { go(cursor - 1); }}),
        LB.el("button", {type: "button", text: "step ▶", onclick: function () { go(cursor + 1); }}), label,
        LB.el("span.muted", {text: " (keys: j / k)"})));
      holder.appendChild(list);
      LB.keys = function (e) { if (e.key === "j") go(cursor + 1); if (e.key === "k") go(cursor - 1); };
      label.textContent = LB.plural(items.length - 1, "step");
    }
    steps.appendChild(holder);
    show(LB.chosenAttempt(d));
  }, function (err) { LB.clear(card).appendChild(LB.note(String(err))); });
};

LB.pages.pair = function (view, route) {
  var a = +route.args[0], b = +route.args[1];
  var card = LB.section("Side by side");
  view.appendChild(card);
  if (!LB.episodes) { card.appendChild(LB.note("Loading…")); LB.loadEpisodes().then(LB.render); return; }
  if (!(a >= 0 && a < LB.episodes.count && b >= 0 && b < LB.episodes.count)) { card.appendChild(LB.note("No such episodes.")); return; }
  Promise.all([LB.episodeData(a), LB.episodeData(b)]).then(function (both) {
    var cols = both.map(function (d) {
      var attempt = d.attempts[LB.chosenAttempt(d)] || {steps: []};
      var r = d.record;
      return {d: d, steps: attempt.steps, head: LB.el("div.pair-head", {},
        LB.el("h3", {}, LB.el("a", {href: LB.href("episode", [String(d.ep.row)]), text: d.ep.title})),
        LB.el("p", {text: r.status + " · success " + (r.success ? "yes" : "no") + " · score " + LB.num(r.score) +
                          " · " + r.steps + " steps · " + r.tokens_in + "+" + r.tokens_out + " tokens"}))};
    });
    card.appendChild(LB.el("p.muted", {text: "The same instance, " + LB.cellText(a, "instance") + ", played by two arms: entry k of each trajectory on one line."}));
    var table = LB.el("table.pair", {}, LB.el("thead", {}, LB.el("tr", {}, LB.el("th", {text: "#"}),
      cols.map(function (c) { return LB.el("th", {}, c.head); }))));
    var body = LB.el("tbody"), n = Math.max(cols[0].steps.length, cols[1].steps.length);
    for (var k = 0; k < n; k++) {
      body.appendChild(LB.el("tr", {dataset: {step: String(k)}}, LB.el("td.k", {text: String(k)}), cols.map(function (c) {
        var s = c.steps[k];
        if (!s) return LB.el("td.empty");
        return LB.el("td", {}, k === 0 ? LB.el("div.action.reset", {text: "reset"}) :
                     (s.action === undefined || s.action === null) ? LB.el("div.action.restore", {text: "returned to an earlier state"}) :
                     LB.el("div.action", {}, LB.el("code", {text: "> " + s.action})),
                     LB.el("pre.observation", {text: s.observation}));
      })));
    }
    table.appendChild(body);
    card.appendChild(LB.el("div.scroll", {}, table));
    if (!n) card.appendChild(LB.note("Neither episode has a recorded trajectory."));
  }, function (err) { card.appendChild(LB.note(String(err))); });
};
