// "/courses/{c}/assignments/{a}": an assignment's problems with points, the student's scores
// (from the gradebook's grades/me; "—" while it has none) and their own dates. Its staff get a
// link to the gradebook; its instructors edit, publish and delete it here, and, in a course
// linked to an LMS course, pick the LMS gradebook column its scores go to.
import { api, describeError } from "../lib/api.js";
import { assignmentForm } from "../lib/assignment-form.js";
import { fill, h } from "../lib/dom.js";
import { feedbackView } from "../lib/feedback.js";
import { lmsColumnPanel } from "../lib/lms-column.js";

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

async function role() {
  try {
    return (await api(`/api/courses/${encodeURIComponent(courseId)}`)).data.role;
  } catch {
    return null;
  }
}

// What is still unpublished that the policy hides: the buttons that would publish it.
function unpublished(a) {
  const out = [];
  if (a.feedback !== "visible" || a.problems.some((p) => p.feedback && p.feedback !== "visible")) {
    if (!a.feedback_published_at) out.push(["feedback", "Publish feedback"]);
  }
  if (a.hide_scores && !a.scores_published_at) out.push(["scores", "Publish scores"]);
  return out;
}

function instructorControls(a, rerender) {
  const notice = h("p", { class: "message", id: "instructor-message", role: "status" });
  const slot = h("div", { id: "edit-slot" });
  const fail = (err) => {
    notice.className = "message error";
    notice.textContent = describeError(err);
  };
  const edit = h("button", {
    type: "button",
    class: "button",
    "aria-expanded": "false",
    onclick: async () => {
      let problems;
      try {
        problems = (await api("/api/problems")).data;
      } catch (err) {
        fail(err);
        return;
      }
      const form = assignmentForm({
        courseId,
        problems,
        assignment: a,
        onCancel: () => {
          fill(slot);
          edit.setAttribute("aria-expanded", "false");
          edit.focus();
        },
        onSaved: (saved) => rerender(saved, "Saved."),
      });
      fill(slot, form);
      edit.setAttribute("aria-expanded", "true");
      form.querySelector("input").focus();
    },
  }, "Edit");
  const publishers = unpublished(a).map(([what, label]) =>
    h("button", {
      type: "button",
      class: "button",
      onclick: async () => {
        try {
          const { data } = await api(`${base}/publish`, { method: "POST", body: { [what]: true } });
          rerender(data, what === "feedback" ? "Feedback published: students see their full reports." : "Scores published.");
        } catch (err) {
          fail(err);
        }
      },
    }, label),
  );
  const confirmSlot = h("span", { class: "row-actions" });
  const del = h("button", {
    type: "button",
    class: "button danger",
    onclick: () => {
      del.hidden = true;
      const cancel = h("button", { type: "button", class: "button", onclick: () => { fill(confirmSlot); del.hidden = false; del.focus(); } }, "Keep it");
      fill(
        confirmSlot,
        h("span", { id: "delete-question" }, `Delete “${a.title}”? Its submissions stay, as practice.`),
        h("button", {
          type: "button",
          class: "button danger",
          "aria-describedby": "delete-question",
          onclick: async () => {
            try {
              await api(base, { method: "DELETE" });
              window.location.assign(`/courses/${courseId}`);
            } catch (err) {
              fail(err);
            }
          },
        }, "Delete for good"),
        cancel,
      );
      cancel.focus();
    },
  }, "Delete");
  return h("section", { class: "instructor-controls", "aria-label": "Instructor controls" }, h("div", { class: "actions" }, edit, publishers, del, confirmSlot), notice, slot);
}

async function main() {
  const root = document.getElementById("main");
  let a;
  try {
    a = (await api(base)).data;
  } catch (err) {
    fill(root, h("h1", {}, "Assignment not available"), h("p", { class: "error", role: "alert" }, describeError(err)), h("p", {}, h("a", { href: `/courses/${courseId}` }, "Back to the course")));
    return;
  }
  const [mine, myRole] = await Promise.all([grades(), role()]);
  render(root, a, mine, myRole, "");
}

// Staff's comments to this student and the course's hints for the mistakes of their latest
// attempts (they leave once an attempt no longer makes the mistake).
function feedbackSection(a, mine) {
  if (!mine) return null;
  const titles = Object.fromEntries(a.problems.map((p) => [p.problem_id, p.title || p.problem_id]));
  const items = [];
  for (const p of mine.problems || []) {
    if (p.comment) items.push(feedbackView(p.comment, `On ${titles[p.problem_id] || p.problem_id}`, { "data-problem": p.problem_id }));
    for (const hint of p.hints || []) items.push(feedbackView(hint, `Hint on ${titles[p.problem_id] || p.problem_id}`, { "data-problem": p.problem_id, "data-hint": hint.code }));
  }
  for (const c of mine.submission_comments || []) items.push(feedbackView(c, `On a submission of ${titles[c.problem_id] || c.problem_id}`, { "data-submission": c.submission_id }));
  if (!items.length) return null;
  return h("section", { id: "my-feedback", "aria-labelledby": "my-feedback-heading" }, h("h2", { id: "my-feedback-heading" }, "Feedback"), items);
}

function render(root, a, mine, myRole, said) {
  const byProblem = Object.fromEntries(((mine && mine.problems) || []).map((p) => [p.problem_id, p]));
  document.title = `${a.title} · TensorJudge`;
  const controls = myRole === "instructor" ? instructorControls(a, (saved, message) => render(root, saved, mine, myRole, message)) : null;
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
      h("dd", { id: "feedback-policy" }, FEEDBACK[a.feedback] || a.feedback, a.feedback_published_at && a.feedback !== "visible" ? "; published: full reports now" : "", a.hide_scores && !a.scores_published_at ? "; scores hidden until published" : ""),
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
    feedbackSection(a, mine),
    h("p", {}, h("a", { href: `${base}/submissions/me.csv`, download: "" }, "Download your submissions (CSV)")),
    myRole === "ta" || myRole === "instructor" ? h("p", {}, h("a", { href: `/courses/${courseId}/assignments/${assignmentId}/gradebook` }, "Gradebook")) : null,
    controls,
    myRole === "instructor" ? h("div", { id: "lms-slot" }) : null,
  );
  if (myRole === "instructor") {
    lmsColumnPanel(base, assignmentId)
      .then((panel) => panel && fill(document.getElementById("lms-slot"), panel))
      .catch((err) => fill(document.getElementById("lms-slot"), h("p", { class: "message error", role: "alert" }, describeError(err))));
  }
  if (said) {
    const notice = controls.querySelector("#instructor-message");
    notice.className = "message success";
    notice.textContent = said;
  }
}

main().catch((err) => fill(document.getElementById("main"), h("p", { class: "error", role: "alert" }, describeError(err))));
