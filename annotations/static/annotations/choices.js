// Long lists of checkboxes (a pool's runs, a judge's pools): a box to find options by name,
// "Select all shown" and "Clear", and how many are ticked. Without this script the list is
// the plain form's checkboxes.
(function () {
  "use strict";
  var MANY = 8;
  document.querySelectorAll("fieldset.choices").forEach(function (fieldset, index) {
    var boxes = Array.prototype.slice.call(
      fieldset.querySelectorAll("input[type=checkbox]"));
    if (boxes.length <= MANY) {
      return;
    }
    var options = function (box) { return box.closest("label") ? box.closest("label").parentNode : box; };
    var legend = fieldset.querySelector("legend");
    var tools = document.createElement("div");
    tools.className = "choice-tools";
    var id = "choice-find-" + index;
    tools.innerHTML = '<label for="' + id + '">Find</label> <input type="search" id="' + id +
      '" autocomplete="off"> <button type="button" class="secondary choice-all">Select all shown</button>' +
      ' <button type="button" class="secondary choice-none">Clear</button>' +
      ' <span class="meta choice-count" aria-live="polite"></span>';
    legend.insertAdjacentElement("afterend", tools);
    var list = boxes[0].closest("div[id]") || boxes[0].parentNode;
    list.classList.add("choice-list");
    var find = tools.querySelector("input");
    var count = tools.querySelector(".choice-count");

    function shown(box) {
      return !options(box).hidden;
    }
    function tell() {
      var ticked = boxes.filter(function (box) { return box.checked; }).length;
      var visible = boxes.filter(shown).length;
      count.textContent = ticked + " of " + boxes.length + " ticked" +
        (visible < boxes.length ? "; " + visible + " shown" : "");
    }
    find.addEventListener("input", function () {
      var needle = find.value.trim().toLowerCase();
      boxes.forEach(function (box) {
        var text = options(box).textContent.toLowerCase();
        options(box).hidden = needle !== "" && text.indexOf(needle) < 0;
      });
      tell();
    });
    find.addEventListener("keydown", function (event) {
      if (event.key === "Enter") {
        event.preventDefault(); // finding is not submitting
      }
    });
    tools.querySelector(".choice-all").addEventListener("click", function () {
      boxes.filter(shown).forEach(function (box) { box.checked = true; });
      tell();
    });
    tools.querySelector(".choice-none").addEventListener("click", function () {
      boxes.forEach(function (box) { box.checked = false; });
      tell();
    });
    fieldset.addEventListener("change", tell);
    tell();
  });
}());
