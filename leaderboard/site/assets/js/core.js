/* lifebench results site: shared helpers (DOM building, routing, loading data files).
   Every page script adds to the one global namespace, LB. No dependencies, no network:
   data comes as scripts (data/*.js) because file:// pages may not fetch JSON. */
"use strict";
var LB = window.LB = window.LB || {};

/* el("tag#id.class", {attr: value, onclick: fn}, child, ...): a DOM element. */
LB.el = function (spec, attrs) {
  var m = /^([a-z0-9]+)(?:#([\w-]+))?((?:\.[\w-]+)*)$/i.exec(spec);
  var node = document.createElement(m[1]);
  if (m[2]) node.id = m[2];
  if (m[3]) node.className = m[3].slice(1).split(".").join(" ");
  var a = attrs || {};
  Object.keys(a).forEach(function (k) {
    var v = a[k];
    if (v === undefined || v === null || v === false) return;
    if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), v);
    else if (k === "text") node.textContent = v;
    else if (k === "dataset") Object.keys(v).forEach(function (d) { node.dataset[d] = v[d]; });
    else node.setAttribute(k, v === true ? "" : v);
  });
  for (var i = 2; i < arguments.length; i++) LB.append(node, arguments[i]);
  return node;
};

LB.append = function (node, child) {
  if (child === undefined || child === null || child === false) return node;
  if (Array.isArray(child)) { child.forEach(function (c) { LB.append(node, c); }); return node; }
  node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
};

LB.clear = function (node) { while (node.firstChild) node.removeChild(node.firstChild); return node; };

/* A number for display: fixed digits, "—" for none. */
LB.num = function (v, digits) {
  if (v === null || v === undefined || (typeof v === "number" && !isFinite(v))) return "—";
  return typeof v === "number" ? v.toFixed(digits === undefined ? 3 : digits) : String(v);
};

LB.plural = function (n, word) { return n.toLocaleString("en-US") + " " + word + (n === 1 ? "" : "s"); };

/* Routes are "#page/arg/arg?key=value&...": the page, its arguments and its parameters. */
LB.parseRoute = function (hash) {
  var text = (hash || "").replace(/^#/, ""), q = text.indexOf("?");
  var path = q < 0 ? text : text.slice(0, q), query = q < 0 ? "" : text.slice(q + 1);
  var parts = path.split("/").filter(Boolean).map(decodeURIComponent), params = {};
  query.split("&").filter(Boolean).forEach(function (pair) {
    var eq = pair.indexOf("=");
    var k = decodeURIComponent(eq < 0 ? pair : pair.slice(0, eq));
    params[k] = eq < 0 ? "" : decodeURIComponent(pair.slice(eq + 1));
  });
  return {page: parts[0] || "leaderboard", args: parts.slice(1), params: params};
};

LB.href = function (page, args, params) {
  var path = [page].concat((args || []).map(function (a) { return encodeURIComponent(a); })).join("/");
  var keys = Object.keys(params || {}).filter(function (k) {
    return params[k] !== "" && params[k] !== null && params[k] !== undefined;
  });
  return "#" + path + (keys.length ? "?" + keys.map(function (k) {
    return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]);
  }).join("&") : "");
};

/* Load a data script once; resolves when it has run. */
LB.scripts = {};
LB.loadScript = function (src) {
  if (!LB.scripts[src]) {
    LB.scripts[src] = new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src;
      s.onload = function () { resolve(); };
      s.onerror = function () { delete LB.scripts[src]; reject(new Error("cannot load " + src)); };
      document.head.appendChild(s);
    });
  }
  return LB.scripts[src];
};

/* The episode index (data/episodes.js calls LB.episodesLoaded). */
LB.episodes = null;
LB.episodesLoaded = function (index) { LB.episodes = index; };
LB.loadEpisodes = function () {
  return LB.loadScript("data/episodes.js").then(function () { return LB.episodes; });
};

/* A stream's records and trajectories (data/streams/N.js calls LB.streamLoaded). */
LB.streams = {};
LB.streamLoaded = function (payload) { LB.streams[payload.number] = payload; };
LB.loadStream = function (number) {
  return LB.loadScript("data/streams/" + number + ".js").then(function () { return LB.streams[number]; });
};

LB.section = function (title, id) {
  return LB.el("section.card", {id: id}, title ? LB.el("h2", {text: title}) : null);
};

LB.note = function (text) { return LB.el("p.muted", {text: text}); };

/* A key for sorting table text: numbers (the first one in the cell) as numbers, "—" last. */
LB.sortKey = function (text) {
  var t = (text || "").trim();
  if (t === "" || t === "—") return [2, 0];
  var m = /^\[?\s*(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)/i.exec(t);
  if (m) return [0, parseFloat(m[1])];
  if (t === "constant difference") return [0, Infinity];
  return [1, t.toLowerCase()];
};

LB.compareKeys = function (a, b) {
  if (a[0] !== b[0]) return a[0] - b[0];
  return a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
};
