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
      // One bar of 16 px per run, every run labelled (names cut to 32 characters, the full
      // name in the tooltip): at 100+ runs the chart grows and scrolls inside its box.
      var holder = coverage.parentNode;
      holder.style.height = Math.max(160, 16 * data.runs.length + 48) + "px";
      charts.push(new window.Chart(coverage, {
        type: "bar",
        data: { labels: data.runs, datasets: [{ label: "judged@" + data.k, data: data.coverage, backgroundColor: "#8a5a00" }] },
        options: {
          animation: false, indexAxis: "y", maintainAspectRatio: false,
          scales: {
            x: { min: 0, max: 1, position: "top" },
            y: { ticks: { autoSkip: false, font: { size: 11 }, callback: function (value) {
              var name = this.getLabelForValue(value);
              return name.length > 32 ? name.slice(0, 31) + "\u2026" : name;
            } } }
          },
          plugins: { legend: { display: false } }
        }
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
