// The grading page's pairs held ready (used by grading.js, loaded before it): fetched ahead
// in the background, as many as cover the time a fetch takes at the assessor's own pace,
// so that a pair is ready at every key press even on a server slower than the assessor.
//
// Held: ceil(fetch round trip / the assessor's time on a pair) + 1, both moving averages
// (the time on a pair from its showing to its grade: a wait for a pair not held does not
// count, or a slow fetch would lower the pairs held and lengthen the waits), at least
// MIN_HELD and at most MAX_HELD pairs (the server answers at most that many at once) and
// about MAX_HELD_CHARS of their HTML (documents can be large). One fetch at a time, for
// what is missing; it starts as soon as fewer are held than that, and again when it lands
// short while the assessor went on.
(function () {
  "use strict";
  var MIN_HELD = 2;
  var MAX_HELD = 8; // the view's MAX_PREFETCH
  var MAX_HELD_CHARS = 2000000;
  var PACE_CAP_MS = 60 * 1000; // a longer pause (a break, a tab left open) is not the pace
  var WEIGHT = 0.3; // of the latest measure in each moving average

  function average(previous, value) {
    return previous === null ? value : previous + WEIGHT * (value - previous);
  }

  function getJson(url) {
    return fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("HTTP " + response.status);
        }
        return response.json();
      });
  }

  // firstNext(): the "next/" URL after the pair shown; busyItems(): the ids not to fetch
  // besides those held (the pair shown, the grades on their way); emit(name, detail).
  window.gradingPairs = function (firstNext, busyItems, emit) {
    var held = [];
    var exhausted = false;
    var epoch = 0; // moves when the held pairs are dropped (the page moved elsewhere)
    var fetching = null;
    var fetchMs = null; // a fetch's round trip
    var paceMs = null; // the assessor's time on a pair
    var shownAt = null; // the pair the page opened on is not timed (its load counts)
    var doneUrl = null;

    function chars() {
      return held.reduce(function (sum, pair) { return sum + pair.size; }, 0);
    }

    function target() {
      if (fetchMs === null || paceMs === null) {
        return MIN_HELD;
      }
      var cover = Math.ceil(fetchMs / Math.max(paceMs, 1)) + 1;
      return Math.max(MIN_HELD, Math.min(MAX_HELD, cover));
    }

    // What is missing, in pairs of about the size of those held (at least one).
    function wanted() {
      var missing = target() - held.length;
      if (held.length) {
        var room = Math.floor((MAX_HELD_CHARS - chars()) / Math.max(chars() / held.length, 1));
        missing = Math.min(missing, room);
      }
      return Math.max(missing, 1);
    }

    function url(count) {
      var base = held.length ? held[held.length - 1].next : firstNext();
      var ids = busyItems().concat(held.map(function (pair) { return String(pair.item); }));
      return base + "?count=" + count + "&exclude=" + encodeURIComponent(ids.join(","));
    }

    // Parsed now, while the assessor reads: the swap only inserts the nodes. In order: a
    // pair past the size bound stops the rest (fetched again after the ones held).
    function hold(pairs, at) {
      for (var i = 0; i < pairs.length; i += 1) {
        var pair = pairs[i];
        if (held.length && chars() + pair.html.length > MAX_HELD_CHARS) {
          return false;
        }
        pair.at = at;
        pair.size = pair.html.length;
        pair.parsed = document.createElement("template");
        pair.parsed.innerHTML = pair.html;
        pair.html = "";
        held.push(pair);
      }
      return true;
    }

    function fill() {
      if (fetching) {
        return fetching;
      }
      if (exhausted || held.length >= target() || chars() >= MAX_HELD_CHARS) {
        return Promise.resolve();
      }
      var asked = epoch;
      var count = wanted();
      // The pairs are rendered after this moment: a save answered later may be newer than
      // the progress they show.
      var at = performance.now();
      fetching = getJson(url(count)).then(function (data) {
        fetching = null;
        if (asked !== epoch) {
          return fill(); // asked from a pair no longer shown: ask again from this one
        }
        fetchMs = average(fetchMs, performance.now() - at);
        doneUrl = data.done_url;
        exhausted = data.pairs.length === 0;
        var all = hold(data.pairs, at);
        emit("grading:held", { held: held.length, target: target(), chars: chars() });
        if (all && data.pairs.length === count) {
          fill(); // the assessor went on meanwhile, or the target grew
        }
      }, function () {
        fetching = null;
      });
      return fetching;
    }

    return {
      fill: fill,
      count: function () { return held.length; },
      take: function () { return held.shift(); },
      exhausted: function () { return exhausted; },
      doneUrl: function () { return doneUrl; },
      // A refused grade left its pair pending: there is something to fetch again.
      resume: function () { exhausted = false; },
      // The page shows a pair of its own choosing (history, j/k): the ones held follow
      // another pair.
      drop: function () {
        held = [];
        epoch += 1;
        exhausted = false;
      },
      // A pair is shown, and the assessor graded it: the pace.
      shown: function () {
        shownAt = performance.now();
      },
      graded: function () {
        var spent = shownAt === null ? PACE_CAP_MS : performance.now() - shownAt;
        if (spent < PACE_CAP_MS) {
          paceMs = average(paceMs, spent);
        }
        shownAt = null;
      }
    };
  };
  window.gradingPairs.getJson = getJson;
})();
