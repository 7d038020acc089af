// The assignment page's "LMS gradebook" panel (its instructors, in a course linked to an LMS
// course): where the assignment's scores go now, and a pick among the LMS course's columns (read
// through the LMS's gradebook service) or a new column made on the first score.
import { api, describeError } from "./api.js";
import { fill, h } from "./dom.js";

function say(el, text, kind) {
  el.className = `message ${kind}`;
  el.textContent = text;
}

// "Homework 1 (out of 10)", or the URL when the LMS did not list it.
function columnName(url, items) {
  const found = items.find((i) => i.id === url);
  if (!found) return url;
  return found.score_maximum === null ? found.label || url : `${found.label || url} (out of ${found.score_maximum})`;
}

function currentText(state, items, contextId) {
  const link = state.links.find((l) => l.context_id === contextId);
  if (!link) return "not linked: its scores do not go to this LMS course";
  if (link.line_item_url === null) return "a column made for it on the first score";
  return columnName(link.line_item_url, items);
}

// One option per column of each LMS course; the value names both (the PUT needs the course
// when several are linked). A column another assignment holds is shown but cannot be picked.
function options(state, items, assignmentId) {
  const several = state.lms_courses.length > 1;
  const where = (ctx) => {
    const c = state.lms_courses.find((x) => x.context_id === ctx);
    return several && c ? ` in ${c.platform} ${c.lms_context}` : "";
  };
  const out = state.lms_courses
    .filter((c) => c.ags)
    .map((c) => h("option", { value: JSON.stringify({ context_id: c.context_id }) }, `A new column for this assignment${where(c.context_id)}`));
  for (const item of items) {
    const other = item.assignment_id !== null && item.assignment_id !== Number(assignmentId);
    out.push(
      h(
        "option",
        { value: JSON.stringify({ context_id: item.context_id, line_item_url: item.id }), disabled: other },
        `${columnName(item.id, [item])}${where(item.context_id)}${other ? ` (linked to assignment ${item.assignment_id})` : ""}`,
      ),
    );
  }
  return out;
}

export async function lmsColumnPanel(base, assignmentId) {
  let state;
  try {
    state = (await api(`${base}/lti/line-item`)).data;
  } catch {
    return null; // not an instructor here: no panel
  }
  if (!state.lms_courses.length) return null; // the course is not linked to an LMS course
  const panel = h("section", { class: "panel", id: "lms-column", "aria-labelledby": "lms-column-heading" });
  const status = h("p", { id: "lms-column-status", class: "message", role: "status", "aria-live": "polite" });
  const courseBase = base.replace(/\/assignments\/[^/]+$/, "");

  const render = async (said) => {
    let items = [];
    let listError = null;
    try {
      items = (await api(`${courseBase}/lti/line-items`)).data;
    } catch (err) {
      listError = err;
    }
    const select = h("select", { id: "lms-column-pick" }, options(state, items, assignmentId));
    const now = state.links.find((l) => l.line_item_url !== null);
    if (now) {
      const held = [...select.options].find((o) => JSON.parse(o.value).line_item_url === now.line_item_url);
      if (held) select.value = held.value;
    }
    const button = h("button", { type: "submit", class: "button" }, "Link");
    const form = h(
      "form",
      { class: "actions" },
      h("label", { for: "lms-column-pick" }, "Send this assignment's scores to "),
      select,
      button,
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      button.disabled = true;
      say(status, "Linking…", "info");
      try {
        const { data } = await api(`${base}/lti/line-item`, { method: "PUT", body: JSON.parse(select.value) });
        state = (await api(`${base}/lti/line-item`)).data;
        await render(`Linked. ${data.queued} current score${data.queued === 1 ? "" : "s"} on ${data.queued === 1 ? "its" : "their"} way to the LMS.`);
      } catch (err) {
        say(status, describeError(err), "error");
        button.disabled = false;
      }
    });
    fill(
      panel,
      h("h2", { id: "lms-column-heading" }, "LMS gradebook"),
      h(
        "dl",
        { class: "facts", id: "lms-column-current" },
        state.lms_courses.map((c) => [
          h("dt", {}, `${c.platform} course ${c.lms_context}`),
          h("dd", { "data-context": String(c.context_id) }, c.ags ? currentText(state, items, c.context_id) : "offers no gradebook service"),
        ]),
      ),
      listError ? h("p", { class: "message error", role: "alert", id: "lms-column-error" }, `The LMS's columns could not be read: ${describeError(listError)}`) : null,
      select.options.length ? form : null,
      status,
    );
    if (said) say(status, said, "success");
  };
  await render("");
  return panel;
}
