// "/reset/<secret>": set a password with a one-use link, then go to the account page signed in.
import { api, describeError } from "../lib/api.js";
import { clear, h } from "../lib/dom.js";

function main() {
  const root = clear(document.getElementById("main"));
  const secret = decodeURIComponent(location.pathname.replace(/^\/reset\//, ""));
  root.append(h("h1", {}, "Set your password"));
  const error = h("p", { class: "message error", role: "alert", id: "reset-error" });
  const password = h("input", { id: "reset-password", type: "password", autocomplete: "new-password", required: true, minlength: "10" });
  const again = h("input", { id: "reset-again", type: "password", autocomplete: "new-password", required: true });
  const submit = h("button", { type: "submit" }, "Set password and sign in");
  const form = h(
    "form",
    { class: "account-form", novalidate: true },
    h("div", { class: "field" }, h("label", { for: "reset-password" }, "New password (at least 10 characters)"), password),
    h("div", { class: "field" }, h("label", { for: "reset-again" }, "The same again"), again),
    submit,
    error,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    if (password.value !== again.value) {
      error.textContent = "The two passwords differ.";
      return;
    }
    submit.disabled = true;
    try {
      await api("/api/auth/reset", { method: "POST", body: { secret, password: password.value } });
      location.assign("/account");
    } catch (err) {
      error.textContent = describeError(err);
      submit.disabled = false;
    }
  });
  root.append(form);
  password.focus();
}

main();
