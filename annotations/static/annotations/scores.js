// Score pages: sortable tables, the run chart, and the leaderboard's self-refresh.
(function () {
  "use strict";

  // --- sortable tables: click a header with data-sort="num" or "text" ---------------------
  function cellValue(row, index, kind) {
    var cell = row.cells[index];
    if (!cell) return kind === "num" ? -Infinity : "";
    var raw = cell.dataset.value !== undefined ? cell.dataset.value : cell.textContent.trim();
    if (kind === "num") {
      var number = parseFloat(raw);
      return isNaN(number) ? -Infinity : number;
    }
    return raw.toLowerCase();
  }

  function sortBy(table, header) {
    var index = Array.prototype.indexOf.call(header.parentNode.children, header);
    var kind = header.dataset.sort;
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th[aria-sort]").forEach(function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index, kind), y = cellValue(b, index, kind);
      var order = x < y ? -1 : x > y ? 1 : 0;
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("th[data-sort]").forEach(function (header) {
      header.tabIndex = 0;
      header.title = "Sort";
      header.addEventListener("click", function () { sortBy(table, header); });
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sortBy(table, header); }
      });
    });
  });

  // --- the run chart (Chart.js, served from this site) -----------------------------------
  var chartData = document.getElementById("run-chart-data");
  var canvas = document.getElementById("run-chart");
  if (chartData && canvas && window.Chart) {
    var data = JSON.parse(chartData.textContent);
    new window.Chart(canvas, {
      data: {
        labels: data.labels,
        datasets: [
          { type: "bar", label: "nDCG@" + data.k, data: data.ndcg, backgroundColor: "#2957c4" },
          { type: "line", label: "judged@" + data.k, data: data.judged, borderColor: "#8a5a00",
            backgroundColor: "#8a5a00", pointRadius: 2, borderWidth: 1.5 }
        ]
      },
      options: {
        animation: false,
        scales: { y: { min: 0, max: 1 } },
        plugins: { tooltip: { callbacks: { label: function (item) {
          return item.dataset.label + ": " + item.parsed.y.toFixed(4);
        } } } }
      }
    });
  }

  // --- leaderboard: pick two runs to compare (the form works without this too) -----------
  var pickForm = document.getElementById("compare-pick");
  var pickedRuns = function () {
    return Array.prototype.map.call(document.querySelectorAll("input.compare-pick:checked"),
      function (box) { return box.value; });
  };
  var updatePick = function () {
    if (!pickForm) return;
    var count = pickedRuns().length;
    document.getElementById("compare-button").disabled = count !== 2;
    document.getElementById("compare-hint").textContent =
      count === 2 ? "Two runs picked." : "Tick two runs in the table (" + count + " picked).";
  };
  if (pickForm) {
    document.addEventListener("change", function (event) {
      if (event.target.classList && event.target.classList.contains("compare-pick")) updatePick();
    });
    updatePick();
  }

  // --- leaderboard: poll a small state document, reload the table when it changes --------
  var live = document.getElementById("leaderboard-live");
  if (live) {
    var delay = parseInt(live.dataset.pollMs, 10) || 3000;
    var busy = false;
    var refresh = function () {
      return fetch(window.location.href, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
        .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
        .then(function (html) {
          var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("leaderboard-live");
          if (fresh) {
            var picked = pickedRuns();
            // keep what the reader is typing into the run search, and where the focus was
            var search = document.getElementById("leaderboard-q");
            var typed = search ? search.value : null;
            var focused = live.contains(document.activeElement) ? document.activeElement.id : "";
            live.innerHTML = fresh.innerHTML;
            live.dataset.stamp = fresh.dataset.stamp;
            live.querySelectorAll("input.compare-pick").forEach(function (box) {
              box.checked = picked.indexOf(box.value) !== -1;  // keep the reader's picks
            });
            var again = document.getElementById("leaderboard-q");
            if (again && typed !== null) again.value = typed;
            var back = focused && document.getElementById(focused);
            if (back) back.focus();
            updatePick();
          }
        });
    };
    var poll = function () {
      if (busy || document.hidden) return;
      busy = true;
      fetch(live.dataset.stateUrl, { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
        .then(function (state) { if ((state.table || state.stamp) !== live.dataset.stamp) return refresh(); })
        .catch(function () { /* offline or logged out: try again at the next tick */ })
        .then(function () { busy = false; });
    };
    window.setInterval(poll, delay);
    document.addEventListener("visibilitychange", function () { if (!document.hidden) poll(); });
  }
})();
