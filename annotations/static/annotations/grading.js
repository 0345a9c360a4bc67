// The grading page: keyboard shortcuts, and grading in the background. Without this script
// the page is a plain form that saves a grade and loads the next pair.
//
// In the background a grade is queued and sent with the pair's own item id and idempotency
// key (a retry is applied once), while the next pair, already fetched and held ready
// (grading_prefetch.js), is swapped in and its URL pushed. Grades are sent in order, at most
// two at a time (each is a different pair: a fast assessor's grade does not wait for the
// previous one's answer on a busy server); a grade is shown as saved only when the server
// answered that it committed it. A failed send is shown and retried with the same key; a
// grade the server refuses is shown with a link to its pair. The time each pair was visible
// before its grade (dwell) goes with the grade.
(function () {
  "use strict";
  var slot = document.getElementById("pair-slot");
  if (!slot || !document.getElementById("grade-form")) {
    return;
  }
  var background = typeof window.fetch === "function" && !!window.history.pushState &&
    typeof window.URLSearchParams === "function";
  var statusBox = document.getElementById("save-status");
  var errorBox = document.getElementById("save-error");
  var errorText = document.getElementById("save-error-text");
  var retryButton = document.getElementById("save-retry");

  var DWELL_CAP_MS = 30 * 60 * 1000;
  var BUSY_MS = 300; // a save answered slower than this: the server is busy
  var PAUSE_MS = 800;

  function byId(id) {
    return document.getElementById(id);
  }
  function pairBox() {
    return slot.querySelector(".pair");
  }
  function emit(name, detail) {
    document.dispatchEvent(new CustomEvent(name, { detail: detail }));
  }

  // --- dwell: the time the pair was shown while the page was visible ---------------------
  var dwellMs = 0;
  var visibleSince = document.hidden ? null : performance.now();
  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      if (visibleSince !== null) {
        dwellMs += performance.now() - visibleSince;
      }
      visibleSince = null;
    } else if (visibleSince === null) {
      visibleSince = performance.now();
    }
  });
  function dwellNow() {
    var total = dwellMs + (visibleSince === null ? 0 : performance.now() - visibleSince);
    return Math.min(Math.round(total), DWELL_CAP_MS);
  }
  function dwellReset() {
    dwellMs = 0;
    visibleSince = document.hidden ? null : performance.now();
  }

  // --- status ------------------------------------------------------------------------------
  function showStatus(text) {
    statusBox.textContent = text;
    statusBox.hidden = text === "";
  }
  function showError(text, link) {
    errorText.textContent = text;
    if (link) {
      var a = document.createElement("a");
      a.href = link;
      a.textContent = "Open that pair";
      errorText.appendChild(document.createTextNode(" "));
      errorText.appendChild(a);
    }
    errorBox.hidden = false;
  }
  function hideError() {
    errorBox.hidden = true;
    errorText.textContent = "";
  }

  // --- the read position of a long document ------------------------------------------------
  function showPosition() {
    var text = byId("document-text");
    var position = byId("read-position");
    if (!text || !position) {
      return;
    }
    var scrollable = text.scrollHeight - text.clientHeight;
    if (scrollable <= 0) {
      position.hidden = true;
      return;
    }
    var read = Math.round(100 * (text.scrollTop + text.clientHeight) / text.scrollHeight);
    position.hidden = false;
    position.textContent = "Read " + read + "% of the document" +
      (read < 100 ? " (Space: on)" : "");
  }
  function watchPosition() {
    var text = byId("document-text");
    if (text) {
      text.addEventListener("scroll", showPosition, { passive: true });
      showPosition();
    }
  }
  watchPosition();

  // --- the saves: in order, at most MAX_IN_FLIGHT at a time, retried until answered ------
  var MAX_IN_FLIGHT = 2;
  var queue = []; // in the order graded; each save is of a different pair
  var retryTimer = null;
  var drainedCallbacks = [];
  var latestProgress = null; // { html, at }
  var sequence = 0; // each save's place in the order graded
  var progressSeq = 0; // the latest save whose progress is shown

  function labelOf(data, box) {
    var title = byId("document-title");
    var query = byId("query-title");
    var pair = (query ? query.querySelector("small").textContent : "") + " / " +
      (title ? title.querySelector("small").textContent : "");
    var what = data.get("action") === "skip" ? "skip" : "grade " + data.get("grade");
    return { pair: pair, what: what, url: box.getAttribute("data-url") };
  }

  function pendingText() {
    return queue.length === 1 ? "Saving " + queue[0].label.what + " for " +
      queue[0].label.pair + "…" : "Saving " + queue.length + " grades…";
  }

  function whenDrained(callback) {
    if (queue.length === 0) {
      callback();
    } else {
      drainedCallbacks.push(callback);
    }
  }

  function drained() {
    var callbacks = drainedCallbacks;
    drainedCallbacks = [];
    callbacks.forEach(function (callback) { callback(); });
  }

  function retryLater(save, why) {
    save.attempts += 1;
    var seconds = Math.min(15, Math.pow(2, save.attempts - 1));
    showError("Not saved yet: " + save.label.what + " for " + save.label.pair + " (" + why +
      "); retrying in " + seconds + " s. Your grades are kept on this page.");
    retryButton.hidden = false;
    if (retryTimer !== null) {
      window.clearTimeout(retryTimer);
    }
    retryTimer = window.setTimeout(function () {
      retryTimer = null;
      pump();
    }, seconds * 1000);
  }

  function settle(save) {
    var at = queue.indexOf(save);
    if (at >= 0) {
      queue.splice(at, 1);
    }
  }

  // Send what the queue holds, oldest first, up to MAX_IN_FLIGHT at once; none while a
  // failed save waits for its retry (its turn comes first).
  function pump() {
    if (retryTimer !== null) {
      return;
    }
    if (queue.length === 0) {
      drained();
      return;
    }
    var flying = queue.filter(function (save) { return save.inflight; }).length;
    for (var i = 0; i < queue.length && flying < MAX_IN_FLIGHT; i += 1) {
      if (!queue[i].inflight) {
        send(queue[i]);
        flying += 1;
      }
    }
  }

  var lastSaveMs = 0; // the round trip of the last save answered

  // A busy server: the next pairs are fetched at once, not after the saves on their way.
  function busy() {
    return lastSaveMs > BUSY_MS;
  }

  function send(save) {
    save.inflight = true;
    var started = performance.now();
    showStatus(pendingText());
    fetch(save.url, {
      method: "POST",
      body: save.body,
      credentials: "same-origin",
      headers: {
        "Accept": "application/json",
        "Content-Type": "application/x-www-form-urlencoded",
        "X-CSRFToken": save.csrf,
        "Idempotency-Key": save.key
      }
    }).then(function (response) {
      return response.json().catch(function () { return null; }).then(function (data) {
        return { response: response, data: data };
      });
    }).then(function (answer) {
      save.inflight = false;
      var response = answer.response;
      var data = answer.data;
      var isJson = (response.headers.get("Content-Type") || "").indexOf("application/json") === 0;
      if (response.ok && isJson && data && data.saved) {
        lastSaveMs = performance.now() - started;
        settle(save);
        if (!queue.some(function (other) { return other.attempts > 0; })) {
          hideError();
        }
        if (save.seq > progressSeq) { // an earlier grade's answer never hides a later one's
          progressSeq = save.seq;
          latestProgress = { html: data.progress, at: performance.now() };
          var progress = byId("grading-progress");
          if (progress) {
            progress.innerHTML = data.progress;
          }
        }
        var done = data.action === "skip" ? "Skipped " : "Saved grade " + data.grade + " for ";
        showStatus(queue.length ? pendingText() : done + data.pair + ".");
        emit("grading:saved", { item: save.item, answer: data });
        pump();
      } else if (isJson && data && data.error && response.status >= 400 &&
          response.status < 500 && response.status !== 408 && response.status !== 429) {
        // Refused (a grade no longer on the scale, a pair no longer assigned): not retried.
        settle(save);
        pairs.resume();
        showError("Not saved: " + save.label.what + " for " + save.label.pair + ": " +
          data.error, save.label.url);
        retryButton.hidden = true;
        emit("grading:refused", { item: save.item, answer: data });
        pump();
      } else {
        retryLater(save, "the server answered " + response.status);
      }
    }, function () {
      save.inflight = false;
      retryLater(save, "no connection to the server");
    });
  }

  retryButton.addEventListener("click", function () {
    if (retryTimer !== null) {
      window.clearTimeout(retryTimer);
      retryTimer = null;
    }
    pump();
  });

  window.addEventListener("beforeunload", function (event) {
    if (queue.length) {
      event.preventDefault();
      event.returnValue = "";
    }
  });

  // --- the pairs held ready (grading_prefetch.js), and swapping one in -------------------
  var advancing = false;

  // Not to be fetched: the pair shown and those whose grades are on their way.
  function busyItems() {
    var ids = queue.map(function (save) { return save.item; });
    var box = pairBox();
    if (box) {
      ids.push(box.getAttribute("data-item"));
    }
    return ids;
  }

  var pairs = window.gradingPairs(function () {
    return pairBox().getAttribute("data-next");
  }, busyItems, emit);

  function prefetch() {
    return background ? pairs.fill() : Promise.resolve();
  }

  function swapIn(pair, push, ready) {
    if (pair.parsed) {
      slot.replaceChildren(pair.parsed.content);
    } else {
      slot.innerHTML = pair.html;
    }
    document.title = pair.title;
    if (latestProgress && (!pair.at || latestProgress.at > pair.at)) {
      var progress = byId("grading-progress");
      if (progress) {
        progress.innerHTML = latestProgress.html;
      }
    }
    if (push) {
      window.history.pushState({ url: pair.url }, "", pair.url);
    }
    typed = "";
    setSkipMode(false);
    if (document.activeElement && document.activeElement !== document.body) {
      document.activeElement.blur();
    }
    window.scrollTo(0, 0);
    // The read position needs the new document's layout: measured after it is painted.
    window.requestAnimationFrame(watchPosition);
    dwellReset();
    pairs.shown();
    emit("grading:shown", { item: String(pair.item), url: pair.url, ready: !!ready });
  }

  function advance() {
    if (pairs.count()) {
      swapIn(pairs.take(), true, true); // held ready: no request between the key and the pair
      // Another pair is still held: fetch the next ones once the grade is committed, so that
      // the save has the server to itself (on a busy server, at once).
      if (pairs.count() && !busy()) {
        whenDrained(prefetch);
      } else {
        prefetch();
      }
      return;
    }
    if (pairs.exhausted()) {
      finish();
      return;
    }
    advancing = true;
    showStatus("Opening the next pair…");
    prefetch().then(function () {
      if (pairs.count()) {
        advancing = false;
        showStatus(queue.length ? pendingText() : "");
        swapIn(pairs.take(), true);
        prefetch();
      } else if (pairs.exhausted()) {
        finish();
      } else {
        showError("The next pair could not be loaded; retrying.");
        window.setTimeout(function () {
          advancing = false;
          hideError();
          advance();
        }, 2000);
      }
    });
  }

  // Every pair is graded (or on its way): go to the assignment once the grades are saved.
  function finish() {
    advancing = true;
    showStatus(queue.length ? pendingText() : "Assignment complete.");
    whenDrained(function () {
      var box = pairBox();
      // A refused grade left its pair pending: stay, so that it can be graded again.
      if (errorBox.hidden) {
        window.location.assign(pairs.doneUrl() || box.getAttribute("data-done"));
      } else {
        advancing = false;
        pairs.resume();
      }
    });
  }

  function showUrl(url, push) {
    advancing = true;
    whenDrained(function () {
      window.gradingPairs.getJson(url).then(function (data) {
        advancing = false;
        pairs.drop();
        swapIn(data.pair, push);
        prefetch();
      }, function () {
        window.location.assign(url);
      });
    });
  }

  window.addEventListener("popstate", function () {
    if (background) {
      showUrl(window.location.pathname, false);
    }
  });

  // --- submitting ---------------------------------------------------------------------------
  var submitting = false; // plain mode: one submission per page

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.id === "undo-form") {
      if (!background) {
        return;
      }
      if (queue.length) {
        event.preventDefault();
        showStatus(pendingText() + " Then undo.");
        whenDrained(function () { form.submit(); });
      }
      return;
    }
    if (form.id !== "grade-form") {
      return;
    }
    var dwell = form.querySelector("input[name=dwell_ms]");
    if (!background) {
      if (submitting) {
        event.preventDefault();
        return;
      }
      if (dwell) {
        dwell.value = String(dwellNow());
      }
      submitting = true;
      form.classList.add("saving");
      return;
    }
    event.preventDefault();
    if (advancing) {
      return; // this pair is graded; the next one is on its way
    }
    var data = new FormData(form);
    var submitter = event.submitter;
    if (submitter && submitter.name) {
      data.append(submitter.name, submitter.value);
    }
    data.set("dwell_ms", String(dwellNow()));
    var box = pairBox();
    queue.push({
      item: box.getAttribute("data-item"),
      url: form.getAttribute("action"), // not form.action: the skip button is named "action"
      body: new URLSearchParams(data).toString(),
      csrf: String(data.get("csrfmiddlewaretoken") || ""),
      key: String(data.get("idempotency_key") || ""),
      label: labelOf(data, box),
      attempts: 0,
      inflight: false,
      seq: ++sequence
    });
    pairs.graded();
    showStatus(pendingText());
    pump();
    advance();
  }, true);

  function submitWith(button) {
    if (submitting || advancing || !button) {
      return;
    }
    var form = byId("grade-form");
    if (typeof form.requestSubmit === "function") {
      form.requestSubmit(button);
    } else {
      button.click();
    }
  }

  // --- typing a grade -------------------------------------------------------------------------
  // Every grade is keyed by typing its value: a digit saves at once when no other grade
  // starts with what was typed (0-9 scales: one key); otherwise ("1" on a scale with 10,
  // or "-" for -1) the grade is saved on Enter or after a short pause. Keys that make no
  // grade of the scale save nothing.
  var typed = "";
  var pause = null;

  function buttons() {
    return Array.prototype.slice.call(slot.querySelectorAll("#grade-form button[data-key]"));
  }

  function show() {
    var shown = byId("typed-grade");
    if (shown) {
      shown.textContent = typed === "" ? "" : "Grade " + typed + "…";
    }
  }

  function exact(text) {
    var all = buttons();
    for (var i = 0; i < all.length; i += 1) {
      if (all[i].getAttribute("data-key") === text) {
        return all[i];
      }
    }
    return null;
  }

  function longer(text) {
    return buttons().some(function (button) {
      var value = button.getAttribute("data-key");
      return value.length > text.length && value.indexOf(text) === 0;
    });
  }

  function finishTyping() {
    var button = exact(typed);
    typed = "";
    show();
    if (button) {
      submitWith(button);
    }
  }

  function typeGrade(key) {
    window.clearTimeout(pause);
    if (key === "Enter") {
      finishTyping();
      return;
    }
    var candidate = typed + key;
    if (!exact(candidate) && !longer(candidate)) {
      // Not on the scale: refused and said so, never read as another grade ("1", "2" on a
      // -1..10 scale is 12, not 2).
      typed = "";
      show();
      showStatus(candidate + " is not a grade on this scale: nothing was saved.");
      return;
    }
    typed = candidate;
    if (exact(typed) && !longer(typed)) {
      finishTyping();
      return;
    }
    show();
    pause = window.setTimeout(finishTyping, PAUSE_MS);
  }

  // --- other keys -----------------------------------------------------------------------------
  var skipMode = false;

  function go(id) {
    var link = byId(id);
    if (!link || submitting) {
      return;
    }
    if (background) {
      showUrl(link.getAttribute("href"), true);
    } else {
      window.location.assign(link.href);
    }
  }

  function setSkipMode(on) {
    skipMode = on;
    var hint = byId("skip-hint");
    if (hint) {
      hint.hidden = !on;
    }
    if (on) {
      byId("id_note").focus();
    }
  }

  function undo() {
    var form = byId("undo-form");
    if (!form || submitting) {
      return;
    }
    submitting = true;
    if (queue.length) {
      showStatus(pendingText() + " Then undo.");
    }
    whenDrained(function () { form.submit(); });
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) {
      return;
    }
    var target = event.target;
    var note = byId("id_note");
    var typing = target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT" ||
      target.tagName === "SELECT" || target.isContentEditable);
    if (typing) {
      if (event.key === "Escape") {
        event.preventDefault();
        setSkipMode(false);
        target.blur();
      } else if (event.key === "Enter" && !event.shiftKey && target === note && skipMode) {
        event.preventDefault();
        submitWith(byId("skip"));
      }
      return;
    }
    var key = event.key;
    var documentText = byId("document-text");
    // Space / PageDown (Shift+Space / PageUp back) scroll the long document, not the page;
    // a focused button or link keeps its own Space.
    var control = target && (target.tagName === "BUTTON" || target.tagName === "A" ||
      target.tagName === "SUMMARY");
    var page = (key === " " && !control) || key === "PageDown" || key === "PageUp";
    if (page && documentText && documentText.scrollHeight > documentText.clientHeight) {
      event.preventDefault();
      var back = key === "PageUp" || (key === " " && event.shiftKey);
      documentText.scrollBy({ top: (back ? -0.9 : 0.9) * documentText.clientHeight });
      return;
    }
    if (/^[0-9-]$/.test(key) || (key === "Enter" && typed !== "")) {
      event.preventDefault();
      typeGrade(key);
      return;
    }
    var help = byId("shortcuts");
    if (key === "ArrowRight" || key === "j") {
      event.preventDefault();
      go("next");
    } else if (key === "ArrowLeft" || key === "k") {
      event.preventDefault();
      go("previous");
    } else if (key === "s") {
      event.preventDefault();
      setSkipMode(true);
    } else if (key === "u") {
      event.preventDefault();
      undo();
    } else if (key === "?") {
      event.preventDefault();
      help.open = !help.open;
    } else if (key === "Escape" && help) {
      help.open = false;
    }
  });

  if (background) {
    window.history.replaceState({ url: pairBox().getAttribute("data-url") }, "",
      window.location.href);
    prefetch();
  }
})();
