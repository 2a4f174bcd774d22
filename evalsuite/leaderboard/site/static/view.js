// Filters of `evalsuite view`: wrong, failed, task, metric range. This script never writes HTML: it only hides
// articles and sets a count's text, so text from a run can never become markup here.
(function () {
  "use strict";

  function value(id) { return document.getElementById(id); }

  function inRange(article, metric, low, high) {
    if (low === null && high === null) { return true; }
    var cells = article.querySelectorAll("section.run-cell[data-m-" + metric + "]");
    return Array.prototype.some.call(cells, function (cell) {
      var v = parseFloat(cell.getAttribute("data-m-" + metric));
      return (low === null || v >= low) && (high === null || v <= high);
    });
  }

  function number(input) {
    var v = parseFloat(input.value);
    return isNaN(v) ? null : v;
  }

  function apply() {
    var wrong = value("only-wrong").checked, failed = value("only-failed").checked, task = value("task").value;
    var metric = value("metric").value, low = number(value("metric-min")), high = number(value("metric-max"));
    var articles = document.querySelectorAll("article.question"), shown = 0;
    articles.forEach(function (article) {
      var keep = (!wrong || article.getAttribute("data-wrong") === "1")
        && (!failed || article.getAttribute("data-failed") === "1")
        && (!task || article.getAttribute("data-task") === task)
        && inRange(article, metric, low, high);
      article.hidden = !keep;
      if (keep) { shown += 1; }
    });
    value("shown").textContent = shown + " of " + articles.length + " shown";
  }

  document.addEventListener("DOMContentLoaded", function () {
    var form = value("filters");
    if (!form) { return; }
    form.addEventListener("input", apply);
    form.addEventListener("change", apply);
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    apply();
  });
}());
