// The grade-scale editor without a page reload: "Add a level" appends an empty row (the
// form works without it: two empty rows are always there, and saving shows two more).
(function () {
  "use strict";
  var button = document.getElementById("add-level");
  var template = document.getElementById("level-template");
  var levels = document.getElementById("levels");
  var total = document.getElementById("id_grades-TOTAL_FORMS");
  if (!button || !template || !levels || !total) { return; }
  button.parentElement.hidden = false;
  button.addEventListener("click", function () {
    var index = parseInt(total.value, 10);
    var html = template.innerHTML.replace(/__prefix__/g, String(index));
    var holder = document.createElement("div");
    holder.innerHTML = html;
    var row = holder.firstElementChild;
    levels.appendChild(row);
    total.value = String(index + 1);
    var first = row.querySelector("input");
    if (first) { first.focus(); }
  });
})();
