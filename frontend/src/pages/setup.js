// "/setup/<secret>": the first administrator, from the one-time link the server printed at its
// first start; then the account page, signed in.
import { api, describeError } from "../lib/api.js";
import { field, newPassword } from "../lib/account-form.js";
import { clear, h } from "../lib/dom.js";

function main() {
  const root = clear(document.getElementById("main"));
  const secret = decodeURIComponent(location.pathname.replace(/^\/setup\//, ""));
  root.append(
    h("h1", {}, "Create the administrator"),
    h("p", {}, "No administrator exists yet. This link works once: the account you create here administers this server."),
  );
  const error = h("p", { class: "message error", role: "alert", id: "setup-error" });
  const [email, emailField] = field("setup-email", "Email", { type: "email", autocomplete: "email" });
  const [name, nameField] = field("setup-name", "Name", { type: "text", autocomplete: "name" });
  const { password, fields, differ } = newPassword("setup");
  const submit = h("button", { type: "submit" }, "Create and sign in");
  const form = h("form", { class: "account-form", novalidate: true }, emailField, nameField, ...fields, submit, error);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    if (differ(error)) return;
    submit.disabled = true;
    try {
      await api("/api/setup", {
        method: "POST",
        body: { secret, email: email.value, name: name.value, password: password.value },
      });
      location.assign("/account");
    } catch (err) {
      error.textContent = describeError(err);
      submit.disabled = false;
    }
  });
  root.append(form);
  email.focus();
}

main();
