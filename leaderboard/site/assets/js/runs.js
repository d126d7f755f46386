/* Run manifests (what ran, with what: spec, command, versions, endpoint host) and the
   infrastructure failures (statuses that are not results), resolved by a retry or not. */
"use strict";

LB.pages.runs = function (view, route) {
  var runs = LB.data.manifests, chosen = route.args.length ? +route.args[0] : -1;
  var card = LB.section("Runs");
  card.appendChild(LB.note(LB.plural(runs.length, "invocation") + " of `lifebench run` wrote these results " +
    "(manifest.json of " + LB.data.meta.directories.join(", ") + "). Endpoints show their host only; keys are never written."));
  runs.forEach(function (run, i) {
    var details = LB.el("details.run", {id: "run-" + i, open: i === chosen},
      LB.el("summary", {}, LB.el("strong", {text: "run " + (run.run_id || "?")}),
            " · " + (run.started_utc || "?") + " · " + (run.spec_file ? "spec " + run.spec_file : "command line") +
            " · " + (run.directory || "")),
      LB.el("ul.runs", {}, LB.runLine(run, i)),
      LB.el("p.small", {text: [run.executor + " executor", run.workers + " workers", LB.plural(run.streams || 0, "stream"),
                               (run.episodes_total || 0) + " episodes asked (" + (run.episodes_already_done || 0) + " already done)",
                               "python " + run.python, run.platform].join(" · ")}),
      LB.el("pre.json", {text: JSON.stringify(run.spec, null, 2)}));
    card.appendChild(details);
  });
  view.appendChild(card);
  if (chosen >= 0 && document.getElementById("run-" + chosen)) {
    setTimeout(function () { document.getElementById("run-" + chosen).scrollIntoView(); }, 0);
  }

  var f = LB.data.failures;
  var fail = LB.section("Infrastructure failures", "failures");
  fail.appendChild(LB.note("Episodes that ended in env_error, llm_error, timeout or agent_error are the infrastructure's " +
    "failures, never counted as a method's: they are retried, and a rerun of the same command retries those left."));
  var statuses = Object.keys(f.by_status).map(function (s) { return s + ": " + f.by_status[s]; }).join(", ");
  fail.appendChild(LB.el("p", {text: LB.plural(f.recorded, "failure") + " recorded" + (statuses ? " (" + statuses + ")" : "") +
    "; " + LB.plural(f.unresolved_episodes, "episode") + " still without a result."}));
  if ((f.server_notes || []).length) {
    // not failures of the infrastructure: results whose numbers the model's server shaped
    fail.appendChild(LB.el("h3", {text: "The model's server"}));
    var list = LB.el("ul", {});
    f.server_notes.forEach(function (n) { list.appendChild(LB.el("li", {text: n})); });
    fail.appendChild(list);
  }
  if (f.rows.length) {
    var headers = ["benchmark", "split", "method", "model", "seed", "instance", "trial", "attempt", "status", "resolved", "error"];
    var rows = f.rows.map(function (r) {
      return [r.benchmark, r.split, r.method, r.model, String(r.seed), r.instance, String(r.trial), String(r.attempt),
              r.status, r.resolved ? "yes" : "no", r.error];
    });
    fail.appendChild(LB.table({title: f.rows.length < f.recorded ? "the first " + f.rows.length : "", headers: headers, rows: rows,
      className: "failures", extra: [{header: "", cell: function (i) {
        var e = f.rows[i].episode;
        return e === null ? null : LB.el("a", {href: LB.href("episode", [String(e)]), text: "episode"});
      }}]}));
  }
  view.appendChild(fail);
};

/* What `lifebench verify` found when it replayed one input from its answers. */
LB.pages.verification = function (view, route) {
  var index = +route.args[0], v = (LB.data.verifications || [])[index];
  var card = LB.section("Replay of " + (v ? v.directory : "?"), "verification");
  if (!v || !v.report) {
    card.appendChild(LB.note(v ? v.mark + ": no report of `lifebench verify` for these records." : "No such input."));
    view.appendChild(card);
    return;
  }
  var r = v.report;
  card.appendChild(LB.el("p", {}, LB.replayMark(index)));
  card.appendChild(LB.el("p", {text: r.summary}));
  card.appendChild(LB.el("p.small", {text: [
    "verified " + (r.verified_utc || "?") + " by lifebench " + (r.lifebench || "?"),
    LB.plural(r.answers || 0, "answer") + " replayed offline", (r.seconds || 0) + " s",
    r.sample ? "a sample of " + r.sample.streams + " of " + r.sample.of + " streams (seed " + r.sample.seed + ")" : "every stream",
    (r.tolerance_fields || []).length ? "within tolerance: " + r.tolerance_fields.join(", ") : null
  ].filter(Boolean).join(" · ")}));
  (r.notes || []).forEach(function (n) { card.appendChild(LB.note("note: " + n)); });
  if ((r.differences || []).length) {
    card.appendChild(LB.table({title: r.differences.length < r.differences_total ? "the first " + r.differences.length : "",
      headers: ["record", "field", "submitted", "replayed", "within tolerance"], className: "differences",
      rows: r.differences.map(function (d) {
        return [d.record, d.field, JSON.stringify(d.submitted), JSON.stringify(d.replayed), d.within_tolerance ? "yes" : "no"];
      })}));
  }
  view.appendChild(card);
};
