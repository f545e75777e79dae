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
