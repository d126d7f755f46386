/* Sortable tables: click a header to sort by it (numbers as numbers, "—" last), again to
   reverse. Cell text is exactly the leaderboard's; extra columns (links) are marked. */
"use strict";

/* An interval [low, high] on [0, 1] as a small bar (no text: the cell keeps its text). */
LB.intervalBar = function (text) {
  var m = /^\[(-?[\d.]+), (-?[\d.]+)\]$/.exec(text || "");
  if (!m) return null;
  var lo = Math.max(0, Math.min(1, +m[1])), hi = Math.max(0, Math.min(1, +m[2]));
  var ns = "http://www.w3.org/2000/svg", svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "ci");
  svg.setAttribute("viewBox", "0 0 60 8");
  svg.setAttribute("aria-hidden", "true");
  [[0, 60, "ci-track"], [lo * 60, Math.max(1, (hi - lo) * 60), "ci-range"]].forEach(function (r) {
    var rect = document.createElementNS(ns, "rect");
    rect.setAttribute("x", r[0]); rect.setAttribute("y", 2);
    rect.setAttribute("width", r[1]); rect.setAttribute("height", 4);
    rect.setAttribute("class", r[2]);
    svg.appendChild(rect);
  });
  return svg;
};

/* spec: {title, headers, rows, notes, extra: [{header, cell(rowIndex) -> node}],
          interval: header of a [0, 1] interval column, className, highlight(rowIndex)} */
LB.table = function (spec) {
  var extra = spec.extra || [];
  var table = LB.el("table.sortable" + (spec.className ? "." + spec.className : ""),
                    {dataset: {title: spec.title || ""}});
  var headRow = LB.el("tr");
  spec.headers.forEach(function (h, col) {
    headRow.appendChild(LB.el("th", {text: h, scope: "col", tabindex: "0", title: "sort by " + h,
                                     dataset: {header: h, col: String(col)},
                                     onclick: function () { sortBy(col, this); },
                                     onkeydown: function (e) { if (e.key === "Enter") sortBy(col, this); }}));
  });
  extra.forEach(function (x) { headRow.appendChild(LB.el("th.extra", {text: x.header})); });
  table.appendChild(LB.el("thead", {}, headRow));
  var body = LB.el("tbody");
  spec.rows.forEach(function (row, i) {
    var tr = LB.el("tr", {dataset: {row: String(i)}});
    if (spec.highlight && spec.highlight(i)) tr.className = "highlight";
    row.forEach(function (text, col) {
      var td = LB.el("td", {text: text});
      if (spec.headers[col] === spec.interval) LB.append(td, LB.intervalBar(text));
      tr.appendChild(td);
    });
    extra.forEach(function (x) { tr.appendChild(LB.el("td.extra", {}, x.cell(i))); });
    body.appendChild(tr);
  });
  table.appendChild(body);

  var state = {col: -1, dir: 1};
  function sortBy(col, th) {
    state.dir = state.col === col ? -state.dir : 1;
    state.col = col;
    var rows = Array.prototype.slice.call(body.rows).map(function (tr) {
      return {tr: tr, key: LB.sortKey(tr.cells[col].textContent), i: +tr.dataset.row};
    });
    rows.sort(function (a, b) {
      var c = LB.compareKeys(a.key, b.key);
      if (a.key[0] === 2 || b.key[0] === 2) return c || a.i - b.i;  // "—" stays last
      return state.dir * c || a.i - b.i;
    });
    rows.forEach(function (r) { body.appendChild(r.tr); });
    Array.prototype.forEach.call(headRow.cells, function (c) { c.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
  }

  var box = LB.el("div.table-box", {}, spec.title ? LB.el("h3", {text: spec.title}) : null,
                  LB.el("div.scroll", {}, table));
  (spec.notes || []).forEach(function (n) { box.appendChild(LB.el("p.note", {text: "note: " + n})); });
  return box;
};
