// The compare page's chart: per-query differences A - B, sorted, from a json_script element.
(function () {
  "use strict";
  var source = document.getElementById("compare-chart-data");
  var canvas = document.getElementById("compare-chart");
  if (!source || !canvas || !window.Chart) return;
  var data = JSON.parse(source.textContent);
  new window.Chart(canvas, {
    type: "bar",
    data: {
      labels: data.labels,
      datasets: [{
        label: data.a + " − " + data.b + " (" + (data.measure || "nDCG@" + data.k) + ")",
        data: data.differences,
        backgroundColor: data.differences.map(function (value) {
          return value > 0 ? "#2957c4" : value < 0 ? "#b3541e" : "#5b6475";
        })
      }]
    },
    options: {
      animation: false,
      scales: { y: { suggestedMin: -1, suggestedMax: 1 } },
      plugins: { tooltip: { callbacks: { label: function (item) {
        return item.label + ": " + item.parsed.y.toFixed(4);
      } } } }
    }
  });
  canvas.dataset.ready = "true";
})();
