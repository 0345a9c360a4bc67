// The judge page: the runs table refreshes itself while a run is queued or running.
(function () {
  "use strict";
  var table = document.getElementById("judge-runs-table");
  if (!table || !window.fetch) return;
  var url = table.dataset.stateUrl;
  // Once a form is submitted the page is leaving: a swap now would drop the click's form.
  var leaving = false;
  document.addEventListener("submit", function () { leaving = true; });

  function poll() {
    if (leaving) return;
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        if (leaving) return;
        if (data) {
          table.innerHTML = data.html;
          if (data.active) table.dataset.active = "1"; else delete table.dataset.active;
        }
        if (table.dataset.active) window.setTimeout(poll, 2000);
      })
      .catch(function () { window.setTimeout(poll, 5000); });
  }

  if (table.dataset.active) window.setTimeout(poll, 2000);
})();
