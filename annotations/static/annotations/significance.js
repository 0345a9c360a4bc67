// The significance page's matrix: pointing at a cell reads its pair (difference and adjusted
// p-value, from the numbers the page carries); clicking it shows the pair in the form above.
(function () {
  "use strict";
  var svg = document.getElementById("pair-matrix");
  var data = document.getElementById("matrix-cells");
  var out = document.getElementById("matrix-cell");
  if (!svg || !data || !out) {
    return;
  }
  var cells = JSON.parse(data.textContent);
  var count = cells.names.length;

  function cellAt(event) {
    var box = svg.getBoundingClientRect();
    var scale = box.width / svg.viewBox.baseVal.width;
    var column = Math.floor(((event.clientX - box.left) / scale - cells.left) / cells.size);
    var row = Math.floor(((event.clientY - box.top) / scale - cells.top) / cells.size);
    if (row < 0 || column < 0 || row >= count || column >= count) {
      return null;
    }
    return { row: row, column: column };
  }

  function describe(cell) {
    var i = cell.row, j = cell.column;
    if (i === j) {
      return (i + 1) + ". " + cells.names[i];
    }
    var difference = cells.means[i] - cells.means[j];
    var p = cells.p[i][j];
    return (i + 1) + " vs " + (j + 1) + ": difference " + (difference >= 0 ? "+" : "") +
      difference.toFixed(4) + ", adjusted p " + p.toFixed(4) + ", " +
      (p < cells.alpha ? "significant" : "not significant") + " (" + cells.names[i] +
      " against " + cells.names[j] + ")";
  }

  svg.addEventListener("pointermove", function (event) {
    var cell = cellAt(event);
    if (cell) {
      out.textContent = describe(cell);
    }
  });
  svg.addEventListener("click", function (event) {
    var cell = cellAt(event);
    var form = document.getElementById("pair-form");
    if (!cell || cell.row === cell.column || !form) {
      return;
    }
    form.elements.a.value = cells.names[cell.row];
    form.elements.b.value = cells.names[cell.column];
    form.submit();
  });
}());
