// Small SVG charts for the instructor page; each comes with its numbers as a table for screen
// readers and for anyone who prefers exact figures.
import { formatNumber, h, svg } from "./dom.js";

function dataTable(caption, headers, rows) {
  return h(
    "details",
    { class: "chart-data" },
    h("summary", {}, "Show the numbers"),
    h(
      "table",
      {},
      h("caption", {}, caption),
      h("thead", {}, h("tr", {}, headers.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c, i) => (i === 0 ? h("th", { scope: "row" }, c) : h("td", {}, c)))))),
    ),
  );
}

/** Horizontal bars: [{label, value}] sorted by the caller. */
export function barChart(items, { title, unit = "" }) {
  const barH = 22;
  const gap = 8;
  const labelW = 190;
  const plotW = 320;
  const W = labelW + plotW + 60;
  const H = Math.max(1, items.length) * (barH + gap) + 10;
  const max = Math.max(1, ...items.map((i) => i.value));
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart bar-chart", role: "img", "aria-label": `${title}: ${items.map((i) => `${i.label} ${i.value}${unit}`).join(", ")}` });
  items.forEach((item, k) => {
    const y = 5 + k * (barH + gap);
    const w = Math.max(2, (item.value / max) * plotW);
    root.append(
      svg("text", { x: labelW - 8, y: y + barH * 0.7, "text-anchor": "end", class: "label" }, item.label),
      svg("rect", { x: labelW, y, width: w, height: barH, class: "bar" }, svg("title", {}, `${item.label}: ${item.value}${unit}`)),
      svg("text", { x: labelW + w + 6, y: y + barH * 0.7, class: "value" }, `${item.value}${unit}`),
    );
  });
  return h("figure", { class: "chart-figure", "data-chart": "bars" }, h("figcaption", {}, title), root, dataTable(title, ["Diagnosis", "Count"], items.map((i) => [i.label, String(i.value)])));
}

/** Line over time: [{x: label, y: 0..1, n?: submissions}]. */
export function rateChart(points, { title }) {
  const W = 560;
  const H = 220;
  const pad = { l: 48, r: 16, t: 14, b: 40 };
  const plotW = W - pad.l - pad.r;
  const plotH = H - pad.t - pad.b;
  const xAt = (k) => pad.l + (points.length <= 1 ? plotW / 2 : (k / (points.length - 1)) * plotW);
  const yAt = (v) => pad.t + (1 - Math.max(0, Math.min(1, v))) * plotH;
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart rate-chart", role: "img", "aria-label": `${title}: ${points.map((p) => `${p.x} ${Math.round(p.y * 100)}%`).join(", ")}` });
  for (const v of [0, 0.25, 0.5, 0.75, 1]) {
    root.append(
      svg("line", { x1: pad.l, x2: W - pad.r, y1: yAt(v), y2: yAt(v), class: "gridline" }),
      svg("text", { x: pad.l - 6, y: yAt(v) + 4, "text-anchor": "end", class: "axis" }, `${v * 100}%`),
    );
  }
  if (points.length > 0) {
    const d = points.map((p, k) => `${k ? "L" : "M"}${xAt(k).toFixed(1)},${yAt(p.y).toFixed(1)}`).join(" ");
    root.append(svg("path", { d, class: "line" }));
    points.forEach((p, k) => {
      root.append(svg("circle", { cx: xAt(k), cy: yAt(p.y), r: 4, class: "point" }, svg("title", {}, `${p.x}: ${Math.round(p.y * 100)}%${p.n !== undefined ? ` of ${p.n}` : ""}`)));
    });
    const labelEvery = Math.max(1, Math.ceil(points.length / 6));
    points.forEach((p, k) => {
      if (k % labelEvery === 0 || k === points.length - 1) {
        const anchor = points.length > 1 && k === points.length - 1 ? "end" : k === 0 && points.length > 1 ? "start" : "middle";
        root.append(svg("text", { x: xAt(k), y: H - pad.b + 18, "text-anchor": anchor, class: "axis" }, String(p.x).slice(0, 10)));
      }
    });
  }
  const rows = points.map((p) => [String(p.x), `${formatNumber(p.y * 100)}%`, p.n !== undefined ? String(p.n) : ""]);
  return h("figure", { class: "chart-figure", "data-chart": "rate" }, h("figcaption", {}, title), root, dataTable(title, ["Period", "Accepted", "Submissions"], rows));
}
