// "/account": who is signed in, their personal access tokens (create, shown once; revoke), their
// signed-in browsers (sign one out) and the password change.
import { api, currentUser, describeError } from "../lib/api.js";
import { clear, h } from "../lib/dom.js";

function when(value) {
  return value ? new Date(value).toLocaleString() : "never";
}

async function tokensPanel() {
  const body = h("tbody");
  const status = h("p", { class: "message", role: "status", id: "tokens-status" });
  const table = h(
    "div",
    { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "Your tokens" },
    h(
      "table",
      { id: "tokens-table" },
      h("caption", {}, "Your personal access tokens"),
      h("thead", {}, h("tr", {}, ["Name", "Created", "Last used", "State", ""].map((c) => h("th", { scope: "col" }, c)))),
      body,
    ),
  );
  async function refresh() {
    const { data } = await api("/api/account/tokens");
    clear(body);
    if (data.length === 0) body.append(h("tr", {}, h("td", { colspan: "5" }, "No tokens yet.")));
    for (const t of data) {
      const revoke = t.revoked_at
        ? ""
        : h(
            "button",
            {
              type: "button",
              "aria-label": `Revoke ${t.name}`,
              onclick: async () => {
                try {
                  await api(`/api/account/tokens/${t.id}`, { method: "DELETE" });
                  status.className = "message success";
                  status.textContent = `Revoked ${t.name}.`;
                  await refresh();
                } catch (err) {
                  status.className = "message error";
                  status.textContent = describeError(err);
                }
              },
            },
            "Revoke",
          );
      body.append(
        h(
          "tr",
          { dataset: { token: t.name } },
          h("td", {}, t.name),
          h("td", {}, when(t.created_at)),
          h("td", {}, when(t.last_used_at)),
          h("td", {}, t.revoked_at ? "revoked" : "active"),
          h("td", {}, revoke),
        ),
      );
    }
  }
  const name = h("input", { id: "token-name", required: true, maxlength: "100", placeholder: "e.g. laptop" });
  const secretBox = h("div", { id: "token-secret", class: "token-secret", hidden: true });
  const form = h(
    "form",
    { class: "inline-form" },
    h("label", { for: "token-name" }, "New token's name"),
    name,
    h("button", { type: "submit" }, "Create token"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const { data } = await api("/api/account/tokens", { method: "POST", body: { name: name.value } });
      clear(secretBox).append(
        h("p", {}, `Token “${data.token.name}” — copy it now, it is shown only once:`),
        h("code", { id: "token-secret-value" }, data.secret),
        h("p", { class: "note" }, "Use it with the client: tj login --url ", location.origin, " --token <token>"),
      );
      secretBox.hidden = false;
      status.className = "message success";
      status.textContent = `Created ${data.token.name}.`;
      name.value = "";
      await refresh();
    } catch (err) {
      status.className = "message error";
      status.textContent = describeError(err);
    }
  });
  await refresh();
  return h("section", { class: "panel", "aria-labelledby": "tokens-heading" }, h("h2", { id: "tokens-heading" }, "Tokens"), form, secretBox, status, table);
}

async function sessionsPanel() {
  const body = h("tbody");
  const status = h("p", { class: "message", role: "status", id: "sessions-status" });
  async function refresh() {
    const { data } = await api("/api/account/sessions");
    clear(body);
    if (data.length === 0) body.append(h("tr", {}, h("td", { colspan: "4" }, "No browser is signed in.")));
    data.forEach((s, i) => {
      const label = s.current ? "this browser" : `browser ${i + 1}`;
      const end = h(
        "button",
        {
          type: "button",
          "aria-label": `Sign out ${label}`,
          onclick: async () => {
            try {
              await api(`/api/account/sessions/${encodeURIComponent(s.id)}`, { method: "DELETE" });
              if (s.current) {
                window.location.assign("/login?next=/account");
                return;
              }
              status.className = "message success";
              status.textContent = `Signed out ${label}.`;
              await refresh();
            } catch (err) {
              status.className = "message error";
              status.textContent = describeError(err);
            }
          },
        },
        "Sign out",
      );
      body.append(
        h(
          "tr",
          { dataset: { session: s.id, current: String(s.current) } },
          h("td", {}, s.current ? "this browser" : "another browser"),
          h("td", {}, when(s.created_at)),
          h("td", {}, when(s.last_seen_at)),
          h("td", {}, end),
        ),
      );
    });
  }
  await refresh();
  const table = h(
    "div",
    { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "Your sessions" },
    h(
      "table",
      { id: "sessions-table" },
      h("caption", {}, "Browsers signed in to your account"),
      h("thead", {}, h("tr", {}, ["Browser", "Signed in", "Last seen", ""].map((c) => h("th", { scope: "col" }, c)))),
      body,
    ),
  );
  return h(
    "section",
    { class: "panel", "aria-labelledby": "sessions-heading" },
    h("h2", { id: "sessions-heading" }, "Sessions"),
    h("p", { class: "help" }, "A new password signs out every other browser and revokes every token."),
    status,
    table,
  );
}

function passwordPanel() {
  const current = h("input", { id: "pw-current", type: "password", autocomplete: "current-password" });
  const fresh = h("input", { id: "pw-new", type: "password", autocomplete: "new-password" });
  const status = h("p", { class: "message", role: "status" });
  const form = h(
    "form",
    { class: "account-form" },
    h("div", { class: "field" }, h("label", { for: "pw-current" }, "Current password"), current),
    h("div", { class: "field" }, h("label", { for: "pw-new" }, "New password (at least 10 characters)"), fresh),
    h("button", { type: "submit" }, "Change password"),
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await api("/api/account/password", { method: "PUT", body: { current_password: current.value, new_password: fresh.value } });
      status.className = "message success";
      status.textContent = "Password changed; your other sessions are signed out and your tokens revoked.";
      current.value = fresh.value = "";
    } catch (err) {
      status.className = "message error";
      status.textContent = describeError(err);
    }
  });
  return h("section", { class: "panel", "aria-labelledby": "pw-heading" }, h("h2", { id: "pw-heading" }, "Password"), form);
}

// The optional mails (scores published, ...): invitations, password links and extensions are
// always sent.
async function mailPanel() {
  const { data } = await api("/api/account/mail");
  const box = h("input", { type: "checkbox", id: "mail-optional", checked: data.optional });
  const status = h("p", { class: "message", role: "status", "aria-live": "polite" });
  box.addEventListener("change", async () => {
    try {
      const { data: now } = await api("/api/account/mail", { method: "PUT", body: { optional: box.checked } });
      box.checked = now.optional;
      status.textContent = now.optional ? "You will get these mails." : "You will not get these mails.";
    } catch (err) {
      status.textContent = describeError(err);
      box.checked = !box.checked;
    }
  });
  return h(
    "section",
    { class: "panel", "aria-labelledby": "mail-heading" },
    h("h2", { id: "mail-heading" }, "Mail"),
    h("div", { class: "field" }, box, " ", h("label", { for: "mail-optional" }, "Mail me when scores are published (invitations, password links and extensions are always mailed)")),
    status,
  );
}

async function main() {
  const root = clear(document.getElementById("main"));
  root.append(h("h1", {}, "Your account"));
  const { user } = await currentUser();
  if (!user) {
    root.append(h("p", {}, h("a", { href: "/login?next=/account" }, "Sign in"), " to see your account."));
    return;
  }
  root.append(
    h(
      "dl",
      { class: "facts", id: "account-facts" },
      h("dt", {}, "Name"), h("dd", {}, user.name),
      h("dt", {}, "Email"), h("dd", {}, user.email || "none"),
      h("dt", {}, "Role"), h("dd", {}, user.role),
    ),
  );
  try {
    root.append(await tokensPanel());
    root.append(await sessionsPanel());
    if (user.email) root.append(await mailPanel());
  } catch (err) {
    root.append(h("p", { class: "message error", role: "alert" }, describeError(err)));
  }
  if (user.email) root.append(passwordPanel());
}

main();
