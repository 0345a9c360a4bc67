// Parts of a page that follow background work refresh themselves while it is queued or
// running (a judge's runs, a judge run, a search system's fetches, a fetch, a system's
// history): each part polls its state URL and swaps in what it shows.
(function () {
  "use strict";
  if (!window.fetch) return;
  // Once a form is submitted the page is leaving: a swap now would drop the clicked form.
  var leaving = false;
  document.addEventListener("submit", function () { leaving = true; });

  function follow(part) {
    var url = part.dataset.stateUrl;

    function poll() {
      if (leaving) return;
      fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (data) {
          if (leaving) return;
          if (data) {
            part.innerHTML = data.html;
            if (data.active) part.dataset.active = "1"; else delete part.dataset.active;
          }
          if (part.dataset.active) window.setTimeout(poll, 2000);
        })
        .catch(function () { window.setTimeout(poll, 5000); });
    }

    if (part.dataset.active) window.setTimeout(poll, 2000);
  }

  [
    "judge-runs-table", "judge-run-body", "system-fetches-body", "system-fetch-body",
    "system-history-body",
  ].forEach(function (id) {
    var part = document.getElementById(id);
    if (part && part.dataset.stateUrl) follow(part);
  });
})();
