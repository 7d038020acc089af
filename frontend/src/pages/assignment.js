// "/courses/{c}/assignments/{a}": an assignment's problems with points, the student's scores
// (from the gradebook's grades/me; "—" while it has none) and their own dates.
import { api, describeError } from "../lib/api.js";
import { fill, h } from "../lib/dom.js";

const { courseId, assignmentId } = document.body.dataset;
const base = `/api/courses/${encodeURIComponent(courseId)}/assignments/${encodeURIComponent(assignmentId)}`;

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "—";
}

async function grades() {
  try {
    return (await api(`${base}/grades/me`)).data;
  } catch {
    return null; // not there yet, or not a student: scores show as "—"
  }
}

const FEEDBACK = {
  visible: "full reports",
  summary: "public cases in full, hidden cases as a count",
  after_due_date: "a summary until your due date, full reports after it",
  hidden: "verdicts only, until published",
};

async function main() {
  const root = document.getElementById("main");
  let a;
  try {
    a = (await api(base)).data;
  } catch (err) {
    fill(root, h("h1", {}, "Assignment not available"), h("p", { class: "error", role: "alert" }, describeError(err)), h("p", {}, h("a", { href: `/courses/${courseId}` }, "Back to the course")));
    return;
  }
  const mine = await grades();
  const byProblem = Object.fromEntries(((mine && mine.problems) || []).map((p) => [p.problem_id, p]));
  document.title = `${a.title} · TensorJudge`;
  const late = (a.late_deadlines || []).map((d) => `until ${when(d.until)}: ${Math.round(d.credit * 100)} %`);
  fill(
    root,
    h("nav", { class: "breadcrumb", "aria-label": "Breadcrumb" }, h("a", { href: `/courses/${courseId}` }, "Course"), " / ", a.title),
    h("h1", {}, a.title),
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "Due"),
      h("dd", { id: "due" }, when(a.mine ? a.mine.due_at : a.due_at), a.mine && a.mine.due_at !== a.due_at ? " (your extension)" : ""),
      late.length ? [h("dt", {}, "Late"), h("dd", {}, late.join("; "))] : null,
      h("dt", {}, "After the last deadline"),
      h("dd", {}, a.after_close === "practice" ? "practice, no credit" : "closed"),
      a.mine ? [h("dt", {}, "Now"), h("dd", { id: "now" }, a.mine.open ? a.mine.rule : "closed")] : null,
      h("dt", {}, "Attempts"),
      h("dd", {}, a.max_attempts ? `${a.mine && a.mine.attempts_allowed ? a.mine.attempts_allowed : a.max_attempts} graded attempts per problem` : "no limit", "; running the examples is free"),
      h("dt", {}, "Feedback"),
      h("dd", {}, FEEDBACK[a.feedback] || a.feedback, a.hide_scores && !a.scores_published_at ? "; scores hidden until published" : ""),
    ),
    h(
      "table",
      { class: "assignments-table" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Problem"), h("th", { scope: "col" }, "Points"), h("th", { scope: "col" }, "Score"), h("th", { scope: "col" }, "Attempts"))),
      h(
        "tbody",
        {},
        a.problems.map((p) => {
          const g = byProblem[p.problem_id];
          const score = g && g.points !== null && g.points !== undefined ? `${g.points} / ${g.max_points}` : "—";
          const attempts = g ? `${g.attempts_used}${g.attempts_allowed ? ` of ${g.attempts_allowed}` : ""}` : "—";
          return h(
            "tr",
            { "data-problem": p.problem_id },
            h("th", { scope: "row" }, h("a", { href: `/courses/${courseId}/assignments/${assignmentId}/problems/${encodeURIComponent(p.problem_id)}` }, p.title || p.problem_id)),
            h("td", {}, String(p.points)),
            h("td", { "data-score": "" }, score, g && g.rule ? h("span", { class: "note" }, ` (${g.rule})`) : null),
            h("td", {}, attempts),
          );
        }),
      ),
    ),
    mine && mine.total !== null && mine.total !== undefined ? h("p", { id: "total" }, `Total: ${mine.total} / ${mine.max_total}`) : null,
    h("p", {}, h("a", { href: `${base}/submissions/me.csv`, download: "" }, "Download your submissions (CSV)")),
  );
}

main().catch((err) => fill(document.getElementById("main"), h("p", { class: "error", role: "alert" }, describeError(err))));
