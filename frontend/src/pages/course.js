// "/courses/{id}": a course's home: its assignments, with each one's due date (the student's
// own, extensions included) and whether it is open now.
import { api, describeError } from "../lib/api.js";
import { fill, h } from "../lib/dom.js";

const courseId = document.body.dataset.courseId;

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "—";
}

function state(a) {
  if (!a.released) return "not released yet";
  if (!a.mine) return "staff view";
  return a.mine.open ? a.mine.rule : "closed";
}

async function main() {
  const root = document.getElementById("main");
  let title = `Course ${courseId}`;
  try {
    title = (await api(`/api/courses/${encodeURIComponent(courseId)}`)).data.title || title;
  } catch {
    // The course's own API may answer differently; its assignments below say if it is ours.
  }
  let assignments;
  try {
    assignments = (await api(`/api/courses/${encodeURIComponent(courseId)}/assignments`)).data;
  } catch (err) {
    fill(root, h("h1", {}, "Course not available"), h("p", { class: "error", role: "alert" }, describeError(err)), h("p", {}, h("a", { href: "/courses" }, "Your courses")));
    return;
  }
  document.title = `${title} · TensorJudge`;
  fill(
    root,
    h("nav", { class: "breadcrumb", "aria-label": "Breadcrumb" }, h("a", { href: "/courses" }, "Courses"), " / ", title),
    h("h1", {}, title),
    h("h2", {}, "Assignments"),
    assignments.length === 0
      ? h("p", { class: "note" }, "No assignment yet.")
      : h(
          "table",
          { class: "assignments-table" },
          h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Assignment"), h("th", { scope: "col" }, "Due"), h("th", { scope: "col" }, "Now"), h("th", { scope: "col" }, "Problems"))),
          h(
            "tbody",
            {},
            assignments.map((a) => {
              const own = a.mine && a.mine.due_at !== a.due_at;
              return h(
                "tr",
                { "data-assignment": a.id },
                h("th", { scope: "row" }, h("a", { href: `/courses/${courseId}/assignments/${a.id}` }, a.title)),
                h("td", { "data-due": a.mine ? a.mine.due_at : a.due_at }, when(a.mine ? a.mine.due_at : a.due_at), own ? h("span", { class: "badge extension" }, " your extension") : null),
                h("td", { class: a.mine && !a.mine.open ? "closed" : "open" }, state(a)),
                h("td", {}, String(a.problems.length)),
              );
            }),
          ),
        ),
  );
}

main();
