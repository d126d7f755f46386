/* Routing and start-up: each "#page/..." renders one page into #view. The leaderboard
   shows at once; the episode index loads right after, without blocking it. The root
   element's data-first-render-ms and data-ready-ms say when (performance.now()). */
"use strict";

LB.data = window.LB_DATA;
LB.keys = null;

LB.render = function () {
  var route = LB.parseRoute(location.hash);
  var page = LB.pages[route.page] ? route.page : "leaderboard";
  var section = {episode: "episodes", pair: "episodes", verification: "runs"}[page] || page;
  document.querySelectorAll("#nav a").forEach(function (a) {
    a.classList.toggle("active", a.dataset.page === section);
  });
  var view = LB.clear(document.getElementById("view"));
  view.dataset.page = page;
  LB.keys = null;
  try {
    LB.pages[page](view, route);
  } catch (err) {
    view.appendChild(LB.el("p.failure", {text: "This page failed to draw: " + err}));
    throw err;
  }
};

LB.boot = function () {
  var root = document.documentElement;
  if (!LB.data) {
    document.getElementById("view").textContent = "data/summary.js is missing: write the site with `lifebench view DIR`.";
    return;
  }
  var meta = LB.data.meta;
  document.getElementById("meta").textContent = LB.plural(meta.episodes, "episode") + " · " +
    LB.plural(meta.streams, "stream") + " · " + meta.directories.join(", ");
  window.addEventListener("hashchange", function () { LB.render(); window.scrollTo(0, 0); });
  document.addEventListener("keydown", function (e) {
    if (LB.keys && !/INPUT|SELECT|TEXTAREA/.test(e.target.tagName)) LB.keys(e);
  });
  LB.render();
  root.dataset.firstRenderMs = performance.now().toFixed(1);
  LB.loadEpisodes().then(function () {
    root.dataset.readyMs = performance.now().toFixed(1);
  }, function (err) {
    document.getElementById("meta").textContent += " · " + err.message;
  });
};

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", LB.boot);
else LB.boot();
