// "/courses/{course}/assignments/{assignment}/problems/{problem}/similarity": for staff, pairs of
// students' latest graded attempts ranked by evidence (shared distinctive code, the same rare
// diagnoses or failures), and a side-by-side view of one pair with the shared lines marked.
// Worded as evidence for a person to weigh: the page never says who copied.
import { api, describeError } from "../lib/api.js";
import { fill, h } from "../lib/dom.js";

const body = document.body.dataset;
const base = `/api/courses/${body.courseId}/assignments/${body.assignmentId}/problems/${encodeURIComponent(body.problemId)}/similarity`;
// How often the page asks again while the report is being computed.
const POLL_MS = 1500;

function status(text, tone = "") {
  fill(document.getElementById("sim-status"), text ? h("p", { class: `note ${tone}` }, text) : null);
}

function percent(x) {
  return `${Math.round(x * 100)}%`;
}

function pairRow(pair) {
  return h(
    "tr",
    { "data-rank": pair.rank, class: pair.flagged ? "sim-flagged" : "" },
    h("td", {}, String(pair.rank)),
    h("td", {}, `${pair.a_name} · ${pair.b_name}`),
    h("td", {}, pair.code_share ? percent(pair.code_share) : "–"),
    h("td", {}, h("ul", { class: "sim-evidence" }, pair.evidence.map((e) => h("li", { "data-kind": e.kind }, e.text)))),
    h("td", {}, h("button", { type: "button", class: "button small", onclick: () => openPair(pair.rank) }, "Side by side")),
  );
}

function marked(code, ranges) {
  const shared = (n) => ranges.some(([first, last]) => n >= first && n <= last);
  return h(
    "ol",
    { class: "sim-code" },
    code.split("\n").map((line, i) =>
      h("li", { class: shared(i + 1) ? "sim-shared" : "" }, h("code", {}, line || " ")),
    ),
  );
}

async function openPair(rank) {
  const view = document.getElementById("sim-pair");
  try {
    const { data } = await api(`${base}/pairs/${rank}`);
    const p = data.pair;
    fill(
      view,
      h("h2", { id: "sim-pair-heading" }, `Pair ${p.rank}: ${p.a_name} and ${p.b_name}`),
      h("p", { class: "note" }, "Highlighted lines are in both, after names, comments and the starter code are set aside."),
      h(
        "div",
        { class: "sim-side" },
        h("section", { "aria-label": p.a_name }, h("h3", {}, p.a_name), marked(data.a_code, p.a_lines)),
        h("section", { "aria-label": p.b_name }, h("h3", {}, p.b_name), marked(data.b_code, p.b_lines)),
      ),
    );
    view.scrollIntoView();
  } catch (err) {
    fill(view, h("p", { role: "alert", class: "tone-bad" }, describeError(err)));
  }
}

function render(report) {
  const pairs = report.pairs;
  fill(
    document.getElementById("sim-report"),
    h("p", { class: "note" }, `${report.note} From each student's latest graded attempt (${report.students} students).`),
    pairs.length
      ? h(
          "table",
          { class: "sim-pairs", id: "sim-pairs" },
          h("thead", {}, h("tr", {}, ["Rank", "Students", "Shared code", "Evidence", ""].map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, pairs.map(pairRow)),
        )
      : h("p", { id: "sim-none" }, "No pair stands out: nothing two students share is unusual in this class."),
  );
}

async function load() {
  const { data } = await api(base);
  if (data.status === "queued" || data.status === "running") {
    status(`The report is being computed (${data.status})…`);
    setTimeout(() => load().catch(showError), POLL_MS);
    return;
  }
  if (data.status === "none") {
    status("No report yet for this problem.");
    return;
  }
  if (data.status === "failed") {
    status(`The report failed: ${data.error}`, "tone-bad");
    return;
  }
  status(`Computed ${new Date(data.finished_at).toLocaleString()}.`);
  render(data);
}

function showError(err) {
  fill(document.getElementById("sim-status"), h("p", { role: "alert", class: "tone-bad" }, describeError(err)));
}

async function compute() {
  try {
    await api(base, { method: "POST" });
    await load();
  } catch (err) {
    showError(err);
  }
}

function start() {
  fill(
    document.getElementById("main"),
    h("h1", {}, `Similarity report: ${body.problemId}`),
    h(
      "p",
      {},
      h("a", { href: `/courses/${body.courseId}/assignments/${body.assignmentId}/gradebook` }, "Back to the gradebook"),
      " ",
      h("button", { type: "button", class: "button small", id: "sim-compute", onclick: compute }, "Compute again"),
    ),
    h("div", { id: "sim-status", role: "status" }),
    h("div", { id: "sim-report" }),
    h("section", { id: "sim-pair", "aria-live": "polite" }),
  );
  load().catch(showError);
}

start();
