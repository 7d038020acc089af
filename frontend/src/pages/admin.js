// "/admin": the deployment's administrators add people (mailed a link to choose a password),
// find them (search, change their deployment role, deactivate or reactivate them), see the registered LMS platforms and the configuration in
// force (secrets redacted by the server). Everything through the admin API as the signed-in
// account; anyone else is told the page is not theirs.
import { api, currentUser, describeError } from "../lib/api.js";
import { fill, h } from "../lib/dom.js";

const ROLES = ["member", "instructor", "admin"];
const PAGE = 50;

function message(el, text, kind = "info") {
  el.className = `message ${kind}`;
  el.textContent = text;
}

function table(caption, columns, rows, attrs = {}) {
  return h(
    "div",
    { class: "table-scroll", tabindex: "0", role: "region", "aria-label": caption },
    h(
      "table",
      attrs,
      h("caption", {}, caption),
      h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows),
    ),
  );
}

// ------------------------------------------------------------------ people

function personRow(me, u, reload, notice) {
  const change = async (body, done) => {
    try {
      await api(`/api/admin/users/${u.id}`, { method: "PATCH", body });
      message(notice, done, "success");
      await reload();
    } catch (err) {
      message(notice, describeError(err), "error");
    }
  };
  const self = u.id === me.id;
  const role = h(
    "select",
    { "aria-label": `Role of ${u.name}`, disabled: self, onchange: (e) => change({ role: e.target.value }, `${u.name} is now ${e.target.value}.`) },
    ROLES.map((r) => h("option", { value: r, selected: r === u.role }, r)),
  );
  const toggle = self
    ? h("span", { class: "note" }, "you")
    : h(
        "button",
        {
          type: "button",
          class: u.disabled ? "button small" : "button small danger",
          "aria-label": `${u.disabled ? "Reactivate" : "Deactivate"} ${u.name}`,
          onclick: () => change({ disabled: !u.disabled }, `${u.name} ${u.disabled ? "reactivated" : "deactivated"}.`),
        },
        u.disabled ? "Reactivate" : "Deactivate",
      );
  return h(
    "tr",
    { "data-user": u.email || String(u.id) },
    h("th", { scope: "row" }, u.name),
    h("td", {}, u.email || "—"),
    h("td", {}, role),
    h("td", { class: "state" }, u.disabled ? "deactivated" : "active"),
    h("td", {}, u.single_sign_on ? "single sign-on" : u.has_password ? "password" : "no password yet"),
    h("td", {}, toggle),
  );
}

function peopleSection(me) {
  const notice = h("p", { id: "people-status", class: "message", role: "status", "aria-live": "polite" });
  const body = h("div", { id: "people" });
  const search = h("input", { id: "people-q", type: "search", maxlength: "200", placeholder: "name or email" });
  const state = { offset: 0 };
  const reload = async () => {
    const query = new URLSearchParams({ limit: String(PAGE), offset: String(state.offset) });
    if (search.value.trim()) query.set("q", search.value.trim());
    const { data } = await api(`/api/admin/users?${query}`);
    const pager = [];
    if (state.offset > 0) pager.push(h("button", { type: "button", class: "button small", onclick: () => { state.offset = Math.max(0, state.offset - PAGE); reload(); } }, "Previous"));
    if (state.offset + PAGE < data.total) pager.push(h("button", { type: "button", class: "button small", onclick: () => { state.offset += PAGE; reload(); } }, "Next"));
    fill(
      body,
      h("p", { class: "meta", id: "people-count" }, `${data.total} account${data.total === 1 ? "" : "s"}`),
      table("People", ["Name", "Email", "Role", "State", "Sign-in", ""], data.items.map((u) => personRow(me, u, reload, notice)), { id: "people-table" }),
      pager.length ? h("div", { class: "actions" }, pager) : null,
    );
  };
  const form = h(
    "form",
    {
      class: "inline-form",
      role: "search",
      onsubmit: (e) => {
        e.preventDefault();
        state.offset = 0;
        reload().catch((err) => message(notice, describeError(err), "error"));
      },
    },
    h("label", { for: "people-q" }, "Search people"),
    search,
    h("button", { type: "submit", class: "button" }, "Search"),
  );
  reload().catch((err) => message(notice, describeError(err), "error"));
  return h("section", { class: "panel", "aria-labelledby": "people-heading" }, h("h2", { id: "people-heading" }, "People"), addPersonForm(reload), form, notice, body);
}

// An account without a password, and its one-use link to choose one: mailed through the outbox,
// and shown here to hand over when the server has no mail (GRADER_MAILER=log).
function addPersonForm(reload) {
  const name = h("input", { id: "add-name", type: "text", maxlength: "200", required: true, autocomplete: "off" });
  const email = h("input", { id: "add-email", type: "email", maxlength: "254", required: true, autocomplete: "off" });
  const role = h("select", { id: "add-role" }, ROLES.map((r) => h("option", { value: r, selected: r === "instructor" }, r)));
  const out = h("p", { id: "add-status", class: "message", role: "status", "aria-live": "polite" });
  const form = h(
    "form",
    {
      class: "inline-form",
      id: "add-person",
      onsubmit: async (e) => {
        e.preventDefault();
        try {
          const { data: made } = await api("/api/admin/users", { method: "POST", body: { name: name.value, email: email.value, role: role.value } });
          const { data: link } = await api(`/api/admin/users/${made.id}/reset-link?mail=true`, { method: "POST" });
          const url = new URL(link.url, location.origin).href;
          out.className = "message success";
          fill(out, `${made.name} (${made.role}) is added and mailed a link to choose a password; the same link, to hand over if mail does not reach them: `, h("input", { readonly: true, value: url, size: "50", class: "reset-url", "aria-label": `Password link for ${made.name}` }));
          form.reset();
          role.value = "instructor";
          await reload();
        } catch (err) {
          message(out, describeError(err), "error");
        }
      },
    },
    h("label", { for: "add-name" }, "Name"), name,
    h("label", { for: "add-email" }, "Email"), email,
    h("label", { for: "add-role" }, "Role"), role,
    h("button", { type: "submit", class: "button primary" }, "Add a person"),
  );
  return h("div", {}, h("h3", {}, "Add a person"), form, out);
}

// ------------------------------------------------------------------ platforms and configuration

function platformsSection() {
  const body = h("div", { id: "platforms" }, h("p", { class: "note" }, "Loading…"));
  api("/api/lti/platforms")
    .then(({ data }) =>
      fill(
        body,
        data.length === 0
          ? h("p", { class: "note" }, "No LMS platform is registered (docs/lti.md: python -m app lti add-platform, or POST /api/lti/platforms).")
          : table(
              "LMS platforms",
              ["Name", "Issuer", "Client id", "Deployments", "Registered"],
              data.map((p) => h("tr", { "data-platform": p.id }, h("th", { scope: "row" }, p.name), h("td", {}, p.issuer), h("td", {}, p.client_id), h("td", {}, p.deployment_ids.join(", ")), h("td", {}, new Date(p.created_at).toLocaleDateString()))),
              { id: "platforms-table" },
            ),
      ),
    )
    .catch((err) => fill(body, h("p", { class: "error", role: "alert" }, describeError(err))));
  return h("section", { class: "panel", "aria-labelledby": "platforms-heading" }, h("h2", { id: "platforms-heading" }, "LMS platforms"), body);
}

function configSection() {
  const body = h("div", { id: "config" }, h("p", { class: "note" }, "Loading…"));
  api("/api/admin/config")
    .then(({ data }) =>
      fill(
        body,
        table(
          "Configuration in force",
          ["Variable", "Value", ""],
          data.map((s) =>
            h(
              "tr",
              { "data-setting": s.name },
              h("th", { scope: "row" }, h("code", {}, s.name)),
              h("td", { class: s.redacted ? "redacted" : null }, s.value === null ? "unset" : s.value),
              h("td", { class: "note" }, s.default ? "default" : "set"),
            ),
          ),
          { id: "config-table" },
        ),
      ),
    )
    .catch((err) => fill(body, h("p", { class: "error", role: "alert" }, describeError(err))));
  return h(
    "section",
    { class: "panel", "aria-labelledby": "config-heading" },
    h("h2", { id: "config-heading" }, "Configuration"),
    h("p", { class: "help" }, "Every GRADER_ setting as this server read it at start-up; secrets show only whether they are set."),
    body,
  );
}

async function main() {
  const root = document.getElementById("main");
  const { user } = await currentUser();
  if (!user || user.role !== "admin") {
    const next = `/login?next=${encodeURIComponent(location.pathname)}`;
    fill(
      root,
      h("h1", {}, "Administration"),
      h("p", { class: "error", role: "alert" }, user ? "This page is for the deployment's administrators." : "Sign in as an administrator to use this page."),
      user ? null : h("p", {}, h("a", { href: next }, "Sign in")),
    );
    return;
  }
  fill(root, h("h1", {}, "Administration"), peopleSection(user), platformsSection(), configSection());
}

main();
