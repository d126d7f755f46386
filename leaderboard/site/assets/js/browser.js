/* The episode browser: every episode as columns (data/episodes.js), filtered by benchmark,
   split, method, model, budget, seed, status, success, task family and instance, sorted by
   any column, listed a page at a time. Filtering is one pass over small integer codes, so
   it stays fast at 100,000 episodes; the state lives in the URL. */
"use strict";

LB.CODED_FILTERS = ["benchmark", "split", "method", "model", "budget", "status", "family"];
LB.LIST_COLUMNS = [["benchmark", "benchmark"], ["split", "split"], ["method", "method"], ["model", "model"],
                   ["seed", "seed"], ["trial", "trial"], ["instance", "instance"], ["family", "task family"],
                   ["status", "status"], ["success", "success"], ["score", "score"], ["steps", "steps"],
                   ["tokens", "tokens"]];
LB.PAGE_SIZE = 50;

/* Per coded column: its values' order (rank by natural sort), computed once. */
LB.ranks = {};
LB.rankOf = function (name) {
  if (!LB.ranks[name]) {
    var values = LB.episodes.values[name], order = values.map(function (_, i) { return i; });
    var collator = new Intl.Collator("en", {numeric: true});
    order.sort(function (a, b) { return collator.compare(String(values[a]), String(values[b])); });
    var rank = new Int32Array(values.length);
    order.forEach(function (code, r) { rank[code] = r; });
    LB.ranks[name] = {rank: rank, order: order};
  }
  return LB.ranks[name];
};

LB.seeds = null;
LB.seedValues = function () {
  if (!LB.seeds) {
    var seen = {}, col = LB.episodes.columns.seed;
    for (var i = 0; i < col.length; i++) seen[col[i]] = true;
    LB.seeds = Object.keys(seen).map(Number).sort(function (a, b) { return a - b; });
  }
  return LB.seeds;
};

/* The rows matching `state` (an object of filter values), as an Int32Array. */
LB.match = function (state) {
  var E = LB.episodes, C = E.columns, n = E.count, tests = [];
  for (var k = 0; k < LB.CODED_FILTERS.length; k++) {
    var name = LB.CODED_FILTERS[k], want = state[name];
    if (want === undefined || want === "") continue;
    var code = E.values[name].indexOf(want);
    if (code < 0) return new Int32Array(0);
    tests.push([C[name], code]);
  }
  if (state.seed !== undefined && state.seed !== "") tests.push([C.seed, +state.seed]);
  if (state.success === "yes" || state.success === "no") tests.push([C.success, state.success === "yes" ? 1 : 0]);
  var allowed = null;
  if (state.instance) {
    var needle = state.instance.toLowerCase(), values = E.values.instance;
    allowed = new Uint8Array(values.length);
    for (var v = 0; v < values.length; v++) allowed[v] = values[v].toLowerCase().indexOf(needle) >= 0 ? 1 : 0;
  }
  var out = new Int32Array(n), count = 0, t = tests.length, inst = C.instance;
  outer: for (var i = 0; i < n; i++) {
    for (var j = 0; j < t; j++) if (tests[j][0][i] !== tests[j][1]) continue outer;
    if (allowed !== null && !allowed[inst[i]]) continue;
    out[count++] = i;
  }
  return out.subarray(0, count);
};

/* `rows` sorted by a column (coded columns by their values' natural order). */
LB.sortRows = function (rows, column, dir) {
  var C = LB.episodes.columns, col = C[column], sign = dir === "desc" ? -1 : 1, key;
  if (LB.episodes.values[column]) {
    var rank = LB.rankOf(column).rank;
    key = function (i) { return rank[col[i]]; };
  } else {
    key = function (i) { var v = col[i]; return v === null ? Infinity : v; };
  }
  var keys = new Float64Array(LB.episodes.count);
  for (var k = 0; k < rows.length; k++) keys[rows[k]] = key(rows[k]);
  return Int32Array.from(rows).sort(function (a, b) { return sign * (keys[a] - keys[b]) || a - b; });
};

LB.cellText = function (row, column) {
  var E = LB.episodes, v = E.columns[column][row];
  if (E.values[column]) return String(E.values[column][v]);
  if (column === "success") return v ? "yes" : "no";
  if (column === "score") return LB.num(v);
  return v === null ? "—" : String(v);
};

LB.pages.episodes = function (view, route) {
  var card = LB.section("Episodes");
  view.appendChild(card);
  if (!LB.episodes) {
    card.appendChild(LB.note("Loading the episode index…"));
    LB.loadEpisodes().then(function () { LB.render(); });
    return;
  }
  var E = LB.episodes, state = {};
  Object.keys(route.params).forEach(function (k) { state[k] = route.params[k]; });
  var controls = LB.el("form.filters", {id: "episode-filters", onsubmit: function (e) { e.preventDefault(); }});
  function select(name, label, options) {
    var s = LB.el("select", {name: name, onchange: function () { state[name] = this.value; state.page = ""; update(); }},
                  LB.el("option", {value: "", text: "any"}),
                  options.map(function (o) { return LB.el("option", {value: o[0], text: o[1], selected: String(state[name] || "") === o[0]}); }));
    controls.appendChild(LB.el("label", {}, label + " ", s));
  }
  LB.CODED_FILTERS.forEach(function (name) {
    var values = E.values[name];
    if (name === "budget" && values.length < 2) return;
    select(name, name === "family" ? "task family" : name,
           LB.rankOf(name).order.map(function (code) { return [String(values[code]), String(values[code])]; }));
  });
  select("seed", "seed", LB.seedValues().map(function (s) { return [String(s), String(s)]; }));
  select("success", "success", [["yes", "yes"], ["no", "no"]]);
  var timer = null;
  controls.appendChild(LB.el("label", {}, "instance ", LB.el("input", {name: "instance", type: "search", value: state.instance || "",
    placeholder: "contains…", oninput: function () {
      var input = this;
      clearTimeout(timer);
      timer = setTimeout(function () { state.instance = input.value; state.page = ""; update(); }, 150);
    }})));
  controls.appendChild(LB.el("button", {type: "button", text: "clear", onclick: function () {
    location.hash = "#episodes";
  }}));
  card.appendChild(controls);
  var count = LB.el("p#episode-count.count");
  var list = LB.el("div#episode-list");
  card.appendChild(count);
  card.appendChild(list);

  function update() {
    var t0 = performance.now();
    var rows = LB.match(state);
    if (state.sort) rows = LB.sortRows(rows, state.sort, state.dir);
    draw(rows);
    LB.lastFilterMs = performance.now() - t0;
    count.dataset.ms = LB.lastFilterMs.toFixed(1);
    history.replaceState(null, "", LB.href("episodes", [], state));
  }

  function draw(rows) {
    var pages = Math.max(1, Math.ceil(rows.length / LB.PAGE_SIZE));
    var page = Math.min(pages - 1, Math.max(0, +(state.page || 0)));
    count.dataset.count = String(rows.length);
    LB.clear(count).appendChild(document.createTextNode(rows.length.toLocaleString("en-US") + " of " +
      LB.plural(E.count, "episode") + (rows.length > LB.PAGE_SIZE ? " · page " + (page + 1) + " of " + pages : "")));
    var head = LB.el("tr", {}, LB.LIST_COLUMNS.map(function (c) {
      var sorted = state.sort === c[0];
      return LB.el("th", {text: c[1], scope: "col", tabindex: "0", title: "sort by " + c[1],
                          "aria-sort": sorted ? (state.dir === "desc" ? "descending" : "ascending") : null,
                          onclick: function () {
                            state.dir = sorted && state.dir !== "desc" ? "desc" : "asc";
                            state.sort = c[0]; state.page = ""; update();
                          }});
    }));
    var body = LB.el("tbody");
    var end = Math.min(rows.length, (page + 1) * LB.PAGE_SIZE);
    for (var k = page * LB.PAGE_SIZE; k < end; k++) {
      var row = rows[k];
      var tr = LB.el("tr", {dataset: {episode: String(row)}, class: "status-" + LB.cellText(row, "status")});
      LB.LIST_COLUMNS.forEach(function (c) {
        var text = LB.cellText(row, c[0]);
        tr.appendChild(LB.el("td", {}, c[0] === "instance" ? LB.el("a", {href: LB.href("episode", [String(row)]), text: text}) : text));
      });
      body.appendChild(tr);
    }
    var pager = LB.el("div.pager", {},
      LB.el("button", {type: "button", text: "◀ previous", disabled: page === 0, onclick: function () { state.page = String(page - 1); update(); }}),
      LB.el("button", {type: "button", text: "next ▶", disabled: page >= pages - 1, onclick: function () { state.page = String(page + 1); update(); }}));
    LB.clear(list).appendChild(LB.el("div.scroll", {}, LB.el("table.episodes", {}, LB.el("thead", {}, head), body)));
    if (pages > 1) list.appendChild(pager);
  }
  update();
};
