// "/verify/<secret>": confirm a sign-up's address with one click (a mail scanner fetching the
// link must not use it up), which makes the account, joins its course and signs in.
import { api, describeError } from "../lib/api.js";
import { clear, fill, h } from "../lib/dom.js";

function main() {
  const root = clear(document.getElementById("main"));
  const secret = decodeURIComponent(location.pathname.replace(/^\/verify\//, ""));
  const msg = h("p", { class: "message", role: "status", "aria-live": "polite", id: "verify-message" });
  const button = h("button", { type: "button", class: "button primary", id: "verify-button" }, "Confirm and sign in");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const { data } = await api("/api/signup/verify", { method: "POST", body: { secret } });
      if (data.course_id !== null) {
        location.assign(`/courses/${data.course_id}`);
        return;
      }
      msg.className = "message success";
      fill(
        msg,
        `Your account is ready, ${data.user.name}. `,
        data.missed ? "The course's join code changed meanwhile: ask your instructor for the new link. " : "",
        h("a", { href: "/courses" }, "Your courses"),
      );
    } catch (err) {
      msg.className = "message error";
      msg.textContent = describeError(err);
    }
  });
  root.append(
    h("h1", {}, "Confirm your address"),
    h("p", {}, "This makes your TensorJudge account (and joins your course, if you signed up with its link)."),
    h("div", { class: "actions" }, button),
    msg,
  );
  button.focus();
}

main();
