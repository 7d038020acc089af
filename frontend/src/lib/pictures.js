// The one picture in a result: for a shape mistake, expected vs actual shape side by side; for a
// wrong value, where in the output the answer is furthest from the reference (a heat map when the
// API sends a per-cell error grid, otherwise the location of the largest error).
import { formatNumber, h, shapeText, svg } from "./dom.js";

const MAX_CELLS = 32; // beyond this many rows/columns a grid is drawn as a plain box

function matrixBox(rows, cols, { x, y, maxW, maxH, cls, depth = 1, maxCell = 14 }) {
  const cell = Math.max(2, Math.min(maxCell, maxW / Math.max(cols, 1), maxH / Math.max(rows, 1)));
  const w = cell * cols;
  const hgt = cell * rows;
  const group = svg("g", { class: cls });
  const layers = Math.min(depth, 3);
  for (let k = layers - 1; k >= 1; k--) {
    group.append(svg("rect", { x: x + k * 6, y: y - k * 6, width: w, height: hgt, class: "layer" }));
  }
  group.append(svg("rect", { x, y, width: w, height: hgt, class: "body" }));
  if (rows <= MAX_CELLS && cols <= MAX_CELLS && cell >= 5) {
    for (let r = 1; r < rows; r++) {
      group.append(svg("line", { x1: x, x2: x + w, y1: y + r * cell, y2: y + r * cell, class: "grid" }));
    }
    for (let c = 1; c < cols; c++) {
      group.append(svg("line", { y1: y, y2: y + hgt, x1: x + c * cell, x2: x + c * cell, class: "grid" }));
    }
  }
  return { group, w, h: hgt, cell };
}

function lastTwo(shape) {
  if (shape.length === 0) return [1, 1];
  if (shape.length === 1) return [1, shape[0]];
  return [shape[shape.length - 2], shape[shape.length - 1]];
}

function leading(shape) {
  return shape.slice(0, Math.max(0, shape.length - 2)).reduce((a, b) => a * b, 1);
}

function shapeVerdict(expected, actual) {
  const size = (s) => s.reduce((a, b) => a * b, 1);
  const sameSorted =
    expected.length === actual.length &&
    [...expected].sort((a, b) => a - b).join() === [...actual].sort((a, b) => a - b).join();
  if (sameSorted) return "The same axis sizes in a different order: an axis is transposed or swapped.";
  if (size(expected) === size(actual)) {
    return "The same number of values arranged differently: check a reshape.";
  }
  if (expected.length !== actual.length) {
    return `Your result has ${actual.length} axes; ${expected.length} were expected.`;
  }
  return "A different number of values: an axis has the wrong length.";
}

export function shapePicture(expected, actual, names = null) {
  const W = 440;
  const panel = W / 2;
  const top = 34;
  const boxes = [expected, actual].map((shape, k) => {
    const [rows, cols] = lastTwo(shape);
    return matrixBox(rows, cols, {
      x: k * panel + 28,
      y: top,
      maxW: panel - 70,
      maxH: 120,
      cls: k === 0 ? "expected" : "actual",
      depth: leading(shape),
      maxCell: 24,
    });
  });
  const H = top + Math.max(...boxes.map((b) => b.h)) + 52;
  const root = svg("svg", {
    viewBox: `0 0 ${W} ${H}`,
    width: W,
    height: H,
    class: "picture shape-picture",
    role: "img",
    "aria-labelledby": "shape-picture-title",
  });
  root.append(svg("title", { id: "shape-picture-title" }, `Expected shape ${shapeText(expected)}, your shape ${shapeText(actual)}`));
  [expected, actual].forEach((shape, k) => {
    const other = k === 0 ? actual : expected;
    const box = boxes[k];
    const x0 = k * panel + 28;
    const [rows, cols] = lastTwo(shape);
    const stacked = leading(shape);
    root.append(
      svg("text", { x: x0, y: 16, class: "label" }, k === 0 ? "Expected" : "Yours"),
      box.group,
      svg("text", { x: x0 - 6, y: top + box.h / 2 + 4, class: "axis", "text-anchor": "end" }, String(rows)),
      svg("text", { x: x0 + box.w / 2, y: top + box.h + 14, class: "axis", "text-anchor": "middle" }, String(cols)),
      stacked > 1 ? svg("text", { x: x0 + box.w + 22, y: top - 6, class: "axis" }, `×${stacked}`) : null,
    );
    // Each dimension labelled; those that differ from the other shape at the same axis are marked.
    const text = svg("text", { x: x0, y: top + box.h + 36, class: "shape-text" }, "(");
    shape.forEach((d, i) => {
      const differs = other[i] !== d;
      const name = names && names[i] ? `${names[i]}=` : "";
      text.append(svg("tspan", { class: differs ? "dim differs" : "dim" }, `${name}${d}${differs ? "*" : ""}`));
      if (i < shape.length - 1) text.append(", ");
    });
    text.append(")");
    root.append(text);
  });
  return h(
    "figure",
    { class: "picture-figure", "data-picture": "shape" },
    root,
    h("figcaption", {}, `Expected ${shapeText(expected)}, got ${shapeText(actual)}. ${shapeVerdict(expected, actual)} Dimensions marked * differ; stacked sheets stand for the leading axes.`),
  );
}

function heatColor(t) {
  // White to deep red; perceptually ordered, readable against the dark grid lines.
  const v = Math.max(0, Math.min(1, t));
  const r = 255 - Math.round(v * 75);
  const g = Math.round(255 * (1 - v) * 0.95);
  const b = Math.round(255 * (1 - v) * 0.9);
  return `rgb(${r},${g},${b})`;
}

/**
 * Heat map of |actual - expected| over the output's last two axes, from `grid` (rows of numbers),
 * or just the location of the largest error when no grid is available.
 */
export function errorPicture({ shape, index, maxError, grid, caseName, output = null }) {
  const useGrid = Array.isArray(grid) && grid.length > 0 && Array.isArray(grid[0]);
  const [rows, cols] = useGrid ? [grid.length, grid[0].length] : lastTwo(shape || []);
  if (!rows || !cols) return null;
  const W = 420;
  const cell = Math.max(3, Math.min(28, (W - 60) / cols, 260 / rows));
  const width = cols * cell;
  const height = rows * cell;
  const ox = 40;
  const oy = 22;
  const vbW = Math.max(330, ox + width + 20);
  const vbH = oy + height + 24;
  // One picture per output: each needs its own title id.
  const titleId = output ? `error-picture-title-${output}` : "error-picture-title";
  const root = svg("svg", {
    viewBox: `0 0 ${vbW} ${vbH}`,
    width: vbW,
    height: vbH,
    class: "picture error-picture",
    role: "img",
    "aria-labelledby": titleId,
  });
  const where = index ? `[${index.join(", ")}]` : "";
  // "your weights for first-key-only": a case's output, named when the function returns several.
  const subject = `your ${output || "output"} for ${caseName}`;
  root.append(svg("title", { id: titleId }, useGrid ? `Heat map of the error of ${subject}` : `Largest error of ${subject} at ${where}`));
  root.append(svg("text", { x: ox, y: 14, class: "label" }, useGrid ? "|yours − expected| per cell" : "Output cells (largest error marked)"));
  let peak = 0;
  if (useGrid) for (const row of grid) for (const v of row) peak = Math.max(peak, Math.abs(v) || 0);
  const [ri, ci] = index && index.length >= 2 ? index.slice(-2) : index && index.length === 1 ? [0, index[0]] : [null, null];
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const v = useGrid ? Math.abs(grid[r][c]) || 0 : 0;
      root.append(
        svg("rect", {
          x: ox + c * cell,
          y: oy + r * cell,
          width: cell,
          height: cell,
          class: "cell",
          fill: useGrid ? heatColor(peak > 0 ? v / peak : 0) : "var(--cell-bg)",
        }),
      );
    }
  }
  if (ri !== null && ri < rows && ci < cols) {
    // Dark outer and light inner outline: visible on both light and dark heat-map cells.
    root.append(
      svg("rect", { x: ox + ci * cell, y: oy + ri * cell, width: cell, height: cell, class: "peak" }),
      svg("rect", { x: ox + ci * cell + 2, y: oy + ri * cell + 2, width: Math.max(1, cell - 4), height: Math.max(1, cell - 4), class: "peak-inner" }),
    );
  }
  root.append(svg("text", { x: ox - 6, y: oy + 10, class: "axis", "text-anchor": "end" }, "row 0"));
  root.append(svg("text", { x: ox, y: oy + height + 16, class: "axis" }, "col 0"));
  root.append(svg("text", { x: ox + width, y: oy + height + 16, class: "axis", "text-anchor": "end" }, `col ${cols - 1}`));
  const caption = useGrid
    ? `How far each cell of ${subject} is from the expected value (darker is further; peak ${formatNumber(peak)}). Largest error ${formatNumber(maxError)} at ${where}.`
    : `Largest error of ${subject}: ${formatNumber(maxError)} at ${where} (row ${ri}, column ${ci} of the last two axes).`;
  return h("figure", { class: "picture-figure", "data-picture": useGrid ? "heatmap" : "error-location", "data-output": output || undefined }, root, h("figcaption", {}, caption));
}
