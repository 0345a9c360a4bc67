// Keyboard shortcuts for the grading page; without this script the page is a plain form.
(function () {
  "use strict";
  var form = document.getElementById("grade-form");
  if (!form) {
    return;
  }
  var note = document.getElementById("id_note");
  var skip = document.getElementById("skip");
  var hint = document.getElementById("skip-hint");
  var help = document.getElementById("shortcuts");
  var documentText = document.getElementById("document-text");
  var submitting = false;
  var skipMode = false;

  // One submission per page: a second key press or click while saving is ignored.
  form.addEventListener("submit", function (event) {
    if (submitting) {
      event.preventDefault();
      return;
    }
    submitting = true;
    form.classList.add("saving");
  });

  function submitWith(button) {
    if (submitting) {
      return;
    }
    if (typeof form.requestSubmit === "function") {
      form.requestSubmit(button);
    } else {
      button.click();
    }
  }

  // Where the reader is in a document longer than its box: "Read 40% (Space: on)".
  var position = document.getElementById("read-position");
  function showPosition() {
    var scrollable = documentText.scrollHeight - documentText.clientHeight;
    if (scrollable <= 0) {
      position.hidden = true;
      return;
    }
    var read = Math.round(100 * (documentText.scrollTop + documentText.clientHeight) /
      documentText.scrollHeight);
    position.hidden = false;
    position.textContent = "Read " + read + "% of the document" +
      (read < 100 ? " (Space: on)" : "");
  }
  if (documentText && position) {
    documentText.addEventListener("scroll", showPosition, { passive: true });
    showPosition();
  }

  // Every grade is keyed by typing its value: a digit saves at once when no other grade
  // starts with what was typed (0-9 scales: one key); otherwise ("1" on a scale with 10,
  // or "-" for -1) the grade is saved on Enter or after a short pause.
  var buttons = Array.prototype.slice.call(form.querySelectorAll("button[data-key]"));
  var typedShown = document.getElementById("typed-grade");
  var typed = "";
  var pause = null;
  var PAUSE_MS = 800;

  function show() {
    if (typedShown) {
      typedShown.textContent = typed === "" ? "" : "Grade " + typed + "…";
    }
  }

  function exact(text) {
    for (var i = 0; i < buttons.length; i += 1) {
      if (buttons[i].getAttribute("data-key") === text) {
        return buttons[i];
      }
    }
    return null;
  }

  function longer(text) {
    return buttons.some(function (button) {
      var value = button.getAttribute("data-key");
      return value.length > text.length && value.indexOf(text) === 0;
    });
  }

  function finish() {
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
      finish();
      return;
    }
    var candidate = typed + key;
    if (!exact(candidate) && !longer(candidate)) {
      candidate = key; // a new grade starts: what was typed before matched none
      if (!exact(candidate) && !longer(candidate)) {
        typed = "";
        show();
        return;
      }
    }
    typed = candidate;
    if (exact(typed) && !longer(typed)) {
      finish();
      return;
    }
    show();
    pause = window.setTimeout(finish, PAUSE_MS);
  }

  function go(id) {
    var link = document.getElementById(id);
    if (link && !submitting) {
      window.location.assign(link.href);
    }
  }

  function setSkipMode(on) {
    skipMode = on;
    if (hint) {
      hint.hidden = !on;
    }
    if (on) {
      note.focus();
    }
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) {
      return;
    }
    var target = event.target;
    var typing = target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT" ||
      target.tagName === "SELECT" || target.isContentEditable);
    if (typing) {
      if (event.key === "Escape") {
        event.preventDefault();
        setSkipMode(false);
        target.blur();
      } else if (event.key === "Enter" && !event.shiftKey && target === note && skipMode) {
        event.preventDefault();
        submitWith(skip);
      }
      return;
    }
    var key = event.key;
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
      var undo = document.getElementById("undo-form");
      if (undo && !submitting) {
        event.preventDefault();
        submitting = true;
        undo.submit();
      }
    } else if (key === "?") {
      event.preventDefault();
      help.open = !help.open;
    } else if (key === "Escape") {
      help.open = false;
    }
  });
})();
