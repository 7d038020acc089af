// "/courses": my courses with my role in each, joining by code, and a new course for
// deployment instructors. Everything comes from /api/courses, which decides who sees what.
import { api, currentUser, describeError } from "../lib/api.js";
import { fill, h } from "../lib/dom.js";

const ROLE_LABEL = { student: "Student", ta: "TA", instructor: "Instructor" };

function message(el, text, kind = "info") {
  el.className = `message ${kind}`;
  el.textContent = text;
}

function courseItem(c) {
  const staff = c.role === "ta" || c.role === "instructor";
  return h(
    "li",
    { class: "course-card", dataset: { courseId: String(c.id) } },
    h("h3", {}, h("a", { href: `/courses/${c.id}` }, c.title)),
    h(
      "p",
      { class: "meta" },
      h("span", { class: `badge role-${c.role}` }, ROLE_LABEL[c.role] || c.role),
      c.section ? ` Section ${c.section}` : null,
      c.archived_at ? " · archived" : null,
    ),
    staff
      ? h(
          "p",
          { class: "course-staff" },
          h("a", { href: `/courses/${c.id}/roster` }, "Roster"),
          c.join_code ? [" · join code ", h("code", {}, c.join_code)] : " · joining closed",
          c.members !== null ? ` · ${c.members} active members` : null,
        )
      : null,
  );
}

async function renderList(listEl) {
  const { data } = await api("/api/courses?limit=200");
  if (!data.items.length) {
    fill(listEl, h("p", { class: "note" }, "You are in no course yet. Join one with the code your instructor gave you."));
    return;
  }
  fill(listEl, h("ul", { class: "course-list" }, data.items.map(courseItem)));
}

function joinForm(onJoined) {
  const input = h("input", { id: "join-code", name: "code", required: true, autocomplete: "off", maxlength: "64" });
  const msg = h("p", { class: "message", role: "status", "aria-live": "polite" });
  const form = h(
    "form",
    { class: "inline-form", id: "join-form" },
    h("label", { for: "join-code" }, "Join code"),
    input,
    h("button", { type: "submit", class: "button primary" }, "Join"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const { data } = await api("/api/courses/join", { method: "POST", body: { code: input.value } });
      message(msg, data.joined ? `You joined ${data.course.title}.` : `You are already in ${data.course.title}.`, "success");
      input.value = "";
      await onJoined();
    } catch (err) {
      message(msg, describeError(err), "error");
    }
  });
  return h("section", { class: "panel", "aria-labelledby": "join-heading" }, h("h2", { id: "join-heading" }, "Join a course"), form, msg);
}

function newCourseForm(onCreated) {
  const input = h("input", { id: "course-title", name: "title", required: true, maxlength: "200" });
  const msg = h("p", { class: "message", role: "status", "aria-live": "polite" });
  const form = h(
    "form",
    { class: "inline-form", id: "new-course-form" },
    h("label", { for: "course-title" }, "Title"),
    input,
    h("button", { type: "submit", class: "button primary" }, "Create course"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const { data } = await api("/api/courses", { method: "POST", body: { title: input.value } });
      message(msg, `Created ${data.title}; students join with the code ${data.join_code}.`, "success");
      input.value = "";
      await onCreated();
    } catch (err) {
      message(msg, describeError(err), "error");
    }
  });
  return h("section", { class: "panel", "aria-labelledby": "new-heading" }, h("h2", { id: "new-heading" }, "New course"), form, msg);
}

async function main() {
  const root = document.getElementById("main");
  const { user } = await currentUser();
  if (!user) {
    fill(
      root,
      h("h1", {}, "Courses"),
      h("p", {}, h("a", { href: `/login?next=${encodeURIComponent("/courses")}` }, "Sign in"), " to see your courses."),
    );
    return;
  }
  const listEl = h("div", { id: "course-list", "aria-live": "polite" }, h("p", { class: "note" }, "Loading…"));
  const reload = () => renderList(listEl).catch((err) => fill(listEl, h("p", { class: "error" }, describeError(err))));
  fill(
    root,
    h("h1", {}, "Courses"),
    h("section", { "aria-labelledby": "mine-heading" }, h("h2", { id: "mine-heading" }, "My courses"), listEl),
    joinForm(reload),
    user.role === "instructor" || user.role === "admin" ? newCourseForm(reload) : null,
  );
  await reload();
}

main();
