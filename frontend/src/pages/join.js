// "/join/{code}": the course this code joins, and a button to join it (after signing in), or
// the form that makes an account for someone who has none.
import { api, currentUser, describeError } from "../lib/api.js";
import { fill, h } from "../lib/dom.js";
import { signupForm } from "../lib/signup-form.js";

async function main() {
  const root = document.getElementById("main");
  const { joinCode: code, courseTitle: title, missing } = document.body.dataset;
  if (missing) {
    fill(
      root,
      h("h1", {}, "Join a course"),
      h("p", { class: "error", role: "alert" }, `No open course takes the code ${code}. Ask your instructor for a new link.`),
      h("p", {}, h("a", { href: "/courses" }, "Your courses")),
    );
    return;
  }
  const { user } = await currentUser();
  const here = `/join/${encodeURIComponent(code)}`;
  if (!user) {
    const slot = h("div", { id: "signup-slot" });
    const noAccount = h("button", { type: "button", class: "button", id: "no-account" }, "I have no account");
    noAccount.addEventListener("click", () => {
      noAccount.remove();
      fill(slot, signupForm({ code, hint: "We mail you a link to confirm your address; opening it makes your account and joins the course." }));
      document.getElementById("signup-name").focus();
    });
    fill(
      root,
      h("h1", {}, `Join ${title}`),
      h("p", {}, "Sign in to join, or make an account if you have none."),
      h(
        "div",
        { class: "actions" },
        h("a", { class: "button primary", href: `/login?next=${encodeURIComponent(here)}` }, "Sign in to join"),
        noAccount,
      ),
      slot,
    );
    return;
  }
  const msg = h("p", { class: "message", role: "status", "aria-live": "polite" });
  const button = h("button", { type: "button", class: "button primary", id: "join-button" }, `Join ${title}`);
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const { data } = await api("/api/courses/join", { method: "POST", body: { code } });
      const c = data.course;
      fill(
        msg,
        data.joined ? `You joined ${c.title} as a student. ` : `You are already in ${c.title}. `,
        h("a", { href: `/courses/${c.id}` }, "Go to the course"),
        " · ",
        h("a", { href: "/courses" }, "All your courses"),
      );
      msg.className = "message success";
    } catch (err) {
      msg.className = "message error";
      msg.textContent = describeError(err);
      button.disabled = false;
    }
  });
  fill(
    root,
    h("h1", {}, `Join ${title}`),
    h("p", {}, `Signed in as ${user.name}${user.email ? ` (${user.email})` : ""}. You will join as a student.`),
    h("div", { class: "actions" }, button),
    msg,
  );
}

main();
