// The collection dashboard: its charts, and a refresh of its numbers when the stamp moves.
(function () {
  "use strict";
  var live = document.getElementById("dashboard-live");
  if (!live) return;
  var charts = [];

  function draw() {
    charts.forEach(function (chart) { chart.destroy(); });
    charts = [];
    var source = document.getElementById("dashboard-chart-data");
    if (!source || !window.Chart) return;
    var data = JSON.parse(source.textContent);
    var days = document.getElementById("dashboard-days");
    var coverage = document.getElementById("dashboard-coverage");
    var hours = document.getElementById("dashboard-hours");
    if (hours) {
      charts.push(new window.Chart(hours, {
        type: "bar",
        data: { labels: data.hours, datasets: [
          { label: "judging", data: data.per_hour, backgroundColor: "#2957c4" },
          { label: "imported", data: data.imported_per_hour, backgroundColor: "#9aa5b8" }
        ] },
        options: { animation: false, scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } } }
      }));
    }
    if (days) {
      charts.push(new window.Chart(days, {
        type: "bar",
        data: { labels: data.days, datasets: [
          { label: "judging", data: data.per_day, backgroundColor: "#2957c4" },
          { label: "imported", data: data.imported_per_day, backgroundColor: "#9aa5b8" }
        ] },
        options: { animation: false, scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } } }
      }));
    }
    if (coverage) {
      charts.push(new window.Chart(coverage, {
        type: "bar",
        data: { labels: data.runs, datasets: [{ label: "judged@" + data.k, data: data.coverage, backgroundColor: "#8a5a00" }] },
        options: { animation: false, indexAxis: "y", scales: { x: { min: 0, max: 1 } } }
      }));
    }
  }

  var busy = false;
  function refresh() {
    return fetch(window.location.href, { credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("dashboard-live");
        if (fresh) {
          live.innerHTML = fresh.innerHTML;
          live.dataset.stamp = fresh.dataset.stamp;
          draw();
        }
      });
  }
  function poll() {
    if (busy || document.hidden) return;
    busy = true;
    fetch(live.dataset.stateUrl, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
      .then(function (state) { if (state.stamp !== live.dataset.stamp) return refresh(); })
      .catch(function () { /* offline or logged out: try again at the next tick */ })
      .then(function () { busy = false; });
  }
  draw();
  window.setInterval(poll, parseInt(live.dataset.pollMs, 10) || 5000);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) poll(); });
})();
