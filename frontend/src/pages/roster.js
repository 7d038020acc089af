// "/courses/{id}/roster": the course's staff read the roster; its instructors add people one by
// one or by CSV (every failing row shown, nothing half-imported), change sections, block,
// remove, and make password links for students. "Sync roster" enrolls the members of the LMS
// courses linked to this one now (LTI Names and Role Provisioning), as a launch does.
import { ApiError, api, currentUser, describeError } from "../lib/api.js";
import { clear, fill, h } from "../lib/dom.js";

const courseId = document.body.dataset.courseId;
const base = `/api/courses/${courseId}`;
const PAGE = 100;
const ROLES = ["student", "ta", "instructor"];
const ROLE_LABEL = { student: "Student", ta: "TA", instructor: "Instructor" };

const state = { course: null, filters: { role: "", section: "", status: "", q: "" }, offset: 0 };

function message(el, text, kind = "info") {
  el.className = `message ${kind}`;
  el.textContent = text;
}

const canManage = () => state.course && state.course.role === "instructor";

function options(values, selected, labels = {}) {
  return values.map(([value, label]) => h("option", { value, selected: value === selected }, labels[value] || label));
}

// -------------------------------------------------------------------- the table

// What the roster says of someone without a password yet: the latest invitation mail's fate.
const INVITATION_LABEL = {
  none: " · not invited",
  pending: " · invitation on its way",
  sent: " · invited",
  failed: " · invitation failed (see the mail status)",
};

// Members an LMS roster names on a platform not trusted for email: no second account was
// made; their LMS identity is linked to this account when they launch and link it.
async function lmsPending() {
  try {
    return new Set((await api(`${base}/lti/pending-members`)).data.map((p) => p.user_id));
  } catch {
    return new Set();
  }
}

function memberRow(m, reload, notice, pending) {
  const actions = [];
  if (canManage()) {
    const section = h("input", { value: m.section || "", size: "8", maxlength: "64", "aria-label": `Section of ${m.name}` });
    const act = async (body, method = "PATCH") => {
      try {
        await api(`${base}/members/${m.user_id}`, { method, body });
        await reload();
      } catch (err) {
        message(notice, describeError(err), "error");
      }
    };
    actions.push(
      h("form", { class: "inline-form compact", onsubmit: (e) => { e.preventDefault(); act({ section: section.value }); } },
        section, h("button", { type: "submit", class: "button small" }, "Save")),
    );
    if (m.status === "active") {
      actions.push(h("button", { type: "button", class: "button small", onclick: () => act({ status: "blocked" }), "aria-label": `Block ${m.name}` }, "Block"));
      actions.push(h("button", { type: "button", class: "button small danger", onclick: () => act(undefined, "DELETE"), "aria-label": `Remove ${m.name}` }, "Remove"));
    } else {
      actions.push(h("button", { type: "button", class: "button small", onclick: () => act({ status: "active" }), "aria-label": `Reinstate ${m.name}` }, "Reinstate"));
    }
    if (m.status === "active" && m.email && !m.has_password) {
      actions.push(h("button", {
        type: "button",
        class: "button small",
        "aria-label": `${m.invitation === "none" ? "Invite" : "Resend the invitation to"} ${m.name}`,
        onclick: async () => {
          try {
            const { data } = await api(`${base}/members/${m.user_id}/invitation`, { method: "POST" });
            message(notice, data.invited.length ? `Invitation to ${m.email} on its way.` : `Not sent: ${data.skipped[0]?.reason}.`, data.invited.length ? "success" : "error");
            await reload();
          } catch (err) {
            message(notice, describeError(err), "error");
          }
        },
      }, m.invitation === "none" ? "Invite" : "Resend"));
    }
    if (m.role === "student" && m.status === "active") {
      const out = h("span", { class: "reset-link" });
      actions.push(
        h("button", {
          type: "button",
          class: "button small",
          "aria-label": `Password link for ${m.name}`,
          onclick: async () => {
            try {
              const { data } = await api(`${base}/members/${m.user_id}/reset-link`, { method: "POST" });
              const field = h("input", { readonly: true, value: data.url, size: "40", "aria-label": `Password link for ${m.name}`, class: "reset-url" });
              fill(out, field, h("button", { type: "button", class: "button small", onclick: () => { field.select(); navigator.clipboard?.writeText(data.url).catch(() => {}); } }, "Copy"));
              field.select();
            } catch (err) {
              message(notice, describeError(err), "error");
            }
          },
        }, "Password link"),
        out,
      );
    }
  }
  return h(
    "tr",
    { dataset: { userId: String(m.user_id) } },
    h("td", {}, m.name),
    h("td", {}, m.email || ""),
    h("td", {}, ROLE_LABEL[m.role] || m.role),
    h("td", {}, m.section || ""),
    h("td", {}, h("span", { class: `status status-${m.status}` }, m.status), m.has_password ? h("span", { class: "note" }, " · joined") : h("span", { class: "note" }, INVITATION_LABEL[m.invitation] || " · no password"), pending.has(m.user_id) ? h("span", { class: "note lms-pending" }, " · in the LMS, will be linked on first launch") : null),
    canManage() ? h("td", {}, h("div", { class: "row-actions" }, actions)) : null,
  );
}

async function renderTable(el, notice) {
  const params = new URLSearchParams({ limit: String(PAGE), offset: String(state.offset) });
  for (const [k, v] of Object.entries(state.filters)) if (v !== "") params.set(k, v);
  const [{ data }, pending] = await Promise.all([api(`${base}/members?${params}`), lmsPending()]);
  const reload = () => renderTable(el, notice);
  const pager = h(
    "div",
    { class: "actions" },
    h("span", { class: "meta", id: "roster-count" }, `${data.total} member${data.total === 1 ? "" : "s"}${data.total > PAGE ? `, ${data.offset + 1}–${data.offset + data.items.length} shown` : ""}`),
    state.offset > 0 ? h("button", { type: "button", class: "button small", onclick: () => { state.offset = Math.max(0, state.offset - PAGE); reload(); } }, "Previous") : null,
    data.offset + data.items.length < data.total ? h("button", { type: "button", class: "button small", onclick: () => { state.offset += PAGE; reload(); } }, "Next") : null,
  );
  fill(
    el,
    pager,
    h(
      "div",
      { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "Roster" },
      h(
        "table",
        { class: "roster-table", id: "roster-table" },
        h("caption", {}, "Roster"),
        h("thead", {}, h("tr", {}, ["Name", "Email", "Role", "Section", "Status", canManage() ? "Actions" : null].filter(Boolean).map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, data.items.map((m) => memberRow(m, reload, notice, pending))),
      ),
    ),
  );
}

async function renderSections(el) {
  const { data } = await api(`${base}/sections`);
  fill(
    el,
    data.sections.length
      ? h("ul", { class: "section-list" }, data.sections.map((s) => h("li", {}, `${s.name ?? "No section"}: ${s.students} student${s.students === 1 ? "" : "s"}`)))
      : h("p", { class: "note" }, "No one yet."),
  );
  return data.sections;
}

// The section filter's choices follow the roster (an upload may bring new sections).
function sectionOptions(select, sections) {
  const current = select.value || state.filters.section;
  fill(select, h("option", { value: "" }, "Every section"), sections.filter((s) => s.name !== null).map((s) => h("option", { value: s.name, selected: s.name === current }, s.name)));
}

function filtersForm(sections, onChange) {
  const role = h("select", { id: "filter-role" }, options([["", "Every role"], ...ROLES.map((r) => [r, ROLE_LABEL[r]])], state.filters.role));
  const section = h("select", { id: "filter-section" });
  sectionOptions(section, sections);
  const status = h("select", { id: "filter-status" }, options([["", "Every status"], ["active", "Active"], ["blocked", "Blocked"], ["removed", "Removed"]], state.filters.status));
  const q = h("input", { id: "filter-q", type: "search", placeholder: "Name or email", maxlength: "200" });
  const form = h(
    "form",
    { class: "inline-form", id: "roster-filters" },
    h("label", { for: "filter-role" }, "Show role"), role,
    h("label", { for: "filter-section" }, "Show section"), section,
    h("label", { for: "filter-status" }, "Show status"), status,
    h("label", { for: "filter-q" }, "Search"), q,
    h("button", { type: "submit", class: "button small" }, "Filter"),
  );
  const apply = (e) => {
    if (e) e.preventDefault();
    state.filters = { role: role.value, section: section.value, status: status.value, q: q.value.trim() };
    state.offset = 0;
    onChange();
  };
  form.addEventListener("submit", apply);
  for (const s of [role, section, status]) s.addEventListener("change", () => apply());
  return form;
}

// -------------------------------------------------------------------- changes

function addOneForm(onAdded) {
  const email = h("input", { id: "add-email", type: "email", required: true, maxlength: "254" });
  const name = h("input", { id: "add-name", maxlength: "200" });
  const role = h("select", { id: "add-role" }, options(ROLES.map((r) => [r, ROLE_LABEL[r]]), "student"));
  const section = h("input", { id: "add-section", maxlength: "64", size: "8" });
  const msg = h("p", { class: "message", role: "status", "aria-live": "polite" });
  const form = h(
    "form",
    { class: "field-row", id: "add-member-form" },
    h("div", { class: "field" }, h("label", { for: "add-email" }, "Email"), email),
    h("div", { class: "field" }, h("label", { for: "add-name" }, "Name"), name),
    h("div", { class: "field" }, h("label", { for: "add-role" }, "Role"), role),
    h("div", { class: "field" }, h("label", { for: "add-section" }, "Section"), section),
    h("div", { class: "field end" }, h("button", { type: "submit", class: "button primary" }, "Add")),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const { data } = await api(`${base}/members`, { method: "POST", body: { email: email.value, name: name.value, role: role.value, section: section.value || null } });
      message(msg, `Added ${data.name} (${data.email}) as ${ROLE_LABEL[data.role]}.`, "success");
      form.reset();
      await onAdded();
    } catch (err) {
      message(msg, describeError(err), "error");
    }
  });
  return h("section", { class: "panel", "aria-labelledby": "add-heading" }, h("h2", { id: "add-heading" }, "Add one person"), form, msg);
}

function inviteForm(onDone, notice) {
  const button = h("button", { type: "button", class: "button primary", id: "invite-all" }, "Invite everyone who has not joined");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const { data } = await api(`${base}/invitations`, { method: "POST" });
      message(notice, `${data.invited.length} invitation${data.invited.length === 1 ? "" : "s"} on their way; ${data.skipped.length} skipped (joined, no email, or invited in the last 10 minutes).`, "success");
      await onDone();
    } catch (err) {
      message(notice, describeError(err), "error");
    } finally {
      button.disabled = false;
    }
  });
  return h(
    "section",
    { class: "panel", "aria-labelledby": "invite-heading" },
    h("h2", { id: "invite-heading" }, "Invite by mail"),
    h("p", { class: "note" }, "Each person who has not joined gets a mail: a link to choose a password when this course made their account, else a pointer to sign in."),
    button,
  );
}

// The upload needs the failing rows the error carries besides {code, message, field}.
async function postRoster(file, invite) {
  const { csrf_token: csrf } = await currentUser();
  const form = new FormData();
  form.append("file", file);
  const headers = { Accept: "application/json" };
  if (csrf) headers["X-CSRF-Token"] = csrf;
  const response = await fetch(`${base}/roster?invite=${invite}`, { method: "POST", body: form, headers });
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const e = (data && data.error) || {};
    const err = new ApiError(response.status, e.code || "http_error", e.message || `${response.status} ${response.statusText}`, e.field || null);
    err.rows = (data && data.rows) || [];
    throw err;
  }
  return data;
}

function uploadForm(onImported) {
  const file = h("input", { id: "roster-file", type: "file", accept: ".csv,text/csv", required: true });
  const msg = h("p", { class: "message", role: "status", "aria-live": "polite" });
  const errors = h("div", { id: "roster-errors" });
  const invite = h("input", { id: "roster-invite", type: "checkbox", checked: true });
  const form = h(
    "form",
    { class: "inline-form", id: "roster-upload-form" },
    h("label", { for: "roster-file" }, "CSV file"),
    file,
    h("label", { for: "roster-invite" }, invite, " Send invitations"),
    h("button", { type: "submit", class: "button primary" }, "Upload roster"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear(errors);
    if (!file.files.length) return;
    try {
      const r = await postRoster(file.files[0], invite.checked);
      message(msg, `Imported: ${r.enrolled} enrolled (${r.created} new accounts), ${r.updated} updated, ${r.unchanged} unchanged${r.inactive ? `, ${r.inactive} blocked or removed left as they are` : ""}; ${r.invited} invited by mail.`, "success");
      form.reset();
      await onImported();
    } catch (err) {
      message(msg, describeError(err), "error");
      if (err.rows && err.rows.length) {
        fill(
          errors,
          h(
            "table",
            { class: "row-errors" },
            h("caption", {}, "Rows to fix (nothing was imported)"),
            h("thead", {}, h("tr", {}, ["Line", "Column", "Problem"].map((c) => h("th", { scope: "col" }, c)))),
            h("tbody", {}, err.rows.map((r) => h("tr", {}, h("td", {}, String(r.line)), h("td", {}, r.column || "(row)"), h("td", {}, r.message)))),
          ),
        );
      }
    }
  });
  return h(
    "section",
    { class: "panel", "aria-labelledby": "upload-heading" },
    h("h2", { id: "upload-heading" }, "Upload a roster"),
    h("p", { class: "note" }, "A CSV with a header row: ", h("code", {}, "email,name"), ", optionally ", h("code", {}, "section"), " and ", h("code", {}, "role"), " (student, ta, instructor). UTF-8. All or nothing: any bad row and nothing is imported. Uploading the same file again changes nothing. With \u201cSend invitations\u201d, each person the file enrols gets a mail: a link to choose a password, or a pointer to sign in when they already have an account."),
    form,
    msg,
    errors,
  );
}

// -------------------------------------------------------------------- page

// The course's staff; the server answers 409 when no LMS course with a roster is linked here.
function syncForm(refresh) {
  const status = h("p", { id: "sync-status", class: "message", role: "status", "aria-live": "polite" });
  const button = h("button", {
    type: "button",
    class: "button",
    id: "sync-roster",
    onclick: async () => {
      button.disabled = true;
      message(status, "Asking the LMS for its roster…");
      try {
        const { data } = await api(`${base}/lti/roster-sync`, { method: "POST" });
        message(status, `Synced: ${data.members} members in the LMS, ${data.added} added here${data.pending ? `, ${data.pending} will be linked on first launch` : ""}.`, "success");
        await refresh();
      } catch (err) {
        message(status, describeError(err), "error");
      } finally {
        button.disabled = false;
      }
    },
  }, "Sync roster");
  return h("section", { "aria-labelledby": "sync-heading" }, h("h2", { id: "sync-heading" }, "LMS roster"), h("p", { class: "help" }, "Enrolls every member of the LMS courses linked to this course now, as their launches would."), button, status);
}

async function main() {
  const root = document.getElementById("main");
  let course;
  try {
    course = (await api(base)).data;
  } catch (err) {
    const next = `/login?next=${encodeURIComponent(location.pathname)}`;
    fill(root, h("h1", {}, "Roster"), h("p", { class: "error", role: "alert" }, describeError(err)), err.status === 401 ? h("p", {}, h("a", { href: next }, "Sign in")) : null);
    return;
  }
  state.course = course;
  document.title = `Roster: ${course.title} · TensorJudge`;
  if (course.role === "student") {
    fill(root, h("h1", {}, course.title), h("p", { class: "error", role: "alert" }, "The roster is for the course's staff."), h("p", {}, h("a", { href: `/courses/${course.id}` }, "Course home")));
    return;
  }
  const notice = h("p", { class: "message", role: "status", "aria-live": "polite" });
  const table = h("div", { id: "roster" });
  const sectionsEl = h("div", { id: "sections" });
  const refresh = async () => {
    try {
      const [, found] = await Promise.all([renderTable(table, notice), renderSections(sectionsEl)]);
      const select = document.getElementById("filter-section");
      if (select) sectionOptions(select, found);
    } catch (err) {
      message(notice, describeError(err), "error");
    }
  };
  const sections = await renderSections(sectionsEl);
  const joinLink = course.join_code ? `${location.origin}/join/${course.join_code}` : null;
  fill(
    root,
    h("p", { class: "breadcrumb" }, h("a", { href: "/courses" }, "Courses"), " › ", h("a", { href: `/courses/${course.id}` }, course.title), " › Roster"),
    h("h1", {}, `Roster: ${course.title}`),
    h("p", { class: "meta" }, joinLink ? ["Students join with the code ", h("code", { id: "join-code" }, course.join_code), " or the link ", h("code", {}, joinLink), "."] : "Joining by code is closed."),
    h("section", { "aria-labelledby": "sections-heading" }, h("h2", { id: "sections-heading" }, "Sections"), sectionsEl),
    syncForm(refresh),
    filtersForm(sections, refresh),
    notice,
    table,
    canManage() ? [inviteForm(refresh, notice), addOneForm(refresh), uploadForm(refresh)] : null,
  );
  await renderTable(table, notice);
}

main();
