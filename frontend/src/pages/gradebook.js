// "/courses/{course}/assignments/{assignment}/gradebook": staff's table of students × problems,
// a section filter, each cell's rule on hover, an "adjust score" form with the audit trail,
// class insight, exports and a bulk regrade. Built once per load from one JSON read; a cell
// click is handled by one listener on the table, so 300 students render without stalling.
import { api, describeError } from "../lib/api.js";
import { clear, fill, h } from "../lib/dom.js";
import { verdictLabel } from "../lib/result.js";

const body = document.body.dataset;
const courseId = body.courseId;
const assignmentId = body.assignmentId;
const base = `/api/courses/${courseId}/assignments/${assignmentId}`;

const state = { book: null, section: "", selected: null };

function points(x) {
  if (x === null || x === undefined) return "";
  return String(Math.round(x * 100) / 100);
}

function query() {
  return state.section ? `?section=${encodeURIComponent(state.section)}` : "";
}

function say(text, tone = "") {
  fill(document.getElementById("gb-status"), text ? h("p", { class: `note ${tone}` }, text) : null);
}

function cellTitle(cell) {
  const bits = [cell.rule];
  const allowed = cell.attempts_allowed === null ? "" : ` of ${cell.attempts_allowed}`;
  bits.push(`${cell.attempts_used}${allowed} attempt${cell.attempts_used === 1 && !allowed ? "" : "s"}${cell.pending ? `, ${cell.pending} being graded` : ""}`);
  if (cell.last_verdict) bits.push(`last: ${verdictLabel(cell.last_verdict)}`);
  if (cell.diagnosis) bits.push(`diagnosis: ${cell.diagnosis.title} (${cell.diagnosis.code})`);
  return bits.join("\n");
}

function cellButton(row, cell) {
  const tone = cell.last_verdict === "accepted" ? "good" : cell.last_verdict ? "bad" : "none";
  return h(
    "td",
    {},
    h(
      "button",
      {
        type: "button",
        class: `gb-cell tone-${tone}${cell.adjusted ? " adjusted" : ""}`,
        title: cellTitle(cell),
        "data-user": row.user_id,
        "data-problem": cell.problem_id,
        "aria-label": `${row.name}, ${cell.problem_id}: ${points(cell.points)} points. ${cell.rule}`,
      },
      points(cell.points),
      cell.adjusted ? h("span", { class: "gb-mark", "aria-hidden": "true" }, "✎") : null,
      h("span", { class: "gb-attempts" }, cell.attempts_used ? `${cell.attempts_used}×` : "–"),
    ),
  );
}

function table(book) {
  const head = h(
    "tr",
    {},
    h("th", { scope: "col" }, "Student"),
    h("th", { scope: "col" }, "Section"),
    book.problems.map((p) => h("th", { scope: "col", title: p.problem_id }, p.title, h("br"), h("span", { class: "note" }, `${points(p.points)} pts`))),
    h("th", { scope: "col" }, `Total (${points(book.max_total)})`),
  );
  // One fragment appended once: a single layout for the whole table.
  const rows = document.createDocumentFragment();
  for (const row of book.students) {
    rows.append(
      h(
        "tr",
        { class: row.status !== "active" ? "gb-inactive" : null },
        h(
          "th",
          { scope: "row" },
          h("a", { href: `/courses/${courseId}/assignments/${assignmentId}/students/${row.user_id}` }, row.name),
          row.status !== "active" ? h("span", { class: "note" }, ` (${row.status})`) : null,
        ),
        h("td", {}, row.section || ""),
        row.cells.map((cell) => cellButton(row, cell)),
        h("td", { class: "gb-total" }, points(row.total)),
      ),
    );
  }
  const tbody = h("tbody", {});
  tbody.append(rows);
  const t = h("table", { class: "gb-table", id: "gradebook-table" }, h("thead", {}, head), tbody);
  t.addEventListener("click", (event) => {
    const button = event.target.closest("button.gb-cell");
    if (button) openAdjust(Number(button.dataset.user), button.dataset.problem);
  });
  return t;
}

function findCell(userId, problemId) {
  const row = state.book.students.find((s) => s.user_id === userId);
  if (!row) return null;
  return { row, cell: row.cells.find((c) => c.problem_id === problemId) };
}

async function loadTrail(userId, problemId) {
  const list = document.getElementById("audit-trail");
  try {
    const { data } = await api(`${base}/adjustments?user_id=${userId}`);
    const entries = data.adjustments.filter((a) => a.problem_id === problemId);
    fill(
      list,
      entries.length === 0
        ? h("li", { class: "note" }, "No adjustment yet.")
        : entries.map((a) =>
            h(
              "li",
              { class: "audit-entry" },
              h("time", { datetime: a.created_at }, new Date(a.created_at).toLocaleString()),
              ` ${a.created_by_name || "someone"}: ${a.old_score === null ? "–" : points(a.old_score)} → `,
              a.score === null ? "computed score" : points(a.score),
              h("q", {}, a.comment),
            ),
          ),
    );
  } catch (err) {
    fill(list, h("li", { class: "note tone-bad" }, describeError(err)));
  }
}

function openAdjust(userId, problemId) {
  const found = findCell(userId, problemId);
  if (!found) return;
  const { row, cell } = found;
  state.selected = { userId, problemId };
  const panel = document.getElementById("adjust-panel");
  const problem = state.book.problems.find((p) => p.problem_id === problemId);
  const message = h("p", { class: "note", id: "adjust-message", role: "status" });
  const score = h("input", { id: "adjust-score", type: "number", min: "0", max: String(cell.max_points), step: "any", required: true, value: points(cell.points) });
  const comment = h("textarea", { id: "adjust-comment", rows: "2", maxlength: "1000", required: true });
  async function send(value) {
    const text = comment.value.trim();
    if (!text) {
      fill(message, "Say why the score changes (the comment is kept in the audit log).");
      comment.focus();
      return;
    }
    try {
      await api(`${base}/adjustments`, { method: "POST", body: { user_id: userId, problem_id: problemId, score: value, comment: text } });
      await reload();
      openAdjust(userId, problemId);
      fill(document.getElementById("adjust-message"), "Saved.");
    } catch (err) {
      fill(message, describeError(err));
    }
  }
  const form = h(
    "form",
    {
      class: "adjust-form",
      onsubmit: (event) => {
        event.preventDefault();
        send(Number(score.value));
      },
    },
    h("label", { for: "adjust-score" }, `Points (0 to ${points(cell.max_points)})`),
    score,
    h("label", { for: "adjust-comment" }, "Why (kept in the audit log)"),
    comment,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit", class: "button primary small", id: "adjust-save" }, "Save score"),
      cell.adjusted ? h("button", { type: "button", class: "button small", id: "adjust-clear", onclick: () => send(null) }, "Back to the computed score") : null,
      h("button", { type: "button", class: "button subtle small", onclick: () => { panel.hidden = true; } }, "Close"),
    ),
  );
  fill(
    panel,
    h("h2", { id: "adjust-heading" }, `${row.name} · ${problem ? problem.title : problemId}`),
    h("p", {}, h("strong", { id: "adjust-current" }, `${points(cell.points)} of ${points(cell.max_points)}`), ` — ${cell.rule}`),
    cell.adjusted ? h("p", { class: "note" }, `Computed under the policy: ${points(cell.computed_points)}.`) : null,
    h("p", { class: "note" }, `${cell.attempts_used} attempts${cell.last_verdict ? `; last: ${verdictLabel(cell.last_verdict)}` : ""}${cell.diagnosis ? `; ${cell.diagnosis.title}` : ""}.`),
    form,
    message,
    h("h3", {}, "Audit trail"),
    h("ol", { id: "audit-trail", class: "audit-trail" }, h("li", { class: "note" }, "Loading…")),
  );
  panel.hidden = false;
  score.focus();
  loadTrail(userId, problemId);
}

function insightPanel(insight) {
  return [
    h("h2", { id: "insight-heading" }, "Insight: what to re-teach"),
    h("p", { class: "note" }, `From each student's latest graded attempt (${insight.students} students).`),
    insight.problems.map((p) =>
      h(
        "section",
        { class: "insight-problem", "data-problem": p.problem_id },
        h("h3", {}, p.title),
        h("p", {}, `${p.attempted} attempted · ${p.accepted} accepted · ${p.stuck} stuck`),
        p.diagnoses.length
          ? h(
              "ul",
              {},
              p.diagnoses.slice(0, 5).map((d) =>
                h("li", { "data-code": d.code }, h("strong", {}, d.title), ` (${d.code}): ${d.stuck} stuck of ${d.students}`),
              ),
            )
          : h("p", { class: "note" }, "No diagnosis among the latest attempts."),
      ),
    ),
  ];
}

function exportLinks() {
  const q = query();
  return h(
    "p",
    { class: "gb-exports" },
    "Export: ",
    h("a", { class: "button small", id: "export-gradebook", href: `${base}/gradebook.csv${q}`, download: "" }, "Gradebook CSV"),
    " ",
    h("a", { class: "button small", id: "export-attempts", href: `${base}/attempts.csv${q}`, download: "" }, "Attempts CSV"),
    " ",
    h("a", { class: "button small", id: "export-canvas", href: `${base}/canvas.csv${q}`, download: "" }, "Canvas CSV"),
  );
}

function regradeBox() {
  const box = h("div", { class: "regrade", id: "regrade-box" });
  const start = h("button", { type: "button", class: "button small danger", id: "regrade-all" }, "Regrade all");
  start.addEventListener("click", () => {
    const graded = state.book.students.reduce((n, s) => n + s.cells.reduce((m, c) => m + c.attempts_used, 0), 0);
    fill(
      box,
      h("p", {}, `Grade all ${graded} graded submissions of this assignment again on the current test cases? Scores follow the new results.`),
      h(
        "button",
        {
          type: "button",
          class: "button small danger",
          id: "regrade-confirm",
          onclick: async () => {
            try {
              const { data } = await api(`${base}/regrade`, { method: "POST" });
              const full = data.queue_full ? " The queue is full: run it again later for the rest." : "";
              fill(box, h("p", { role: "status", id: "regrade-result" }, `Queued ${data.queued} for regrading; ${data.skipped} skipped.${full}`), start);
            } catch (err) {
              fill(box, h("p", { role: "alert", class: "tone-bad" }, describeError(err)), start);
            }
          },
        },
        "Yes, regrade",
      ),
      " ",
      h("button", { type: "button", class: "button small", onclick: () => fill(box, start) }, "Cancel"),
    );
  });
  return fill(box, start);
}

async function loadInsight() {
  const panel = document.getElementById("insight");
  try {
    const { data } = await api(`${base}/insight${query()}`);
    fill(panel, insightPanel(data));
  } catch (err) {
    fill(panel, h("p", { class: "note tone-bad" }, describeError(err)));
  }
}

// Marks for the page's own timing (read by the browser tests): the gradebook's read, then its
// render. The insight panel follows without holding the table back.
async function reload() {
  performance.mark("gradebook-fetch-start");
  const { data: book } = await api(`${base}/gradebook${query()}`);
  performance.mark("gradebook-fetched");
  state.book = book;
  document.title = `Gradebook: ${book.title} · TensorJudge`;
  fill(document.getElementById("gb-title"), `Gradebook: ${book.title}`);
  const count = book.students.length;
  fill(
    document.getElementById("gb-summary"),
    `${count} student${count === 1 ? "" : "s"} · ${book.problems.length} problems · ${book.scoring} attempt counts · max ${points(book.max_total)} points`,
  );
  const select = document.getElementById("section-filter");
  if (select.options.length === 1) {
    for (const s of book.sections) select.append(h("option", { value: s }, s));
  }
  fill(document.getElementById("gb-exports"), exportLinks());
  fill(document.getElementById("gb-table-wrap"), count ? table(book) : h("p", { class: "note" }, "No students in this view."));
  performance.mark("gradebook-rendered");
  loadInsight();
}

async function main() {
  const root = document.getElementById("main");
  const select = h("select", { id: "section-filter" }, h("option", { value: "" }, "All sections"));
  select.addEventListener("change", async () => {
    state.section = select.value;
    document.getElementById("adjust-panel").hidden = true;
    say("");
    try {
      await reload();
    } catch (err) {
      say(describeError(err), "tone-bad");
    }
  });
  fill(
    root,
    h("p", {}, h("a", { href: `/courses/${courseId}/assignments/${assignmentId}` }, "← Assignment")),
    h("h1", { id: "gb-title" }, "Gradebook"),
    h("p", { class: "note", id: "gb-summary" }),
    h("div", { class: "gb-toolbar" }, h("label", { for: "section-filter" }, "Section "), select, h("div", { id: "gb-exports" }), regradeBox()),
    h("div", { id: "gb-status", role: "status" }),
    h("section", { id: "adjust-panel", class: "adjust-panel", "aria-labelledby": "adjust-heading", hidden: true }),
    h("div", { class: "gb-layout" }, h("div", { id: "gb-table-wrap", class: "gb-table-wrap" }, h("p", { class: "note" }, "Loading…")), h("aside", { id: "insight", class: "insight", "aria-labelledby": "insight-heading" })),
  );
  try {
    await reload();
  } catch (err) {
    clear(document.getElementById("gb-table-wrap"));
    const signIn = err.status === 401 ? h("a", { href: `/login?next=${encodeURIComponent(location.pathname)}` }, " Sign in") : null;
    fill(document.getElementById("gb-status"), h("p", { role: "alert", class: "tone-bad" }, describeError(err), signIn));
  }
}

main();
