// Compact text for example arrays: nested lists printed like NumPy, numbers to 4 significant digits.
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

function render(value, indent) {
  if (!Array.isArray(value)) return typeof value === "number" ? formatNumber(value) : JSON.stringify(value);
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
