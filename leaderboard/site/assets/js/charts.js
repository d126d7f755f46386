/* Charts drawn as inline SVG: line charts (success within k steps, learning curves), a
   scatter with its Pareto front (success against tokens or cost per episode) and heatmaps
   (per task). Hover shows the values; a legend entry hides or shows its series. */
"use strict";

LB.palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
              "#ff9da7", "#9c755f", "#bab0ac"];
LB.color = function (i) { return LB.palette[i % LB.palette.length]; };

/* The colour of each item (series or point): spec.colorOf(label) when the page gives one
   (one arm, one colour, in every chart of a group), else by position. */
LB.colorsOf = function (spec, items) {
  return items.map(function (item, i) { return spec.colorOf ? spec.colorOf(item.label) : LB.color(i); });
};

var SVG_NS = "http://www.w3.org/2000/svg";
LB.svg = function (tag, attrs, text) {
  var node = document.createElementNS(SVG_NS, tag);
  Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
  if (text !== undefined) node.textContent = text;
  return node;
};

/* About `count` round ticks over [lo, hi]. */
LB.ticks = function (lo, hi, count) {
  if (!(hi > lo)) return [lo];
  var raw = (hi - lo) / (count || 5), mag = Math.pow(10, Math.floor(Math.log10(raw)));
  var step = [1, 2, 2.5, 5, 10].map(function (f) { return f * mag; }).filter(function (s) { return s >= raw; })[0];
  var out = [];
  for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
};

LB.tickText = function (v) {
  var a = Math.abs(v);
  if (a >= 1e6) return (v / 1e6).toPrecision(3).replace(/\.?0+$/, "") + "M";
  if (a >= 1e4) return (v / 1e3).toPrecision(3).replace(/\.?0+$/, "") + "k";
  return String(+v.toPrecision(4));
};

/* Axes, frame and scales of a chart (spec.integerX: whole-number x ticks only, for counts);
   returns {svg, plot, x(v), y(v), inverse x}. */
LB.frame = function (spec, xdomain, ydomain) {
  var W = spec.width || 560, H = spec.height || 320, m = {l: 52, r: 14, t: 12, b: 42};
  var svg = LB.svg("svg", {viewBox: "0 0 " + W + " " + H, class: "chart", role: "img",
                           "aria-label": spec.title || ""});
  var pw = W - m.l - m.r, ph = H - m.t - m.b;
  var x0 = xdomain[0], x1 = xdomain[1] > x0 ? xdomain[1] : x0 + 1;
  var y0 = ydomain[0], y1 = ydomain[1] > y0 ? ydomain[1] : y0 + 1;
  var f = {svg: svg, m: m, pw: pw, ph: ph,
           x: function (v) { return m.l + (v - x0) / (x1 - x0) * pw; },
           y: function (v) { return m.t + ph - (v - y0) / (y1 - y0) * ph; },
           xAt: function (px) { return x0 + (px - m.l) / pw * (x1 - x0); }};
  var axes = LB.svg("g", {class: "axes"});
  LB.ticks(y0, y1, 5).forEach(function (t) {
    axes.appendChild(LB.svg("line", {x1: m.l, x2: m.l + pw, y1: f.y(t), y2: f.y(t), class: "grid"}));
    axes.appendChild(LB.svg("text", {x: m.l - 6, y: f.y(t) + 4, "text-anchor": "end"}, LB.tickText(t)));
  });
  LB.ticks(x0, x1, 6).filter(function (t) { return !spec.integerX || t === Math.round(t); }).forEach(function (t) {
    axes.appendChild(LB.svg("line", {x1: f.x(t), x2: f.x(t), y1: m.t + ph, y2: m.t + ph + 4, class: "tick"}));
    axes.appendChild(LB.svg("text", {x: f.x(t), y: m.t + ph + 16, "text-anchor": "middle"}, LB.tickText(t)));
  });
  axes.appendChild(LB.svg("rect", {x: m.l, y: m.t, width: pw, height: ph, class: "plot-frame"}));
  axes.appendChild(LB.svg("text", {x: m.l + pw / 2, y: H - 6, "text-anchor": "middle", class: "label"},
                          spec.xlabel || ""));
  axes.appendChild(LB.svg("text", {x: 12, y: m.t + ph / 2, "text-anchor": "middle", class: "label",
                                   transform: "rotate(-90 12 " + (m.t + ph / 2) + ")"}, spec.ylabel || ""));
  svg.appendChild(axes);
  return f;
};

/* A figure: title, the chart, a legend whose entries toggle `layers[i]`, a tooltip box. */
LB.figure = function (title, svg, labels, layers, colors) {
  var tip = LB.el("div.tip", {hidden: true});
  var legend = LB.el("div.legend");
  labels.forEach(function (label, i) {
    var item = LB.el("button.legend-item", {type: "button", "aria-pressed": "true", title: "hide or show " + label,
                                            onclick: function () {
                                              var on = item.getAttribute("aria-pressed") !== "true";
                                              item.setAttribute("aria-pressed", on ? "true" : "false");
                                              layers[i].style.display = on ? "" : "none";
                                            }},
                     LB.el("span.swatch", {style: "background:" + colors[i]}), label);
    legend.appendChild(item);
  });
  return LB.el("figure.chart-box", {}, LB.el("figcaption", {text: title}), LB.el("div.chart-wrap", {}, svg, tip), legend);
};

LB.showTip = function (fig, svg, px, py, html) {
  var tip = fig.querySelector(".tip"), box = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
  tip.hidden = false;
  LB.clear(tip);
  html.forEach(function (line) { tip.appendChild(LB.el("div", {}, line)); });
  var sx = box.width / vb.width, sy = box.height / vb.height;
  tip.style.left = Math.min(px * sx + 12, box.width - 180) + "px";
  tip.style.top = Math.max(0, py * sy - 10) + "px";
};

function nearest(xs, v) {
  var lo = 0, hi = xs.length - 1;
  while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (xs[mid] < v) lo = mid; else hi = mid; }
  return Math.abs(xs[lo] - v) <= Math.abs(xs[hi] - v) ? lo : hi;
}

/* spec: {title, xlabel, ylabel, series: [{label, x: [], y: []}], ydomain: [lo, hi],
   width, height, legend, integerX} */
LB.lineChart = function (spec) {
  var colors = LB.colorsOf(spec, spec.series);
  var xs = [].concat.apply([], spec.series.map(function (s) { return s.x; }));
  var xmin = Math.min.apply(null, xs.length ? xs : [0]), xmax = Math.max.apply(null, xs.length ? xs : [1]);
  var f = LB.frame(spec, [xmin, xmax], spec.ydomain || [0, 1]);
  var layers = spec.series.map(function (s, i) {
    var d = "", pen = "M";
    s.x.forEach(function (x, k) {
      if (s.y[k] === null) { pen = "M"; return; }
      d += pen + f.x(x).toFixed(1) + "," + f.y(s.y[k]).toFixed(1);
      pen = "L";
    });
    var g = LB.svg("g", {class: "series", "data-label": s.label});
    g.appendChild(LB.svg("path", {d: d, stroke: colors[i], fill: "none", "stroke-width": 2}));
    if (s.x.length <= 30) {  // few points: mark them (a single one draws no line)
      s.x.forEach(function (x, k) {
        if (s.y[k] !== null) g.appendChild(LB.svg("circle", {cx: f.x(x), cy: f.y(s.y[k]), r: 3, fill: colors[i]}));
      });
    }
    f.svg.appendChild(g);
    return g;
  });
  var rule = LB.svg("line", {y1: f.m.t, y2: f.m.t + f.ph, class: "rule", visibility: "hidden"});
  f.svg.appendChild(rule);
  var overlay = LB.svg("rect", {x: f.m.l, y: f.m.t, width: f.pw, height: f.ph, class: "overlay"});
  f.svg.appendChild(overlay);
  // spec.legend false: no legend (a chart of one series its title names)
  var fig = LB.figure(spec.title, f.svg, spec.legend === false ? [] : spec.series.map(function (s) { return s.label; }),
                      layers, colors);
  overlay.addEventListener("mousemove", function (e) {
    var vb = f.svg.viewBox.baseVal, box = f.svg.getBoundingClientRect();
    var px = (e.clientX - box.left) * vb.width / box.width, at = f.xAt(px), lines = [];
    spec.series.forEach(function (s, i) {
      if (layers[i].style.display === "none" || !s.x.length) return;
      var k = nearest(s.x, at);
      if (!lines.length) { lines.push(spec.xlabel + ": " + s.x[k]); rule.setAttribute("x1", f.x(s.x[k])); rule.setAttribute("x2", f.x(s.x[k])); }
      lines.push(LB.el("span", {}, LB.el("span.swatch", {style: "background:" + colors[i]}), s.label + ": " + LB.num(s.y[k])));
    });
    rule.setAttribute("visibility", "visible");
    LB.showTip(fig, f.svg, px, (e.clientY - box.top) * vb.height / box.height, lines);
  });
  overlay.addEventListener("mouseleave", function () { fig.querySelector(".tip").hidden = true; rule.setAttribute("visibility", "hidden"); });
  return fig;
};

/* The [lo, hi] of the values (nulls left out), with a margin so no line runs on the frame. */
LB.extent = function (values) {
  var v = values.filter(function (y) { return y !== null; });
  if (!v.length) return [0, 1];
  var lo = Math.min.apply(null, v), hi = Math.max.apply(null, v), pad = (hi - lo) * 0.05 || Math.abs(lo) * 0.05 || 0.5;
  return [lo - pad, hi + pad];
};

/* A stream's training curves (extra.training_curves): the curves' title, its arm and seed,
   one small chart per series on its own scale, and the note. */
LB.trainingFigure = function (stream, colorOf) {
  var color = colorOf(stream.label);
  var charts = stream.series.map(function (s) {
    return LB.lineChart({title: s.label, xlabel: stream.xlabel, ylabel: "", series: [s], ydomain: LB.extent(s.y),
                         width: 320, height: 200, legend: false, integerX: true, colorOf: function () { return color; }});
  });
  return LB.el("figure.chart-box.training", {},
    LB.el("figcaption", {text: stream.title}),
    LB.el("p.small", {text: stream.label + " · seed " + stream.seed + " · " + stream.series.length + " series"}),
    LB.el("div.small-multiples", {}, charts),
    stream.note ? LB.el("p.note.training-note", {text: stream.note}) : null);
};

/* spec: {title, xlabel, points: [{label, x, y, front, detail}]}: the front as a step line. */
LB.paretoChart = function (spec) {
  var pts = spec.points.filter(function (p) { return p.x !== null && p.x !== undefined; });
  var colors = LB.colorsOf(spec, pts);
  var xmax = Math.max.apply(null, pts.map(function (p) { return p.x; }).concat([0]));
  var f = LB.frame({title: spec.title, xlabel: spec.xlabel, ylabel: "success rate"}, [0, xmax * 1.08 || 1], [0, 1]);
  var front = pts.filter(function (p) { return p.front; }).sort(function (a, b) { return a.x - b.x; });
  if (front.length) {  // the front as a staircase; shaded: what it dominates
    var xend = f.x(xmax * 1.08 || 1), d = "M" + f.x(front[0].x) + "," + f.y(0);
    front.forEach(function (p, k) {
      if (k) d += "L" + f.x(p.x) + "," + f.y(front[k - 1].y);
      d += "L" + f.x(p.x) + "," + f.y(p.y);
    });
    d += "L" + xend + "," + f.y(front[front.length - 1].y);
    f.svg.appendChild(LB.svg("path", {d: d + "L" + xend + "," + f.y(0) + "Z", class: "front-area"}));
    f.svg.appendChild(LB.svg("path", {d: d, class: "front"}));
  }
  var seen = {};  // points at the same place: their labels one under the other
  var layers = pts.map(function (p, i) {
    var g = LB.svg("g", {class: "point" + (p.front ? " on-front" : ""), "data-label": p.label});
    g.appendChild(LB.svg("circle", {cx: f.x(p.x), cy: f.y(p.y), r: p.front ? 6 : 4.5, fill: colors[i]}));
    var at = p.x + "," + p.y, k = seen[at] = (seen[at] || 0) + 1;
    var below = f.y(p.y) < f.m.t + 16 + 13 * (k - 1), left = f.x(p.x) > f.m.l + f.pw * 0.7;
    g.appendChild(LB.svg("text", {x: f.x(p.x) + (left ? -8 : 8), y: f.y(p.y) + (below ? 16 + 13 * (k - 1) : -7 - 13 * (k - 1)),
                                  "text-anchor": left ? "end" : "start", class: "point-label",
                                  style: "fill:" + colors[i]}, p.label));
    g.addEventListener("mouseenter", function () {
      LB.showTip(fig, f.svg, f.x(p.x), f.y(p.y), [p.label, spec.xlabel + ": " + LB.tickText(p.x),
        "success: " + LB.num(p.y), p.front ? "on the Pareto front" : "dominated"].concat(p.detail || []));
    });
    g.addEventListener("mouseleave", function () { fig.querySelector(".tip").hidden = true; });
    f.svg.appendChild(g);
    return g;
  });
  var fig = LB.figure(spec.title, f.svg, pts.map(function (p) { return p.label; }), layers, colors);
  return fig;
};

/* Viridis, approximately: t in [0, 1]. */
LB.viridis = function (t) {
  var stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  t = Math.max(0, Math.min(1, t)) * (stops.length - 1);
  var i = Math.min(stops.length - 2, Math.floor(t)), u = t - i;
  return "rgb(" + stops[i].map(function (c, k) { return Math.round(c + (stops[i + 1][k] - c) * u); }).join(",") + ")";
};

/* spec: {title, rows, columns, values[row][col], vmax, label} */
LB.heatmap = function (spec) {
  var cw = Math.max(60, Math.min(110, 640 / spec.columns.length)), ch = 20, left = 210, top = 70;
  var W = left + cw * spec.columns.length + 70, H = top + ch * spec.rows.length + 10;
  var svg = LB.svg("svg", {viewBox: "0 0 " + W + " " + H, class: "heatmap", role: "img",
                           "aria-label": spec.title, style: "max-width:" + W + "px"});
  spec.columns.forEach(function (c, j) {
    var x = left + cw * j + cw / 2;
    svg.appendChild(LB.svg("text", {x: x, y: top - 6, transform: "rotate(-30 " + x + " " + (top - 6) + ")",
                                    class: "col-label"}, c));
  });
  spec.rows.forEach(function (r, i) {
    svg.appendChild(LB.svg("text", {x: left - 6, y: top + ch * i + 14, "text-anchor": "end", class: "row-label"},
                           r.length > 28 ? r.slice(0, 27) + "…" : r));
    spec.columns.forEach(function (c, j) {
      var v = spec.values[i][j], t = v === null ? null : v / spec.vmax;
      var g = LB.svg("g");
      g.appendChild(LB.svg("rect", {x: left + cw * j, y: top + ch * i, width: cw - 1, height: ch - 1,
                                    fill: t === null ? "#eee" : LB.viridis(t)}));
      g.appendChild(LB.svg("text", {x: left + cw * j + cw / 2, y: top + ch * i + 14, "text-anchor": "middle",
                                    class: "cell-value" + (t !== null && t > 0.6 ? " dark" : "")},
                           v === null ? "—" : LB.num(v, spec.vmax > 1 ? 1 : 2)));
      g.appendChild(LB.svg("title", {}, r + " · " + c + ": " + (v === null ? "no episodes" : LB.num(v))));
      svg.appendChild(g);
    });
  });
  return LB.el("figure.chart-box", {}, LB.el("figcaption", {text: spec.title}), svg);
};
