// Builds DOM nodes from data without ever parsing strings as HTML: everything that came from a
// submission (stdout, messages, tracebacks) is inserted as text.

/**
 * h("p", {class: "x", onclick: fn}, "text", child) -> HTMLElement
 * Attributes starting with "on" become listeners; `null`/`false` attributes are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";

export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    el.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function formatSeconds(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return "";
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  return `${s.toFixed(s < 10 ? 1 : 0)} s`;
}

export function formatNumber(x) {
  if (x === null || x === undefined) return "";
  if (typeof x !== "number") return String(x);
  if (!Number.isFinite(x)) return String(x);
  if (x === 0) return "0";
  const a = Math.abs(x);
  return a >= 1e-3 && a < 1e4 ? String(Number(x.toPrecision(4))) : x.toExponential(2);
}

export function shapeText(shape) {
  if (!Array.isArray(shape)) return "";
  return `(${shape.join(", ")}${shape.length === 1 ? "," : ""})`;
}

/** Replaces el's children; null/false children are skipped (unlike Element.append). */
export function fill(el, ...children) {
  return append(clear(el), children);
}

/** The variadic groups ("*lead") among declared shapes, each once, in order of appearance. */
function variadicGroups(shapes) {
  return [...new Set(shapes.flat().filter((d) => typeof d === "string" && d.startsWith("*")))];
}

/** One sentence explaining the variadic groups of declared shapes; "" when there are none. */
export function variadicNote(shapes) {
  const groups = variadicGroups(shapes);
  if (!groups.length) return "";
  const names = groups.join(", ");
  return `${names}: any number of axes (none, one, two…), the same sizes everywhere it appears.`;
}
