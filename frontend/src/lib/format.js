// Compact text for example values: nested lists printed like NumPy, numbers to 4 significant
// digits, booleans and None as Python literals.
import { formatNumber } from "./dom.js";

const MAX_CHARS = 1500;

function shapeOf(value) {
  const shape = [];
  let v = value;
  while (Array.isArray(v)) {
    shape.push(v.length);
    v = v[0];
  }
  return shape;
}

/** A scalar as Python writes it: the examples are inputs to a Python function. */
function scalar(value) {
  if (typeof value === "number") return formatNumber(value);
  if (typeof value === "boolean") return value ? "True" : "False";
  if (value === null || value === undefined) return "None";
  return JSON.stringify(value);
}

function render(value, indent) {
  if (!Array.isArray(value)) return scalar(value);
  if (value.length === 0) return "[]";
  if (!Array.isArray(value[0])) return `[${value.map((x) => render(x, indent)).join(", ")}]`;
  const pad = " ".repeat(indent + 1);
  return `[${value.map((x, i) => (i ? pad : "") + render(x, indent + 1)).join(",\n")}]`;
}

export function formatValue(value) {
  const text = render(value, 0);
  const shape = shapeOf(value);
  const head = shape.length ? `shape (${shape.join(", ")}${shape.length === 1 ? "," : ""})\n` : "";
  return head + (text.length > MAX_CHARS ? `${text.slice(0, MAX_CHARS)}\n…` : text);
}
