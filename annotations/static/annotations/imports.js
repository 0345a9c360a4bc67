// The import page: drag and drop of run files, and the job list's self-refresh.
(function () {
  "use strict";

  // --- drag and drop onto the run files' input (the input alone works without this) ------
  document.querySelectorAll("[data-drop-zone]").forEach(function (zone) {
    var input = zone.querySelector("input[type=file]");
    var list = zone.querySelector(".drop-list");
    var hint = zone.querySelector(".drop-hint");
    if (!input) return;
    if (hint) hint.hidden = false;

    function show() {
      var names = Array.prototype.map.call(input.files, function (file) { return file.name; });
      if (list) list.textContent = names.length ? names.length + " file" + (names.length === 1 ? "" : "s") + ": " + names.join(", ") : "";
    }

    ["dragenter", "dragover"].forEach(function (type) {
      zone.addEventListener(type, function (event) {
        event.preventDefault();
        zone.classList.add("dragging");
      });
    });
    ["dragleave", "drop"].forEach(function (type) {
      zone.addEventListener(type, function () { zone.classList.remove("dragging"); });
    });
    zone.addEventListener("drop", function (event) {
      event.preventDefault();
      if (event.dataTransfer && event.dataTransfer.files.length) {
        input.files = event.dataTransfer.files;
        show();
      }
    });
    input.addEventListener("change", show);
  });

  // --- the job tables: poll while a job is queued or running -----------------------------
  var list = document.getElementById("import-jobs");
  if (!list || !window.fetch) return;
  var url = list.dataset.stateUrl;
  var batch = document.getElementById("import-batch");
  var ACTIVE = { queued: true, running: true };
  // Once a form is submitted the page is leaving: a reload now would cancel the upload.
  var leaving = false;
  document.querySelectorAll("form").forEach(function (form) {
    form.addEventListener("submit", function () { leaving = true; });
  });

  function activeRows() {
    var rows = list.querySelectorAll("tr[data-state=queued], tr[data-state=running]").length;
    return rows + (batch && batch.dataset.active !== "0" ? 1 : 0);
  }

  function update(job) {
    var row = list.querySelector('tr[data-job="' + job.id + '"]');
    if (!row) return false;
    row.dataset.state = job.state;
    var state = row.querySelector(".job-state");
    state.textContent = job.state;
    state.className = "job-state state-" + job.state;
    var bar = row.querySelector("progress");
    bar.max = Math.max(job.max, 1);
    if (job.value === null) bar.removeAttribute("value"); else bar.value = job.value;
    row.querySelector(".job-stage").textContent = job.progress;
    var result = row.querySelector(".job-result");
    result.textContent = "";
    if (job.error) {
      var error = document.createElement("span");
      error.className = "error";
      error.textContent = job.error;
      result.appendChild(error);
    } else {
      result.textContent = job.summary;
    }
    var actions = row.querySelector(".job-actions");
    // Retry and Dismiss, rendered with the row, show once the job failed with its upload kept.
    if (actions) actions.hidden = !job.retryable;
    return true;
  }

  // The first group's heading says what its jobs are now: in progress, failed, or done.
  function nameWaiting() {
    var heading = document.getElementById("jobs-waiting-heading");
    var table = document.getElementById("import-jobs-waiting");
    if (!heading || !table) return;
    var active = table.querySelectorAll("tr[data-state=queued], tr[data-state=running]").length;
    var failed = table.querySelectorAll("tr[data-state=failed]").length;
    heading.textContent = active && failed ? "In progress or failed" : active ? "In progress" :
      failed ? "Failed" : "Finished just now";
  }

  function poll() {
    if (leaving) return;
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        if (data) {
          var unknown = false;
          data.jobs.forEach(function (job) { if (!update(job) && ACTIVE[job.state]) unknown = true; });
          nameWaiting();
          if (batch && data.batch) {
            batch.querySelector(".batch-line").textContent = data.batch.summary;
            batch.dataset.active = String(data.batch.active);
          }
          if (leaving) return;
          if (unknown) { window.location.reload(); return; }
        }
        if (activeRows()) window.setTimeout(poll, 1000);
      })
      .catch(function () { window.setTimeout(poll, 5000); });
  }

  nameWaiting();
  if (activeRows()) window.setTimeout(poll, 1000);
})();
