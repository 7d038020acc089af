// "/login": email and password, or the single sign-on button; then back to ?next (a path of
// this site only).
import { api, currentUser, describeError } from "../lib/api.js";
import { clear, h } from "../lib/dom.js";

// Only a place on this site: resolved against this origin the way the browser will resolve it
// (browsers drop tabs and newlines, so "/\t/evil.example" would otherwise leave the site).
export function safeNext(raw) {
  if (!raw || !raw.startsWith("/")) return "/";
  let url;
  try {
    url = new URL(raw, location.origin);
  } catch {
    return "/";
  }
  if (url.origin !== location.origin) return "/";
  return `${url.pathname}${url.search}${url.hash}`;
}

async function main() {
  const root = clear(document.getElementById("main"));
  const next = safeNext(new URLSearchParams(location.search).get("next"));
  root.append(h("h1", {}, "Sign in"));
  const { user } = await currentUser();
  if (user) {
    root.append(
      h("p", {}, `You are signed in as ${user.name}. `, h("a", { href: next }, "Continue"), "."),
    );
  }
  const error = h("p", { class: "message error", role: "alert", id: "login-error" });
  const email = h("input", { id: "login-email", type: "email", name: "email", autocomplete: "username", required: true });
  const password = h("input", {
    id: "login-password", type: "password", name: "password", autocomplete: "current-password", required: true,
  });
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    { class: "account-form", novalidate: true },
    h("div", { class: "field" }, h("label", { for: "login-email" }, "Email"), email),
    h("div", { class: "field" }, h("label", { for: "login-password" }, "Password"), password),
    submit,
    error,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    if (!email.value || !password.value) {
      error.textContent = "Enter your email and password.";
      return;
    }
    submit.disabled = true;
    try {
      await api("/api/auth/login", { method: "POST", body: { email: email.value, password: password.value } });
      location.assign(next);
    } catch (err) {
      error.textContent = describeError(err);
      password.value = "";
      password.focus();
      submit.disabled = false;
    }
  });
  root.append(form);
  const label = document.body.dataset.oidcLabel;
  if (label) {
    root.append(
      h("p", { class: "or" }, "or"),
      h("a", { class: "button sso-button", href: `/api/auth/oidc/login?next=${encodeURIComponent(next)}` }, `Sign in with ${label}`),
    );
  }
  root.append(
    h("p", { class: "note" }, "Forgot your password? Ask your instructor or administrator for a reset link."),
  );
  if (document.body.dataset.signup) {
    root.append(h("p", { class: "note" }, "No account? ", h("a", { href: "/signup", id: "signup-link" }, "Create one"), "."));
  }
  if (!user) email.focus();
}

main();
