// Sorting, filtering and metric switching for the leaderboard tables.
// This script never writes HTML: it only reorders rows, hides elements and sets attributes,
// so text from submissions can never become markup here.
(function () {
  "use strict";

  function cellValue(row, index, type) {
    var cell = row.cells[index];
    if (!cell) { return null; }
    var raw = cell.getAttribute("data-value");
    if (type === "number") {
      if (raw === null || raw === "") { return null; }
      var number = parseFloat(raw);
      return isNaN(number) ? null : number;
    }
    return (raw !== null ? raw : cell.textContent).toLowerCase();
  }

  function sortTable(table, header) {
    var index = header.cellIndex;
    var type = header.getAttribute("data-type") || "text";
    var current = header.getAttribute("aria-sort");
    // Numbers start high-to-low (best first); names start A-Z.
    var descending = current ? current === "ascending" : type === "number";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", descending ? "descending" : "ascending");
    Array.prototype.forEach.call(table.tBodies, function (body) {
      // each rank group is its own tbody, sorted on its own; its heading row stays first
      var rows = Array.prototype.slice.call(body.rows).filter(function (r) {
        return !r.classList.contains("empty") && !r.classList.contains("group-head");
      });
      rows.sort(function (a, b) {
        var x = cellValue(a, index, type), y = cellValue(b, index, type);
        if (x === null && y === null) { return 0; }
        if (x === null) { return 1; }   // empty cells always last
        if (y === null) { return -1; }
        var order = x < y ? -1 : (x > y ? 1 : 0);
        return descending ? -order : order;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  }

  function applyFilter(query) {
    var needle = query.trim().toLowerCase();
    document.querySelectorAll("table.board.sortable tbody tr").forEach(function (row) {
      if (row.classList.contains("empty") || row.classList.contains("group-head")) { return; }
      var text = row.cells[0] ? row.cells[0].textContent.toLowerCase() : "";
      var status = row.cells[1] ? row.cells[1].textContent.toLowerCase() : "";
      row.hidden = needle !== "" && text.indexOf(needle) === -1 && status.indexOf(needle) === -1;
    });
  }

  function showMetric(metric) {
    document.querySelectorAll(".metric-block").forEach(function (block) {
      block.hidden = block.getAttribute("data-metric") !== metric;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("table.sortable").forEach(function (table) {
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
        var button = th.querySelector("button.sort");
        if (button) { button.addEventListener("click", function () { sortTable(table, th); }); }
      });
    });
    var select = document.getElementById("metric-select");
    if (select) {
      showMetric(select.value);
      select.addEventListener("change", function () { showMetric(select.value); });
    }
    var filter = document.getElementById("row-filter");
    if (filter) { filter.addEventListener("input", function () { applyFilter(filter.value); }); }
    var ci = document.getElementById("show-ci");
    if (ci) {
      ci.addEventListener("change", function () { document.body.classList.toggle("show-ci", ci.checked); });
    }
    var form = document.getElementById("controls");
    if (form) { form.addEventListener("submit", function (event) { event.preventDefault(); }); }
    document.body.classList.add("js");
  });
}());
