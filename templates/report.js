// Progressive enhancement only: with scripts off every table is complete and readable in the
// order the report chose. This adds sorting (a button in each header, aria-sort kept right),
// row filters, and un-hides a row that a filter hid when a link points at it.
(function () {
  "use strict";
  var each = function (list, fn) { Array.prototype.forEach.call(list, fn); };

  function cellValue(row, idx) {
    var cell = row.cells[idx];
    if (!cell) { return ""; }
    var v = cell.getAttribute("data-v");
    return v === null ? cell.textContent.trim().toLowerCase() : v;
  }

  function sortBy(table, th, idx) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var numeric = th.classList.contains("num");
    var current = th.getAttribute("aria-sort");
    var dir = current === "descending" ? "ascending"
      : current === "ascending" ? "descending" : (numeric ? "descending" : "ascending");
    rows.forEach(function (r, i) { r.tcOrder = i; });
    rows.sort(function (a, b) {
      var x = cellValue(a, idx), y = cellValue(b, idx);
      var c = numeric ? (parseFloat(x) || 0) - (parseFloat(y) || 0) : (x < y ? -1 : x > y ? 1 : 0);
      return (dir === "ascending" ? c : -c) || a.tcOrder - b.tcOrder;
    });
    each(table.tHead.rows[0].cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir);
    rows.forEach(function (r) { body.appendChild(r); });
  }

  each(document.querySelectorAll("table.sortable"), function (table) {
    each(table.tHead.rows[0].cells, function (th, idx) {
      var button = document.createElement("button");
      button.type = "button";
      while (th.firstChild) { button.appendChild(th.firstChild); }
      th.appendChild(button);
      button.addEventListener("click", function () { sortBy(table, th, idx); });
    });
  });

  function applyFilter(input, table, count) {
    var q = input.value.trim().toLowerCase();
    var shown = 0, rows = table.tBodies[0].rows;
    each(rows, function (r) {
      r.hidden = q !== "" && r.textContent.toLowerCase().indexOf(q) < 0;
      if (!r.hidden) { shown += 1; }
    });
    count.textContent = q === "" ? "" : shown + " of " + rows.length + " rows";
  }

  each(document.querySelectorAll("input.filter"), function (input) {
    var table = document.getElementById(input.getAttribute("data-table"));
    var count = input.parentNode.querySelector("output.count");
    if (!table || !count) { return; }
    input.parentNode.hidden = false;
    input.addEventListener("input", function () { applyFilter(input, table, count); });
  });

  function reveal() {
    var id = location.hash.slice(1);
    var target = id && document.getElementById(id);
    if (!target) {
      try { target = document.getElementById(decodeURIComponent(id)); } catch (e) { target = null; }
    }
    if (!target || !target.hidden) { return; }
    each(document.querySelectorAll("input.filter"), function (input) {
      var table = document.getElementById(input.getAttribute("data-table"));
      if (table && table.contains(target)) {
        input.value = "";
        applyFilter(input, table, input.parentNode.querySelector("output.count"));
      }
    });
    target.scrollIntoView();
  }
  window.addEventListener("hashchange", reveal);
  // Following the link to the current hash fires no hashchange: reveal after any in-page click.
  document.addEventListener("click", function (e) {
    var a = e.target.closest && e.target.closest('a[href^="#"]');
    if (a) { setTimeout(reveal, 0); }
  });
})();

// The step-time timeline: zoom (wheel, buttons, + / - keys) and pan (drag, arrow keys) by moving
// the SVG viewBox over coordinates the report precomputed, and a hover card naming the kernel,
// its duration, its matrix-unit verdict and rule (or a gap's cause). Without scripts the timeline
// is still drawn in full, only static.
(function () {
  "use strict";
  var svg = document.getElementById("tl-lanes");
  var root = document.getElementById("tl");
  if (!svg || !root) { return; }
  var names = JSON.parse(svg.getAttribute("data-names") || "[]");
  var unit = svg.getAttribute("data-unit"); // what the run calls its matrix unit
  var tip = root.querySelector(".tl-tip");
  var tools = root.querySelector(".tl-tools");
  var range = root.querySelector(".tl-range");
  var W = parseFloat(svg.getAttribute("data-w"));
  var span = parseFloat(svg.getAttribute("data-span"));
  var H = svg.viewBox.baseVal.height;
  var x0 = 0, w = W, drag = null;

  function dur(ns) {
    var a = Math.abs(ns);
    if (a >= 1e9) { return (ns / 1e9).toFixed(3) + " s"; }
    if (a >= 1e6) { return (ns / 1e6).toFixed(2) + " ms"; }
    if (a >= 1e3) { return (ns / 1e3).toFixed(1) + " µs"; }
    return Math.round(ns) + " ns";
  }
  function name(i) { return i >= 0 && i < names.length ? names[i] : null; }
  function apply() {
    svg.setAttribute("viewBox", x0 + " 0 " + w + " " + H);
    if (range) { range.textContent = dur(x0 / W * span) + " – " + dur((x0 + w) / W * span) + " of " + dur(span); }
  }
  function zoom(f, cx) {
    var nw = Math.min(W, Math.max(W / 20000, w * f));
    x0 = Math.max(0, Math.min(W - nw, cx - (cx - x0) * nw / w));
    w = nw;
    apply();
  }
  function pan(dx) { x0 = Math.max(0, Math.min(W - w, x0 + dx)); apply(); }
  function at(clientX) {
    var r = svg.getBoundingClientRect();
    return x0 + (clientX - r.left) / r.width * w;
  }

  svg.addEventListener("wheel", function (e) {
    e.preventDefault();
    zoom(e.deltaY < 0 ? 0.8 : 1.25, at(e.clientX));
  }, { passive: false });
  svg.addEventListener("mousedown", function (e) { drag = { x: e.clientX, x0: x0 }; });
  window.addEventListener("mouseup", function () { drag = null; });
  svg.addEventListener("keydown", function (e) {
    var mid = x0 + w / 2;
    if (e.key === "+" || e.key === "=") { zoom(0.5, mid); }
    else if (e.key === "-") { zoom(2, mid); }
    else if (e.key === "ArrowLeft") { pan(-w / 10); }
    else if (e.key === "ArrowRight") { pan(w / 10); }
    else if (e.key === "0") { x0 = 0; w = W; apply(); }
    else { return; }
    e.preventDefault();
  });
  if (tools) {
    tools.hidden = false;
    Array.prototype.forEach.call(tools.querySelectorAll("button"), function (b) {
      b.addEventListener("click", function () {
        var z = b.getAttribute("data-z"), mid = x0 + w / 2;
        if (z === "in") { zoom(0.5, mid); } else if (z === "out") { zoom(2, mid); } else { x0 = 0; w = W; apply(); }
      });
    });
  }

  function describe(t) {
    var cls = t.getAttribute("class") || "";
    var d = dur(parseFloat(t.getAttribute("data-d")));
    var at0 = "at +" + dur(parseFloat(t.getAttribute("data-s")));
    var n = name(parseInt(t.getAttribute("data-k"), 10));
    var r = name(parseInt(t.getAttribute("data-r") || "-1", 10));
    var m = parseInt(t.getAttribute("data-m") || "1", 10);
    if (cls.indexOf("t-idle") === 0) {
      return "GPU idle, host-bound: " + d + " " + at0 + "\n" + (r || "") + (n ? ": " + n : "");
    }
    if (cls.indexOf("t-hostr") === 0) {
      return (m > 1 ? m + " host ranges/ops merged; the longest: " : "Host: ") + (n || "?") +
        "\n" + (m > 1 ? dur(parseFloat(t.getAttribute("data-t"))) + " in all " : d + " ") + at0;
    }
    var v = { y: "yes", n: "no", u: "unknown" }[t.getAttribute("data-v")] || "";
    var kind = cls.indexOf("t-comm") === 0 ? "collective · " : cls.indexOf("t-mem") === 0 ? "memory · " : "";
    if (m > 1) {
      return m + " events merged into this pixel (" + dur(parseFloat(t.getAttribute("data-t"))) +
        " of work) " + at0 + "; the longest:\n" + (n || "?") + "\n" + kind.replace(" · ", "") +
        (v ? (kind ? ", " : "") + unit + ": " + v + (r ? " (rule: " + r + ")" : "") : "");
    }
    return (n || "?") + "\n" + kind + d + " " + at0 +
      (v ? "\n" + unit + ": " + v + (r ? " (rule: " + r + ")" : "") : "");
  }
  svg.addEventListener("mousemove", function (e) {
    if (drag) {
      var r = svg.getBoundingClientRect();
      x0 = Math.max(0, Math.min(W - w, drag.x0 - (e.clientX - drag.x) / r.width * w));
      apply();
    }
    var t = e.target;
    if (!t.hasAttribute || !t.hasAttribute("data-d")) { tip.hidden = true; return; }
    tip.textContent = describe(t);
    tip.hidden = false;
    var box = root.getBoundingClientRect();
    var left = e.clientX - box.left + 14;
    tip.style.left = Math.min(left, Math.max(0, box.width - 480)) + "px";
    tip.style.top = (e.clientY - box.top + 16) + "px";
  });
  svg.addEventListener("mouseleave", function () { tip.hidden = true; });
  apply();
})();
