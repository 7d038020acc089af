// "/courses/{course}/assignments/{assignment}/gradebook": staff's table of students × problems,
// a section filter, each cell's rule on hover, an "adjust score" form with the audit trail,
// overrides (extensions, credit, extra attempts) for one student, the selected ones or a section,
// class insight, exports and a bulk regrade. Built once per load from one JSON read; a cell
// click is handled by one listener on the table, so 300 students render without stalling.
import { api, describeError } from "../lib/api.js";
import { barChart } from "../lib/charts.js";
import { clear, fill, h } from "../lib/dom.js";
import { feedbackEditor } from "../lib/feedback.js";
import { verdictLabel } from "../lib/result.js";

const body = document.body.dataset;
const courseId = body.courseId;
const assignmentId = body.assignmentId;
const base = `/api/courses/${courseId}/assignments/${assignmentId}`;

const state = { book: null, dueAt: null, overrides: [], section: "", selected: null, checked: new Set(), titles: {} };

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

function shortDate(iso) {
  const d = new Date(iso);
  const two = (n) => String(n).padStart(2, "0");
  return `${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}`;
}

// "ext. until 12-08 14:00, 80 %, +2 attempts": what the grant changes, in a few words.
function overrideLabel(o) {
  const bits = [];
  if (o.until) bits.push(`ext. until ${shortDate(o.until)}`);
  if (o.credit < 1) bits.push(`${Math.round(o.credit * 100)} %`);
  if (o.extra_attempts) bits.push(`+${o.extra_attempts} attempt${o.extra_attempts === 1 ? "" : "s"}`);
  return bits.join(", ");
}

function overrideChip(o) {
  const label = overrideLabel(o);
  const whose = o.section ? `section ${o.section}: ` : "";
  return h(
    "span",
    { class: "gb-override", "data-override": o.id, title: o.note || "" },
    `${whose}${label}`,
    h("button", { type: "button", class: "gb-override-delete", "data-override": o.id, "aria-label": `Delete override: ${whose}${label}` }, "×"),
  );
}

function overridesCell(row) {
  const own = state.overrides.filter((o) => o.user_id === row.user_id || (o.section && o.section === row.section));
  return h(
    "td",
    {},
    h(
      "div",
      { class: "gb-overrides" },
      own.map(overrideChip),
      h("button", { type: "button", class: "button subtle small gb-override-open", "data-user": row.user_id }, "Extension / override"),
    ),
  );
}

function table(book) {
  const all = h("input", { type: "checkbox", id: "select-all", "aria-label": "Select every student shown" });
  all.addEventListener("change", () => {
    for (const box of document.querySelectorAll("input.gb-select")) {
      box.checked = all.checked;
      const id = Number(box.dataset.user);
      if (all.checked) state.checked.add(id);
      else state.checked.delete(id);
    }
    updateBulk();
  });
  const head = h(
    "tr",
    {},
    h("th", { scope: "col" }, all),
    h("th", { scope: "col" }, "Student"),
    h("th", { scope: "col" }, "Section"),
    book.problems.map((p) => h("th", { scope: "col", title: p.problem_id }, p.title, h("br"), h("span", { class: "note" }, `${points(p.points)} pts`))),
    h("th", { scope: "col" }, `Total (${points(book.max_total)})`),
    h("th", { scope: "col" }, "Overrides"),
  );
  // One fragment appended once: a single layout for the whole table.
  const rows = document.createDocumentFragment();
  for (const row of book.students) {
    rows.append(
      h(
        "tr",
        { class: row.status !== "active" ? "gb-inactive" : null, "data-user": row.user_id },
        h(
          "td",
          {},
          row.status === "active"
            ? h("input", { type: "checkbox", class: "gb-select", "data-user": row.user_id, checked: state.checked.has(row.user_id), "aria-label": `Select ${row.name}` })
            : null,
        ),
        h(
          "th",
          { scope: "row" },
          h("a", { href: `/courses/${courseId}/assignments/${assignmentId}/students/${row.user_id}` }, row.name),
          row.status !== "active" ? h("span", { class: "note" }, ` (${row.status})`) : null,
        ),
        h("td", {}, row.section || ""),
        row.cells.map((cell) => cellButton(row, cell)),
        h("td", { class: "gb-total" }, points(row.total)),
        overridesCell(row),
      ),
    );
  }
  const tbody = h("tbody", {});
  tbody.append(rows);
  const t = h("table", { class: "gb-table", id: "gradebook-table" }, h("thead", {}, head), tbody);
  t.addEventListener("click", (event) => {
    const button = event.target.closest("button.gb-cell");
    if (button) openAdjust(Number(button.dataset.user), button.dataset.problem);
    const grant = event.target.closest("button.gb-override-open");
    if (grant) {
      const row = state.book.students.find((s) => s.user_id === Number(grant.dataset.user));
      if (row) openOverride({ user_id: row.user_id }, row.name);
    }
    const remove = event.target.closest("button.gb-override-delete");
    if (remove) deleteOverride(Number(remove.dataset.override));
  });
  t.addEventListener("change", (event) => {
    const box = event.target.closest("input.gb-select");
    if (!box) return;
    if (box.checked) state.checked.add(Number(box.dataset.user));
    else state.checked.delete(Number(box.dataset.user));
    updateBulk();
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
  say("");
  const panel = document.getElementById("adjust-panel");
  const problem = state.book.problems.find((p) => p.problem_id === problemId);
  const message = h("p", { class: "note", id: "adjust-message", role: "status" });
  const score = h("input", { id: "adjust-score", type: "number", min: "0", max: String(cell.max_points), step: "any", required: true, value: points(cell.points) });
  const comment = h("textarea", { id: "adjust-comment", rows: "2", maxlength: "1000", required: true });
  async function send(value) {
    const text = comment.value.trim();
    if (!text) {
      fill(message, "Say why the score changes (staff only: the audit log; the student reads \"adjusted by staff\").");
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
    h("label", { for: "adjust-comment" }, "Reason: staff only, kept in the audit log (the student reads \"adjusted by staff\"; write to them in the comment below)"),
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
    h("h3", {}, "Comment and note"),
    feedbackEditor(base, { user_id: userId, problem_id: problemId }, "comment", cell.comment, () => reload()),
    feedbackEditor(base, { user_id: userId, problem_id: problemId }, "note", cell.note, () => reload()),
    h("h3", {}, "Audit trail"),
    h("ol", { id: "audit-trail", class: "audit-trail" }, h("li", { class: "note" }, "Loading…")),
  );
  panel.hidden = false;
  score.focus();
  loadTrail(userId, problemId);
}

// The bulk bar: the selected students, or the section the filter shows.
function updateBulk() {
  const bar = document.getElementById("gb-bulk");
  if (!bar || !state.book) return;
  const n = state.checked.size;
  const chosen = h("button", { type: "button", class: "button small", id: "override-selected", disabled: n === 0 }, `Extension / override for ${n} selected`);
  chosen.addEventListener("click", () => openOverride({ user_ids: [...state.checked] }, `${n} selected student${n === 1 ? "" : "s"}`));
  const section = state.section
    ? h("button", { type: "button", class: "button small", id: "override-section", onclick: () => openOverride({ section: state.section }, `section ${state.section}`) }, `Extension / override for section ${state.section}`)
    : null;
  const sectionWide = state.overrides.filter((o) => o.section);
  fill(
    bar,
    chosen,
    section,
    sectionWide.length ? h("span", { class: "gb-section-overrides" }, "Section overrides: ", sectionWide.map(overrideChip)) : null,
  );
  for (const remove of bar.querySelectorAll("button.gb-override-delete")) {
    remove.addEventListener("click", () => deleteOverride(Number(remove.dataset.override)));
  }
}

async function deleteOverride(id) {
  try {
    await api(`${base}/overrides/${id}`, { method: "DELETE" });
    await reload();
    say("Override deleted.");
  } catch (err) {
    say(describeError(err), "tone-bad");
  }
}

// The form for one grant: `target` is {user_id}, {user_ids} or {section}, as the API takes it.
function openOverride(target, who) {
  const panel = document.getElementById("override-panel");
  const message = h("p", { class: "note", id: "override-message", role: "alert" });
  const due = new Date(state.dueAt);
  const week = new Date(due.getTime() + 7 * 24 * 3600 * 1000);
  const local = (d) => new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
  const until = h("input", { id: "override-until", type: "datetime-local", value: local(week) });
  const credit = h("input", { id: "override-credit", type: "number", min: "1", max: "100", step: "any", value: "100", required: true });
  const extra = h("input", { id: "override-attempts", type: "number", min: "0", max: "10000", step: "1", value: "0", required: true });
  const note = h("input", { id: "override-note", type: "text", maxlength: "500" });
  const form = h(
    "form",
    {
      class: "adjust-form",
      id: "override-form",
      onsubmit: async (event) => {
        event.preventDefault();
        const body = { ...target, credit: Number(credit.value) / 100, extra_attempts: Number(extra.value), note: note.value.trim() };
        if (until.value) body.until = new Date(until.value).toISOString();
        try {
          const { data } = await api(`${base}/overrides`, { method: "POST", body });
          panel.hidden = true;
          state.checked.clear();
          await reload();
          say(`Granted ${data.length} override${data.length === 1 ? "" : "s"} to ${who}.`);
        } catch (err) {
          fill(message, describeError(err));
        }
      },
    },
    h("label", { for: "override-until" }, "Until (empty: no extension)"),
    until,
    h("label", { for: "override-credit" }, "Credit until then (%)"),
    credit,
    h("label", { for: "override-attempts" }, "Extra attempts"),
    extra,
    h("label", { for: "override-note" }, "Note"),
    note,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit", class: "button primary small", id: "override-save" }, "Grant"),
      h("button", { type: "button", class: "button subtle small", onclick: () => { panel.hidden = true; } }, "Close"),
    ),
  );
  fill(
    panel,
    h("h2", { id: "override-heading" }, `Extension / override: ${who}`),
    h("p", { class: "note" }, `Due ${due.toLocaleString()}. An extension moves this due date; the late deadlines follow it.`),
    form,
    message,
  );
  panel.hidden = false;
  until.focus();
}

/** Graded attempts per minute around the due date (by arrival), and how long students waited. */
function rushSection(rush) {
  if (!rush) return null;
  const due = new Date(rush.due_at).getTime();
  const busy = rush.per_minute.filter((m) => m.submissions > 0);
  const peak = Math.max(1, ...rush.per_minute.map((m) => m.submissions));
  const wait = (s) => (typeof s === "number" ? `${s < 60 ? s.toFixed(1) + " s" : (s / 60).toFixed(1) + " min"}` : "–");
  return h(
    "section",
    { id: "insight-rush", class: "insight-rush" },
    h("h3", {}, "The rush around the due date"),
    h("p", {}, `Arrival to verdict: median ${wait(rush.wait_p50_seconds)}, 95 % within ${wait(rush.wait_p95_seconds)} · queued now: ${rush.queued_now}`),
    busy.length === 0
      ? h("p", { class: "note" }, "No graded attempt in the 30 minutes before the due date or the 10 after.")
      : h(
          "table",
          { class: "rush-minutes" },
          h("caption", {}, "Submissions per minute (by arrival)"),
          h("tbody", {}, busy.map((m) => {
            const offset = Math.round((new Date(m.minute).getTime() - due) / 60000);
            const label = offset < 0 ? `${-offset} min before` : offset === 0 ? "due minute" : `${offset} min after`;
            return h("tr", { "data-minute": m.minute }, h("th", { scope: "row" }, label), h("td", { class: "num" }, String(m.submissions)), h("td", {}, h("span", { class: "bar", style: `display:inline-block;height:0.7em;background:currentColor;width:${Math.round((100 * m.submissions) / peak)}px` })));
          })),
        ),
  );
}

// The statistics read the latest reports (once per change: the server keeps them until their
// inputs change): fetched when asked for, not with each load.
async function loadStatistics(button) {
  button.disabled = true;
  try {
    const { data } = await api(`${base}/statistics${query()}`);
    for (const st of data.problems) {
      const slot = document.querySelector(`.insight-stats-slot[data-problem="${CSS.escape(st.problem_id)}"]`);
      if (slot) fill(slot, statsBlock(st));
    }
    button.remove();
  } catch (err) {
    button.disabled = false;
    button.after(h("p", { class: "note tone-bad" }, describeError(err)));
  }
}

function insightPanel(insight) {
  state.titles = Object.fromEntries(insight.problems.map((p) => [p.problem_id, Object.fromEntries(p.diagnoses.map((d) => [d.code, d.title]))]));
  const statsButton = h("button", { type: "button", class: "button small", id: "load-statistics" }, "Show statistics (histograms, pass rates)");
  statsButton.addEventListener("click", () => loadStatistics(statsButton));
  return [
    h("h2", { id: "insight-heading" }, "Insight: what to re-teach"),
    rushSection(insight.rush),
    statsButton,
    h("p", { class: "note" }, `From each student's latest graded attempt (${insight.students} students).`),
    insight.problems.map((p) =>
      h(
        "section",
        { class: "insight-problem", "data-problem": p.problem_id },
        h("h3", {}, p.title),
        h("p", {}, `${p.attempted} attempted · ${p.accepted} accepted · ${p.stuck} stuck`),
        h(
          "p",
          {},
          h(
            "a",
            { class: "insight-similarity", href: `/courses/${courseId}/assignments/${assignmentId}/problems/${encodeURIComponent(p.problem_id)}/similarity` },
            "Similarity report",
          ),
        ),
        h("div", { class: "insight-stats-slot", "data-problem": p.problem_id }),
        p.diagnoses.length
          ? h(
              "ul",
              {},
              p.diagnoses.slice(0, 5).map((d) =>
                h("li", { "data-code": d.code }, h("strong", {}, d.title), ` (${d.code}): ${d.stuck} stuck of ${d.students} `, hintButton(p, d)),
              ),
            )
          : h("p", { class: "note" }, "No diagnosis among the latest attempts."),
      ),
    ),
  ];
}

// "Write to these students": the course's hint for a diagnosis; every student whose latest
// graded attempt has it reads it, now and after later submissions, until they fix it.
function hintButton(problem, diagnosis) {
  const existing = (state.hints || []).find((x) => x.problem_id === problem.problem_id && x.code === diagnosis.code);
  const button = h("button", { type: "button", class: "button subtle small hint-open", "data-code": diagnosis.code }, existing ? "Edit hint" : "Write to these students");
  button.addEventListener("click", () => {
    const id = `hint-${problem.problem_id}-${diagnosis.code}`;
    const text = h("textarea", { id, rows: "4", maxlength: "8000", class: "hint-text" }, existing ? existing.body : "");
    const status = h("p", { class: "note hint-status", role: "status" });
    const save = h("button", { type: "button", class: "button primary small hint-save" }, "Send to every student with it");
    save.addEventListener("click", async () => {
      try {
        await api(`${base}/hints`, { method: "PUT", body: { problem_id: problem.problem_id, code: diagnosis.code, body: text.value } });
        await loadHints();
        const now = (state.hints || []).find((x) => x.problem_id === problem.problem_id && x.code === diagnosis.code);
        const n = diagnosis.students;
        fill(status, now ? `Saved: the ${n} student${n === 1 ? "" : "s"} with it read it now; later ones with this diagnosis will too.` : "Withdrawn.");
      } catch (err) {
        fill(status, describeError(err));
      }
    });
    button.replaceWith(
      h(
        "div",
        { class: "hint-form" },
        h("label", { for: id }, `Hint for "${diagnosis.title}" (markdown; the students whose latest attempt has it read it; empty: withdraw)`),
        text,
        save,
        status,
      ),
    );
    text.focus();
  });
  return button;
}

async function loadHints() {
  try {
    state.hints = (await api(`${base}/hints`)).data.hints;
  } catch {
    state.hints = [];
  }
}

// A problem's score histogram (a picture, with its numbers) and its headline figures.
function statsBlock(st) {
  if (!st) return null;
  const bins = st.histogram.map((n, i) => ({ label: `${i * 10}–${(i + 1) * 10} %`, value: n }));
  const hidden = st.cases.filter((c) => c.hidden);
  const worst = hidden.length ? hidden.reduce((a, c) => (c.passed / c.total < a.passed / a.total ? c : a)) : null;
  return h(
    "div",
    { class: "insight-stats", "data-problem": st.problem_id },
    barChart(bins, { title: `Scores of ${st.graded} students (share of ${points(st.max_points)} points)` }),
    h(
      "p",
      { class: "note" },
      `Accepted: ${st.accepted}`,
      st.median_attempts_until_accepted !== null ? ` · median ${st.median_attempts_until_accepted} attempts until accepted` : "",
      st.median_hours_to_first_accepted !== null ? ` · ${st.median_hours_to_first_accepted} h from release to the first accepted` : "",
      worst ? ` · hardest hidden case: #${worst.index + 1} (${worst.passed} of ${worst.total} pass)` : "",
    ),
    weekTable(st),
  );
}

// "This week against last": per diagnosis, the graded attempts that had it in the last seven
// days and in the seven before (the API's `week`, most frequent this week first). Narrow: the
// panel is a sidebar; the code is in each title's tooltip.
function weekTable(st) {
  if (!st.week.length) return h("p", { class: "note insight-week-empty" }, "No diagnosis in the last two weeks.");
  const titles = (state.titles && state.titles[st.problem_id]) || {};
  const change = (t) => {
    const d = t.last_7_days - t.previous_7_days;
    return d > 0 ? `+${d}` : d < 0 ? `−${-d}` : "=";
  };
  return h(
    "table",
    { class: "insight-week", "data-problem": st.problem_id },
    h("caption", {}, "This week against last (graded attempts with each diagnosis)"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Diagnosis"), h("th", { scope: "col", title: "last 7 days" }, "7 days"), h("th", { scope: "col", title: "the 7 days before" }, "before"), h("th", { scope: "col", title: "change" }, "±"))),
    h(
      "tbody",
      {},
      st.week.slice(0, 8).map((t) =>
        h(
          "tr",
          { "data-code": t.code },
          h("th", { scope: "row", title: t.code }, titles[t.code] || t.code),
          h("td", {}, String(t.last_7_days)),
          h("td", {}, String(t.previous_7_days)),
          h("td", { class: t.last_7_days > t.previous_7_days ? "week-up" : t.last_7_days < t.previous_7_days ? "week-down" : "" }, change(t)),
        ),
      ),
    ),
  );
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
    " ",
    h("a", { class: "button small", id: "export-statistics", href: `${base}/statistics.csv${q}`, download: "" }, "Statistics CSV"),
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
    const [{ data }] = await Promise.all([api(`${base}/insight${query()}`), loadHints()]);
    fill(panel, insightPanel(data));
  } catch (err) {
    fill(panel, h("p", { class: "note tone-bad" }, describeError(err)));
  }
}

// Marks for the page's own timing (read by the browser tests): the gradebook's read, then its
// render. The insight panel follows without holding the table back.
async function reload() {
  performance.mark("gradebook-fetch-start");
  const [{ data: book }, { data: overrides }, assignment] = await Promise.all([
    api(`${base}/gradebook${query()}`),
    api(`${base}/overrides`),
    state.dueAt ? null : api(base),
  ]);
  if (assignment) state.dueAt = assignment.data.due_at;
  performance.mark("gradebook-fetched");
  state.book = book;
  state.overrides = overrides;
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
  updateBulk();
  performance.mark("gradebook-rendered");
  loadInsight();
}

async function main() {
  const root = document.getElementById("main");
  const select = h("select", { id: "section-filter" }, h("option", { value: "" }, "All sections"));
  select.addEventListener("change", async () => {
    state.section = select.value;
    state.checked.clear();
    document.getElementById("adjust-panel").hidden = true;
    document.getElementById("override-panel").hidden = true;
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
    h("div", { id: "gb-bulk", class: "gb-toolbar" }),
    h("div", { id: "gb-status", role: "status" }),
    h("section", { id: "adjust-panel", class: "adjust-panel", "aria-labelledby": "adjust-heading", hidden: true }),
    h("section", { id: "override-panel", class: "adjust-panel", "aria-labelledby": "override-heading", hidden: true }),
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
