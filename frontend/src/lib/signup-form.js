// The "I have no account" form of the join and sign-up pages: name, email and password, sent
// to POST /api/signup (with the course's code when joining). The answer is the same whether or
// not the address has an account; the mail says which.
import { field, newPassword } from "./account-form.js";
import { api, describeError } from "./api.js";
import { fill, h } from "./dom.js";

export function signupForm({ code = null, hint = null } = {}) {
  const error = h("p", { class: "message error", role: "alert", id: "signup-error" });
  const [name, nameField] = field("signup-name", "Your name", { type: "text", autocomplete: "name" });
  const [email, emailField] = field("signup-email", "Email", { type: "email", autocomplete: "email" });
  const { password, fields, differ } = newPassword("signup");
  const submit = h("button", { type: "submit", id: "signup-submit" }, "Create my account");
  const form = h(
    "form",
    { class: "account-form", novalidate: true, id: "signup-form" },
    hint ? h("p", { class: "note" }, hint) : null,
    nameField, emailField, ...fields, submit, error,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    if (differ(error)) return;
    submit.disabled = true;
    try {
      const body = { name: name.value, email: email.value, password: password.value };
      if (code) body.code = code;
      const { data } = await api("/api/signup", { method: "POST", body });
      fill(form, h("p", { class: "message success", role: "status", id: "signup-done" }, data.message));
    } catch (err) {
      error.textContent = describeError(err);
      submit.disabled = false;
    }
  });
  return form;
}
