// ".../students/{user}": one student's record for staff: their scores with the rule that decided
// each, every submission of the assignment with its code and report, and the adjustments.
import { api, describeError } from "../lib/api.js";
import { fill, h } from "../lib/dom.js";
import { feedbackEditor } from "../lib/feedback.js";
import { renderResult, verdictLabel } from "../lib/result.js";

const body = document.body.dataset;
const base = `/api/courses/${body.courseId}/assignments/${body.assignmentId}`;

function points(x) {
  return x === null || x === undefined ? "" : String(Math.round(x * 100) / 100);
}

function when(iso) {
  return iso ? h("time", { datetime: iso }, new Date(iso).toLocaleString()) : "–";
}

function scores(record) {
  return h(
    "table",
    { class: "gb-table", id: "student-scores" },
    h("thead", {}, h("tr", {}, ["Problem", "Points", "Rule", "Attempts", "Last verdict", "Latest diagnosis"].map((t) => h("th", { scope: "col" }, t)))),
    h(
      "tbody",
      {},
      record.cells.map((c) =>
        h(
          "tr",
          {},
          h("th", { scope: "row" }, c.problem_id),
          h("td", {}, `${points(c.points)} / ${points(c.max_points)}`),
          h("td", {}, c.rule),
          h("td", {}, `${c.attempts_used}${c.attempts_allowed === null ? "" : ` of ${c.attempts_allowed}`}`),
          h("td", {}, c.last_verdict ? verdictLabel(c.last_verdict) : "–"),
          h("td", {}, c.diagnosis ? `${c.diagnosis.title} (${c.diagnosis.code})` : "–"),
        ),
      ),
      h("tr", {}, h("th", { scope: "row" }, "Total"), h("td", { id: "student-total" }, `${points(record.total)} / ${points(record.max_total)}`), h("td", { colspan: "4" })),
    ),
  );
}

function submission(s) {
  const label = s.attempt ? `Attempt ${s.attempt}` : s.mode === "examples" ? "Examples run" : "Submission";
  const credit = s.credit_rule ? ` · ${points(s.credit_points)} points (${s.credit_rule})` : "";
  const sub = { ...(s.report || {}), id: s.id, status: s.status, finished_at: s.finished_at, view: s.view, hidden_passed: s.hidden_passed, hidden_total: s.hidden_total };
  return h(
    "details",
    { class: "student-submission", "data-submission": s.id },
    h("summary", {}, `${s.problem_id} · ${label} · `, s.verdict ? verdictLabel(s.verdict) : s.status, credit),
    h("p", { class: "note" }, "Submitted ", when(s.received_at || s.created_at), " · started ", when(s.started_at), " · finished ", when(s.finished_at)),
    h("h3", {}, "Code"),
    h("pre", { class: "code-block", tabindex: "0" }, h("code", {}, s.code)),
    s.report ? renderResult(sub, { mode: s.mode }) : h("p", { class: "note" }, `Not graded yet (${s.status}).`),
    h("h3", {}, "Comment and note on this submission"),
    feedbackEditor(base, { user_id: Number(body.userId), problem_id: s.problem_id, submission_id: s.id }, "comment", s.comment),
    feedbackEditor(base, { user_id: Number(body.userId), problem_id: s.problem_id, submission_id: s.id }, "note", s.note),
  );
}

function adjustments(list) {
  if (!list.length) return h("p", { class: "note" }, "No manual adjustment.");
  return h(
    "ol",
    { class: "audit-trail" },
    list.map((a) =>
      h("li", {}, when(a.created_at), ` ${a.created_by_name || "someone"} on ${a.problem_id}: ${a.old_score === null ? "–" : points(a.old_score)} → ${a.score === null ? "computed score" : points(a.score)} `, h("q", {}, a.comment)),
    ),
  );
}

async function main() {
  const root = document.getElementById("main");
  try {
    const { data } = await api(`${base}/students/${body.userId}`);
    document.title = `${data.student.name} · TensorJudge`;
    fill(
      root,
      h("p", {}, h("a", { href: `/courses/${body.courseId}/assignments/${body.assignmentId}/gradebook` }, "← Gradebook")),
      h("h1", {}, data.student.name),
      h("p", { class: "note" }, `${data.student.email || ""}${data.student.section ? ` · section ${data.student.section}` : ""} · ${data.student.status} · due `, when(data.due_at)),
      scores(data),
      h("h2", {}, "Comments and notes per problem"),
      data.cells.map((c) =>
        h(
          "section",
          { class: "problem-feedback", "data-problem": c.problem_id },
          h("h3", {}, c.problem_id),
          feedbackEditor(base, { user_id: Number(body.userId), problem_id: c.problem_id }, "comment", c.comment),
          feedbackEditor(base, { user_id: Number(body.userId), problem_id: c.problem_id }, "note", c.note),
        ),
      ),
      h("h2", {}, `Submissions (${data.submissions.length})`),
      data.submissions.length ? data.submissions.map(submission) : h("p", { class: "note" }, "No submission yet."),
      h("h2", {}, "Adjustments"),
      adjustments(data.adjustments),
    );
  } catch (err) {
    fill(root, h("h1", {}, "Student record"), h("p", { role: "alert", class: "tone-bad" }, describeError(err)));
  }
}

main();
