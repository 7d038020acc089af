// Staff's comments, notes and diagnosis hints: markdown the server rendered and sanitized
// (app/gradebook/markdown.py). The HTML is parsed in an inert document and only an allowlist of
// elements and attributes is copied over, so a server bug still cannot put a script or a
// remote image in a student's page.
import { api, describeError } from "./api.js";
import { fill, h } from "./dom.js";

const TAGS = new Set(["P", "STRONG", "EM", "CODE", "PRE", "UL", "OL", "LI", "A", "IMG", "BLOCKQUOTE", "H1", "H2", "H3", "H4", "H5", "H6", "HR", "BR", "SPAN"]);
const ATTRS = { A: ["href", "rel"], IMG: ["src", "alt"], SPAN: ["class"], OL: ["start"] };

function safeUrl(tag, value) {
  if (tag === "IMG") return value.startsWith("/") && !value.startsWith("//") ? value : null;
  return /^(https?:|mailto:|\/(?!\/)|#)/i.test(value) ? value : "#";
}

function copy(node) {
  if (node.nodeType === Node.TEXT_NODE) return document.createTextNode(node.textContent);
  if (node.nodeType !== Node.ELEMENT_NODE) return null;
  const children = [...node.childNodes].map(copy).filter(Boolean);
  if (!TAGS.has(node.tagName)) return document.createTextNode(node.textContent);
  const el = document.createElement(node.tagName.toLowerCase());
  for (const name of ATTRS[node.tagName] || []) {
    let value = node.getAttribute(name);
    if (value === null) continue;
    if (name === "href" || name === "src") value = safeUrl(node.tagName, value);
    if (value !== null) el.setAttribute(name, value);
  }
  el.append(...children);
  return el;
}

/** The sanitized HTML of a comment as nodes. */
export function markdownNodes(html) {
  const doc = new DOMParser().parseFromString(html, "text/html");
  return [...doc.body.childNodes].map(copy).filter(Boolean);
}

function when(iso) {
  return h("time", { datetime: iso }, new Date(iso).toLocaleString());
}

/** A comment or note with its author and time; `label` says whose eyes it is for. */
export function feedbackView(item, label, attrs = {}) {
  if (!item) return null;
  return h(
    "div",
    { class: `feedback feedback-${item.kind || "hint"}`, ...attrs },
    h("p", { class: "note" }, `${label} · ${item.created_by_name || item.updated_by_name || "staff"} · `, when(item.created_at || item.updated_at)),
    h("div", { class: "feedback-body" }, markdownNodes(item.html)),
  );
}

/** Staff's editor for one field: `kind` "comment" (the student reads it) or "note". */
export function feedbackEditor(base, target, kind, current, onSaved) {
  const id = `fb-${kind}-${target.submission_id || "problem"}-${target.problem_id}`;
  const label = kind === "comment" ? "Comment to the student (they read it, with your name and the time; markdown)" : "Staff note (never shown to the student)";
  const text = h("textarea", { id, rows: "3", maxlength: "8000", "data-kind": kind }, current ? current.body : "");
  const status = h("span", { class: "note", role: "status" });
  const save = h("button", { type: "button", class: "button small", "data-save": kind }, kind === "comment" ? "Save comment" : "Save note");
  save.addEventListener("click", async () => {
    try {
      const { data } = await api(`${base}/feedback`, { method: "POST", body: { ...target, kind, body: text.value } });
      fill(status, data.body ? "Saved." : "Cleared.");
      if (onSaved) onSaved(data);
    } catch (err) {
      fill(status, describeError(err));
    }
  });
  return h("div", { class: `feedback-editor feedback-editor-${kind}` }, h("label", { for: id }, label), text, h("div", { class: "actions" }, save, " ", status));
}
