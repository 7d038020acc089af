// "/courses/{id}": a course's home: its assignments, with each one's due date (the student's
// own, extensions included) and whether it is open now; its instructors create assignments here.
// Its staff find everything of the course from here: the roster, the join code and link, each
// assignment's gradebook.
import { api, describeError } from "../lib/api.js";
import { assignmentForm } from "../lib/assignment-form.js";
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
  let role = null;
  let course = null;
  try {
    course = (await api(`/api/courses/${encodeURIComponent(courseId)}`)).data;
    title = course.title || title;
    role = course.role;
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
  const list = h("div", { id: "assignments" });
  const notice = h("p", { class: "message", role: "status" });
  const staff = role === "ta" || role === "instructor";
  const reload = async () => {
    assignments = (await api(`/api/courses/${encodeURIComponent(courseId)}/assignments`)).data;
    fill(list, assignmentTable(assignments, staff));
  };
  fill(list, assignmentTable(assignments, staff));
  fill(
    root,
    h("nav", { class: "breadcrumb", "aria-label": "Breadcrumb" }, h("a", { href: "/courses" }, "Courses"), " / ", title),
    h("h1", {}, title),
    staff && course ? courseLinks(course) : null,
    h("h2", { id: "assignments-heading" }, "Assignments"),
    role === "instructor" ? creator(notice, reload) : null,
    notice,
    list,
  );
}

// "New assignment" opens the form; a created assignment joins the list and the form closes.
function creator(notice, reload) {
  const slot = h("div", {});
  const open = h("button", {
    type: "button",
    class: "button primary",
    "aria-expanded": "false",
    onclick: async () => {
      let problems;
      try {
        problems = (await api("/api/problems")).data;
      } catch (err) {
        notice.className = "message error";
        notice.textContent = describeError(err);
        return;
      }
      const close = () => {
        fill(slot);
        open.hidden = false;
        open.setAttribute("aria-expanded", "false");
        open.focus();
      };
      const form = assignmentForm({
        courseId,
        problems,
        onCancel: close,
        onSaved: async (created) => {
          close();
          notice.className = "message success";
          fill(notice, "Created ", h("a", { href: `/courses/${courseId}/assignments/${created.id}` }, created.title), ".");
          await reload();
        },
      });
      fill(slot, form);
      open.hidden = true;
      open.setAttribute("aria-expanded", "true");
      form.querySelector("input").focus();
    },
  }, "New assignment");
  return h("div", { class: "creator" }, open, slot);
}

// The staff's way to the rest of the course: roster, join code and link, assignments.
function courseLinks(course) {
  const join = course.join_code ? `${location.origin}/join/${course.join_code}` : null;
  return h(
    "nav",
    { class: "course-links", "aria-label": "Course" },
    h("ul", {},
      h("li", {}, h("a", { href: `/courses/${course.id}/roster` }, "Roster")),
      h("li", {}, h("a", { href: "#assignments-heading" }, "Assignments")),
      h("li", { id: "course-join" },
        join
          ? ["Join code ", h("code", { id: "join-code" }, course.join_code), " · ", h("a", { href: join, id: "join-link" }, "join link")]
          : "Joining by code is closed."),
    ),
  );
}

function assignmentTable(assignments, staff = false) {
  return assignments.length === 0
      ? h("p", { class: "note" }, "No assignment yet.")
      : h(
          "table",
          { class: "assignments-table" },
          h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Assignment"), h("th", { scope: "col" }, "Due"), h("th", { scope: "col" }, "Now"), h("th", { scope: "col" }, "Problems"), staff ? h("th", { scope: "col" }, "Gradebook") : null)),
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
                staff ? h("td", {}, h("a", { href: `/courses/${courseId}/assignments/${a.id}/gradebook`, "aria-label": `Gradebook of ${a.title}` }, "Gradebook")) : null,
              );
            }),
          ),
        );
}

main();
