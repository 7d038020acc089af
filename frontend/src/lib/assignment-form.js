// The instructors' assignment form: every setting of an assignment, empty for a new one or filled
// from one to change. It sends the whole assignment (POST, or PATCH with every field) and leaves
// the judging to the API: its 422 is shown beside the form, next to the field it names, and
// nothing typed is lost.
import { ApiError, api } from "./api.js";
import { h } from "./dom.js";

export const FEEDBACK_POLICIES = [
  ["visible", "Visible", "students see their full reports, hidden cases included"],
  ["summary", "Summary", "public cases in full, hidden cases only as a count passed"],
  ["after_due_date", "After the due date", "a summary until the student's due date, full reports after it"],
  ["hidden", "Hidden", "verdicts only, until you publish the feedback"],
];

const pad = (n) => String(n).padStart(2, "0");

// datetime-local speaks the browser's zone without saying which; the API wants the zone said.
export function localToIso(value) {
  if (!value) return null;
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return value; // the API names the field
  const offset = -d.getTimezoneOffset();
  const sign = offset >= 0 ? "+" : "-";
  const abs = Math.abs(offset);
  return `${value.length === 16 ? `${value}:00` : value}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

export function isoToLocal(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

// "0, 5, 10" (percent) -> [0, 0.05, 0.1]; a word that is not a number stays as it is, for the
// API to refuse with the field's name.
function percents(text) {
  return text
    .split(/[,;\s]+/)
    .filter(Boolean)
    .map((word) => {
      const n = Number(word.replace(/%$/, ""));
      return Number.isFinite(n) ? Math.round(n * 1e6) / 1e8 : word;
    });
}

const percentText = (fractions) => fractions.map((f) => String(Math.round(f * 1e8) / 1e6)).join(", ");

function integerOrNull(value) {
  if (value.trim() === "") return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : value;
}

let formCount = 0;

/**
 * assignmentForm({courseId, problems, assignment?, onSaved, onCancel}) -> HTMLFormElement
 * `problems`: GET /api/problems; `assignment`: the one to change (absent: a new one).
 */
export function assignmentForm({ courseId, problems, assignment = null, onSaved, onCancel }) {
  const uid = `af${++formCount}`;
  const a = assignment;
  const id = (name) => `${uid}-${name}`;
  const error = h("p", { class: "message error", id: id("error"), role: "alert" });

  const field = (name, label, input, help = null) =>
    h("div", { class: "field" }, h("label", { for: id(name) }, label), input, help ? h("span", { class: "help", id: id(`${name}-help`) }, help) : null);

  const title = h("input", { id: id("title"), name: "title", required: true, maxlength: "200", size: "40", value: a ? a.title : "" });

  // ---- problems: one row each, added and removed
  const problemRows = h("tbody", {});
  let rowCount = 0;
  const addProblem = (entry = null) => {
    const n = ++rowCount;
    const select = h(
      "select",
      { id: id(`problem-${n}`), class: "problem-select", "aria-label": `Problem ${n}` },
      h("option", { value: "" }, "— choose —"),
      problems.map((p) => h("option", { value: p.id, selected: entry && entry.problem_id === p.id }, p.title)),
    );
    const points = h("input", { type: "number", min: "0", step: "any", class: "problem-points", "aria-label": `Points of problem ${n}`, value: entry ? String(entry.points) : "10", size: "6" });
    const feedback = h(
      "select",
      { class: "problem-feedback", "aria-label": `Feedback of problem ${n}` },
      h("option", { value: "" }, "the assignment's"),
      FEEDBACK_POLICIES.map(([value, label]) => h("option", { value, selected: entry && entry.feedback === value }, label)),
    );
    const row = h(
      "tr",
      { class: "problem-row" },
      h("td", {}, select),
      h("td", {}, points),
      h("td", {}, feedback),
      h("td", {}, h("button", { type: "button", class: "button small", "aria-label": `Remove problem ${n}`, onclick: () => row.remove() }, "Remove")),
    );
    problemRows.append(row);
    return row;
  };
  ((a && a.problems) || [null]).forEach((p) => addProblem(p));

  // ---- dates
  const release = h("input", { type: "datetime-local", id: id("release"), value: a ? isoToLocal(a.release_at) : "" });
  const due = h("input", { type: "datetime-local", id: id("due"), required: true, value: a ? isoToLocal(a.due_at) : "" });
  const lateRows = h("tbody", {});
  let lateCount = 0;
  const addLate = (d = null) => {
    const n = ++lateCount;
    const until = h("input", { type: "datetime-local", class: "late-until", "aria-label": `Later deadline ${n}`, value: d ? isoToLocal(d.until) : "" });
    const credit = h("input", { type: "number", min: "1", max: "100", step: "any", class: "late-credit", "aria-label": `Credit until later deadline ${n} (%)`, value: d ? String(Math.round(d.credit * 1e6) / 1e4) : "80", size: "5" });
    const row = h(
      "tr",
      { class: "late-row" },
      h("td", {}, until),
      h("td", {}, credit, " %"),
      h("td", {}, h("button", { type: "button", class: "button small", "aria-label": `Remove later deadline ${n}`, onclick: () => row.remove() }, "Remove")),
    );
    lateRows.append(row);
  };
  ((a && a.late_deadlines) || []).forEach((d) => addLate(d));

  const radios = (name, legend, choices, current) =>
    h(
      "fieldset",
      { class: "choices" },
      h("legend", {}, legend),
      choices.map(([value, label, help]) =>
        h(
          "div",
          { class: "choice" },
          h("input", { type: "radio", name: `${uid}-${name}`, id: id(`${name}-${value}`), value, checked: value === current }),
          h("label", { for: id(`${name}-${value}`) }, label),
          help ? h("span", { class: "help" }, ` — ${help}`) : null,
        ),
      ),
    );
  const chosen = (form, name) => form.querySelector(`input[name="${uid}-${name}"]:checked`).value;

  const afterClose = radios("after-close", "After the last deadline", [["closed", "Closed", "graded submissions are refused"], ["practice", "Practice", "graded, for no credit and no attempt"]], a ? a.after_close : "closed");
  const scoring = radios("scoring", "Scoring", [["best", "Best", "a student's best attempt counts"], ["last", "Last", "their last attempt counts"]], a ? a.scoring : "best");
  const feedback = radios("feedback", "Feedback", FEEDBACK_POLICIES, a ? a.feedback : "summary");

  const hideScores = h("input", { type: "checkbox", id: id("hide-scores"), checked: a ? a.hide_scores : false });
  const perStudent = h("input", { type: "checkbox", id: id("per-student"), checked: a ? a.per_student_cases : false });
  const maxAttempts = h("input", { type: "number", id: id("max-attempts"), min: "1", step: "1", size: "6", placeholder: "no limit", value: a && a.max_attempts ? String(a.max_attempts) : "" });
  const penalties = h("input", { id: id("penalties"), size: "20", placeholder: "0, 5, 10", "aria-describedby": id("penalties-help"), value: a ? percentText(a.attempt_penalties) : "" });
  const rateLimit = h("input", { type: "number", id: id("rate-limit"), min: "1", step: "1", size: "6", placeholder: "no limit", value: a && a.rate_limit ? String(a.rate_limit) : "" });
  const rateWindow = h("input", { type: "number", id: id("rate-window"), min: "1", step: "1", size: "8", value: a ? String(a.rate_window_seconds) : "3600" });

  // The input an API field name points at: the service's "late_deadlines[1]" and
  // "problems[0].problem_id", or pydantic's "problems.0.points".
  const inputFor = (name) => {
    if (!name) return null;
    const n = Number((name.match(/(?:\[|\.)(\d+)/) || [])[1] || 0);
    if (name.startsWith("problems")) return problemRows.querySelectorAll(name.includes("points") ? ".problem-points" : ".problem-select")[n] || problemRows.querySelector("select");
    if (name.startsWith("late_deadlines")) return lateRows.querySelectorAll(name.includes("credit") ? ".late-credit" : ".late-until")[n] || null;
    return { title, release_at: release, due_at: due, max_attempts: maxAttempts, attempt_penalties: penalties, rate_limit: rateLimit, rate_window_seconds: rateWindow }[name.split(/[[.]/)[0]] || null;
  };

  const body = (form) => ({
    title: title.value,
    problems: [...problemRows.querySelectorAll(".problem-row")].map((row) => {
      const entry = { problem_id: row.querySelector(".problem-select").value, points: Number(row.querySelector(".problem-points").value || 0) };
      const fb = row.querySelector(".problem-feedback").value;
      if (fb) entry.feedback = fb;
      return entry;
    }),
    release_at: localToIso(release.value),
    due_at: localToIso(due.value),
    late_deadlines: [...lateRows.querySelectorAll(".late-row")].map((row) => ({
      until: localToIso(row.querySelector(".late-until").value),
      credit: Number(row.querySelector(".late-credit").value) / 100,
    })),
    after_close: chosen(form, "after-close"),
    scoring: chosen(form, "scoring"),
    feedback: chosen(form, "feedback"),
    hide_scores: hideScores.checked,
    max_attempts: integerOrNull(maxAttempts.value),
    attempt_penalties: percents(penalties.value),
    rate_limit: integerOrNull(rateLimit.value),
    rate_window_seconds: integerOrNull(rateWindow.value) ?? 3600,
    per_student_cases: perStudent.checked,
  });

  const save = h("button", { type: "submit", class: "button primary" }, a ? "Save changes" : "Create assignment");
  let marked = null;
  const form = h(
    "form",
    {
      class: "assignment-form panel",
      novalidate: true, // the API's message, not the browser's, says what is wrong
      "aria-labelledby": id("heading"),
      onsubmit: async (event) => {
        event.preventDefault();
        if (marked) {
          marked.removeAttribute("aria-invalid");
          marked.removeAttribute("aria-errormessage");
          marked = null;
        }
        error.textContent = "";
        save.disabled = true;
        try {
          const path = `/api/courses/${encodeURIComponent(courseId)}/assignments${a ? `/${a.id}` : ""}`;
          const { data } = await api(path, { method: a ? "PATCH" : "POST", body: body(form) });
          onSaved(data);
        } catch (err) {
          const where = err instanceof ApiError ? err.field : null;
          error.textContent = where ? `${err.message} (${where})` : err.message;
          error.dataset.field = where || "";
          const input = inputFor(where);
          if (input) {
            marked = input;
            input.setAttribute("aria-invalid", "true");
            input.setAttribute("aria-errormessage", error.id);
            input.focus();
          }
        } finally {
          save.disabled = false;
        }
      },
    },
    h("h2", { id: id("heading") }, a ? `Edit “${a.title}”` : "New assignment"),
    h("div", { class: "field-row" }, field("title", "Title", title)),
    h("h3", {}, "Problems"),
    h(
      "table",
      { class: "form-table" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Problem"), h("th", { scope: "col" }, "Points"), h("th", { scope: "col" }, "Feedback"), h("td", {}))),
      problemRows,
    ),
    h("button", { type: "button", class: "button small", onclick: () => addProblem().querySelector("select").focus() }, "Add a problem"),
    h("h3", {}, "Dates"),
    h("p", { class: "help" }, `Times are in your time zone (${Intl.DateTimeFormat().resolvedOptions().timeZone}).`),
    h(
      "div",
      { class: "field-row" },
      field("release", "Release (optional)", release, "hidden from students until then"),
      field("due", "Due", due, "full credit until then"),
    ),
    h(
      "table",
      { class: "form-table" },
      h("caption", {}, "Later deadlines: until each, a submission earns its credit"),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Until"), h("th", { scope: "col" }, "Credit"), h("td", {}))),
      lateRows,
    ),
    h("button", { type: "button", class: "button small", onclick: () => { addLate(); lateRows.lastChild.querySelector("input").focus(); } }, "Add a later deadline"),
    afterClose,
    h("h3", {}, "Grading"),
    scoring,
    feedback,
    h("div", { class: "choice" }, hideScores, h("label", { for: id("hide-scores") }, "Hide scores"), h("span", { class: "help" }, " — students see no score until you publish the scores")),
    h(
      "div",
      { class: "field-row" },
      field("max-attempts", "Max attempts per problem", maxAttempts, "empty: no limit"),
      field("penalties", "Penalty per attempt (%)", penalties, "taken off attempts 1, 2, 3…; the last repeats"),
      field("rate-limit", "Graded submissions per window", rateLimit, "empty: no limit"),
      field("rate-window", "Window (seconds)", rateWindow),
    ),
    h("div", { class: "choice" }, perStudent, h("label", { for: id("per-student") }, "Per-student hidden cases"), h("span", { class: "help" }, " — each student gets their own hidden cases, where the problem can generate them")),
    error,
    h("div", { class: "actions" }, save, onCancel ? h("button", { type: "button", class: "button", onclick: onCancel }, "Cancel") : null),
  );
  return form;
}
