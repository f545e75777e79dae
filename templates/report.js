(function () {
  "use strict";
  function cellValue(row, idx) {
    var cell = row.cells[idx];
    if (!cell) { return ""; }
    var v = cell.getAttribute("data-v");
    return v === null ? cell.textContent.trim().toLowerCase() : v;
  }
  function sortBy(table, th, idx) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var dir = th.getAttribute("aria-sort") === "descending" ? "ascending" : "descending";
    var numeric = th.classList.contains("num");
    rows.sort(function (a, b) {
      var x = cellValue(a, idx), y = cellValue(b, idx);
      var c = numeric ? (parseFloat(x) || 0) - (parseFloat(y) || 0) : (x < y ? -1 : x > y ? 1 : 0);
      return dir === "ascending" ? c : -c;
    });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      if (h.hasAttribute("aria-sort")) { h.setAttribute("aria-sort", "none"); }
    });
    th.setAttribute("aria-sort", dir);
    rows.forEach(function (r) { body.appendChild(r); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, idx) {
      th.setAttribute("aria-sort", "none");
      th.tabIndex = 0;
      th.addEventListener("click", function () { sortBy(table, th, idx); });
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sortBy(table, th, idx); } });
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("input.filter"), function (input) {
    var table = document.getElementById(input.getAttribute("data-table"));
    input.hidden = false;
    input.addEventListener("input", function () {
      var q = input.value.toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
        r.hidden = q !== "" && r.textContent.toLowerCase().indexOf(q) < 0;
      });
    });
  });
})();
