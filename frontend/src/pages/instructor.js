// "/instructor": manage a problem's test cases and read its diagnosability report and stats.
// Talks to the instructor API as the signed-in account (its session); a pasted token, kept for
// this browser session only, takes its place (e.g. another account's, or with no sign-in).
import { api, currentUser, describeError } from "../lib/api.js";
import { barChart, rateChart } from "../lib/charts.js";
import { clear, fill, formatNumber, h, shapeText, variadicNote } from "../lib/dom.js";
import { sessionStore } from "../lib/storage.js";

const TOKEN_KEY = "tj:instructor-token";
const CASES_ROUTE = /^\/api\/problems\/\{[^}]+\}\/test-cases$/;

let problems = [];
let currentProblem = null;
// The signed-in account when it may use this page (a deployment instructor or an admin).
let signedIn = null;

const token = () => sessionStore.get(TOKEN_KEY);
const base = () => `/api/problems/${encodeURIComponent(currentProblem)}`;

function message(el, text, kind = "info") {
  el.className = `message ${kind}`;
  el.textContent = text;
}

// ---------------------------------------------------------------- generic report rendering

function cellText(v) {
  if (v === null || v === undefined) return "";
  if (Array.isArray(v)) return v.map(cellText).join(" + ");
  if (typeof v === "number") return formatNumber(v);
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

function objectTable(rows, caption) {
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  return h(
    "div",
    { class: "table-scroll", tabindex: "0", role: "region", "aria-label": caption },
    h(
      "table",
      {},
      h("caption", {}, caption),
      h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col" }, c.replaceAll("_", " "))))),
      h("tbody", {}, rows.map((r) => h("tr", {}, cols.map((c) => h("td", {}, cellText(r[c])))))),
    ),
  );
}

/** Renders any JSON report as headings, definition lists and tables. */
function renderReport(value, title, depth = 3) {
  if (Array.isArray(value)) {
    if (value.length === 0) return h("p", {}, `${title}: none.`);
    if (value.every((v) => v && typeof v === "object" && !Array.isArray(v))) return objectTable(value, title);
    return h("div", {}, h(`h${depth}`, {}, title), h("ul", {}, value.map((v) => h("li", {}, cellText(v)))));
  }
  if (value && typeof value === "object") {
    const simple = Object.entries(value).filter(([, v]) => v === null || typeof v !== "object" || (Array.isArray(v) && v.every((x) => typeof x !== "object")));
    const nested = Object.entries(value).filter(([, v]) => v !== null && typeof v === "object" && !(Array.isArray(v) && v.every((x) => typeof x !== "object")));
    return h(
      "div",
      { class: "report" },
      depth > 3 ? h(`h${Math.min(depth, 6)}`, {}, title) : null,
      simple.length ? h("dl", { class: "facts" }, simple.map(([k, v]) => [h("dt", {}, k.replaceAll("_", " ")), h("dd", {}, cellText(v))])) : null,
      nested.map(([k, v]) => renderReport(v, k.replaceAll("_", " "), depth + 1)),
    );
  }
  return h("p", {}, cellText(value));
}

// ---------------------------------------------------------------- cases

function normalizeCases(data) {
  if (Array.isArray(data)) return data;
  for (const key of ["cases", "test_cases", "items", "data"]) if (data && Array.isArray(data[key])) return data[key];
  return [];
}

const caseId = (c) => c.id ?? c.case_id ?? c.name;

function shapesOf(c) {
  if (c.shapes && typeof c.shapes === "object") {
    const arrays = Object.entries(c.shapes).map(([k, v]) => `${k} ${Array.isArray(v) ? v.join("×") : v}`);
    const scalars = Object.entries(c.scalars || {}).map(([k, v]) => `${k}=${v}`);
    return [...arrays, ...scalars].join(", ");
  }
  if (c.inputs && typeof c.inputs === "object") {
    return Object.entries(c.inputs)
      .filter(([, v]) => Array.isArray(v))
      .map(([k, v]) => {
        const s = [];
        for (let x = v; Array.isArray(x); x = x[0]) s.push(x.length);
        return `${k} (${s.join(", ")})`;
      })
      .join(", ");
  }
  return "";
}

async function loadCases() {
  const body = clear(document.getElementById("cases-body"));
  const status = document.getElementById("cases-status");
  message(status, "Loading…");
  try {
    const { data } = await api(`${base()}/test-cases`, { token: token() });
    const cases = normalizeCases(data);
    message(status, `${cases.length} case${cases.length === 1 ? "" : "s"}.`);
    if (cases.length === 0) return;
    body.append(
      h(
        "div",
        { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "Test cases" },
        h(
          "table",
          { id: "cases-table" },
          h("thead", {}, h("tr", {}, ["Name", "Id", "Visibility", "Weight", "Shapes", "Warnings", ""].map((c) => h("th", { scope: "col" }, c)))),
          h(
            "tbody",
            {},
            cases.map((c) =>
              h(
                "tr",
                { "data-case": c.name, "data-case-id": caseId(c) },
                h("th", { scope: "row" }, c.name ?? ""),
                h("td", {}, c.source === "builtin" ? "built-in" : String(caseId(c) ?? "")),
                h("td", {}, c.visibility ?? ""),
                h("td", {}, c.weight !== undefined ? formatNumber(c.weight) : ""),
                h("td", {}, shapesOf(c)),
                h("td", {}, warningList(c.warnings)),
                h("td", {}, c.source === "builtin" || c.builtin || c.deletable === false ? "" : h("button", { type: "button", class: "button small danger", "aria-label": `Delete case ${c.name}`, onclick: () => deleteCase(c) }, "Delete")),
              ),
            ),
          ),
        ),
      ),
    );
  } catch (err) {
    message(status, authHint(err), "error");
  }
}

async function deleteCase(c) {
  if (!window.confirm(`Delete test case ${c.name}? This changes the problem's test set.`)) return;
  const status = document.getElementById("cases-status");
  try {
    await api(`${base()}/test-cases/${encodeURIComponent(caseId(c))}`, { method: "DELETE", token: token() });
    message(status, `Deleted ${c.name}.`, "success");
    await loadCases();
  } catch (err) {
    message(status, authHint(err), "error");
  }
}

function warningText(w) {
  return w && typeof w === "object" ? `${w.message ?? ""}${w.code ? ` (${w.code})` : ""}` : String(w);
}

function warningList(warnings) {
  if (!Array.isArray(warnings) || warnings.length === 0) return "";
  return h("ul", { class: "warnings" }, warnings.map((w) => h("li", {}, warningText(w))));
}

function authHint(err) {
  if (err.status === 401) return `${describeError(err)}: sign in, or enter an instructor token above.`;
  if (err.status === 403) return `${describeError(err)}: ${token() ? "this token is" : "you are"} not an instructor.`;
  return describeError(err);
}

async function addCase(event) {
  event.preventDefault();
  const out = document.getElementById("add-status");
  const form = event.target;
  const name = form.elements["case-name"].value.trim();
  const visibility = form.elements["case-visibility"].value;
  const weight = Number(form.elements["case-weight"].value || "1");
  const source = form.elements["case-source"].value;
  const raises = form.elements["case-raises"].value.trim();
  try {
    let response;
    if (source === "fields") {
      const body = { name, visibility, weight, inputs: fieldInputs() };
      if (raises) body.raises = raises;
      response = await api(`${base()}/test-cases`, { method: "POST", body, token: token() });
    } else if (source === "npz") {
      const file = form.elements["case-file"].files[0];
      if (!file) throw new Error("Choose a .npz file first.");
      const data = new FormData();
      data.append("file", file);
      data.append("name", name);
      data.append("visibility", visibility);
      data.append("weight", String(weight));
      if (raises) data.append("raises", raises);
      response = await api(`${base()}/test-cases`, { method: "POST", form: data, token: token() });
    } else {
      let parsed;
      try {
        parsed = JSON.parse(form.elements["case-json"].value);
      } catch (err) {
        throw new Error(`The JSON does not parse: ${err.message}`);
      }
      const body = parsed && typeof parsed === "object" && "inputs" in parsed ? { ...parsed } : { inputs: parsed };
      Object.assign(body, { name, visibility, weight });
      if (raises) body.raises = raises;
      response = await api(`${base()}/test-cases`, { method: "POST", body, token: token() });
    }
    const warnings = response.data && response.data.warnings;
    const warnText = Array.isArray(warnings) && warnings.length ? ` Warnings: ${warnings.map(warningText).join("; ")}` : "";
    message(out, `Added ${name}.${warnText}`, warnText ? "warn" : "success");
    await loadCases();
  } catch (err) {
    message(out, err.status ? authHint(err) : String(err.message || err), "error");
  }
}

const detailOf = (id) => {
  const p = problems.find((x) => x.id === id);
  return p && p.detail;
};

function paramLabel(param) {
  if (param.kind === "int") return `${param.name}: an integer from ${param.minimum} to ${param.maximum}`;
  if (param.kind === "float") {
    // Exact, not rounded for display: an instructor copies these values.
    const fallback = param.default != null ? `; empty for the default ${param.default}` : "";
    return `${param.name}: a number from ${param.minimum} to ${param.maximum}${fallback}`;
  }
  const what = param.dtype === "bool" ? "true/false" : "numbers";
  const note = variadicNote([param.shape]);
  return `${param.name}: nested lists of ${what}, shape ${shapeText(param.shape)}${note ? `; ${note}` : ""}`;
}

/** One field per parameter of the current problem, generated from its signature. */
function renderParamFields() {
  const box = document.getElementById("param-fields");
  if (!box) return;
  clear(box);
  const detail = detailOf(currentProblem);
  if (!detail) {
    box.append(h("p", { class: "help" }, "Loading the problem's parameters…"));
    api(`/api/problems/${encodeURIComponent(currentProblem)}`)
      .then(({ data }) => {
        problems.find((x) => x.id === data.id).detail = data;
        renderParamFields();
      })
      .catch(() => {});
    return;
  }
  for (const param of detail.params) {
    const id = `param-${param.name}`;
    const input =
      param.kind === "int"
        ? h("input", { id, type: "number", min: String(param.minimum), max: String(param.maximum), step: "1" })
        : param.kind === "float"
          ? h("input", {
              id,
              type: "number",
              min: String(param.minimum),
              max: String(param.maximum),
              step: "any",
              placeholder: param.default != null ? String(param.default) : "",
            })
          : h("textarea", { id, rows: "3", spellcheck: "false", placeholder: param.dtype === "bool" ? "[[true, false], [false, true]]" : "[[0.5, -1.25], [2.0, 0.0]]" });
    box.append(
      h(
        "div",
        { class: "field", "data-param": param.name },
        h("label", { for: id }, paramLabel(param)),
        input,
        param.optional
          ? h(
              "label",
              { class: "inline" },
              h("input", { type: "checkbox", id: `${id}-none`, onchange: (e) => (input.disabled = e.target.checked) }),
              ` no value (${param.name}=None)`,
            )
          : null,
      ),
    );
  }
}

function fieldInputs() {
  const inputs = {};
  for (const param of detailOf(currentProblem).params) {
    const id = `param-${param.name}`;
    const none = document.getElementById(`${id}-none`);
    if (none && none.checked) {
      inputs[param.name] = null;
      continue;
    }
    const text = document.getElementById(id).value.trim();
    // Left empty, a float with a default is left out: the server stores the default with the case.
    if (!text && param.kind === "float" && param.default != null) continue;
    if (!text) throw new Error(`${param.name}: give a value${param.optional ? " or tick “no value”" : ""}.`);
    if (param.kind === "int" || param.kind === "float") {
      inputs[param.name] = Number(text);
      continue;
    }
    try {
      inputs[param.name] = JSON.parse(text);
    } catch (err) {
      throw new Error(`${param.name}: not JSON nested lists (${err.message}).`);
    }
  }
  return inputs;
}

function fillExample() {
  const ex = detailOf(currentProblem) && detailOf(currentProblem).examples[0];
  const area = document.getElementById("case-json");
  // One input per line: readable, and short enough to edit by hand.
  area.value = ex
    ? `{"inputs": {\n${Object.entries(ex.inputs).map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(",\n")}\n}}`
    : '{"inputs": {}}';
  for (const [name, value] of Object.entries(ex ? ex.inputs : {})) {
    const field = document.getElementById(`param-${name}`);
    const none = document.getElementById(`param-${name}-none`);
    if (none) none.checked = value === null;
    if (field) {
      field.disabled = value === null;
      field.value = value === null ? "" : JSON.stringify(value);
    }
  }
  area.focus();
}

function sourceChanged() {
  const source = document.querySelector('input[name="case-source"]:checked').value;
  document.getElementById("json-fields").hidden = source !== "json";
  document.getElementById("npz-fields").hidden = source !== "npz";
  document.getElementById("form-fields").hidden = source !== "fields";
  if (source === "fields") renderParamFields();
}

// ---------------------------------------------------------------- reports

async function loadDiagnosability() {
  const body = clear(document.getElementById("diag-body"));
  const status = document.getElementById("diag-status");
  message(status, "Computing… (runs every fault model on the current cases)");
  try {
    const { data } = await api(`${base()}/diagnosability`, { token: token() });
    message(status, "");
    body.append(Array.isArray(data.faults) ? diagnosabilityView(data) : renderReport(data, "Diagnosability"));
  } catch (err) {
    message(status, authHint(err), "error");
  }
}

const yesNo = (v) => (v ? "✓ yes" : "✗ no");

function groupList(groups, empty) {
  if (!Array.isArray(groups) || groups.length === 0) return h("p", {}, empty);
  return h("ul", {}, groups.map((g) => h("li", {}, Array.isArray(g) ? g.join("  ≡  ") : String(g))));
}

function diagnosabilityView(r) {
  const pairs = r.pairs || {};
  return h(
    "div",
    { class: "report", id: "diag-report" },
    h(
      "dl",
      { class: "facts" },
      [
        ["Test-set version", r.test_set_version],
        ["Graded cases", r.cases],
        ["Diagnosis probes", r.fault_probes],
        ["Fault combinations checked", `${r.combinations} (up to ${r.max_faults} faults)`],
        ["Pairs told apart by the cases", pairs.total ? `${pairs.told_apart_by_cases} of ${pairs.total}` : ""],
        ["Pairs told apart with the probes", pairs.total ? `${pairs.told_apart_with_probes} of ${pairs.total}` : ""],
      ].map(([k, v]) => [h("dt", {}, k), h("dd", {}, cellText(v))]),
    ),
    h(
      "div",
      { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "Faults" },
      h(
        "table",
        {},
        h("caption", {}, "Each fault alone"),
        h("thead", {}, h("tr", {}, ["Fault", "Requirement", "Failing cases", "Caught", "Told apart by cases", "Told apart with probes"].map((c) => h("th", { scope: "col" }, c)))),
        h(
          "tbody",
          {},
          r.faults.map((f) =>
            h(
              "tr",
              { class: f.caught ? "" : "weak" },
              h("th", { scope: "row" }, h("code", {}, f.code), h("br"), f.title || ""),
              h("td", {}, f.requirement || ""),
              h("td", {}, String(f.caught_by ?? "")),
              h("td", {}, yesNo(f.caught)),
              h("td", {}, yesNo(f.told_apart_by_cases)),
              h("td", {}, yesNo(f.told_apart_with_probes)),
            ),
          ),
        ),
      ),
    ),
    h("h3", {}, "Faults no case catches"),
    Array.isArray(r.missed) && r.missed.length ? h("ul", {}, r.missed.map((m) => h("li", {}, h("code", {}, m)))) : h("p", {}, "None: every fault fails at least one case."),
    h("h3", {}, "Indistinguishable by the cases alone"),
    groupList(r.confusable_by_cases, "None."),
    h("h3", {}, "Indistinguishable even with the probes"),
    groupList(r.confusable_with_probes, "None: the grader tells every combination apart."),
  );
}

function diagnosisCounts(stats) {
  const src = stats.diagnoses ?? stats.diagnosis_counts ?? stats.codes ?? stats.counts ?? {};
  const items = Array.isArray(src)
    ? src.map((d) => ({ label: String(d.code ?? d.name ?? d.label), value: Number(d.count ?? d.n ?? d.value ?? 0) }))
    : Object.entries(src).map(([label, value]) => ({ label, value: Number(value) }));
  return items.filter((i) => Number.isFinite(i.value)).sort((a, b) => b.value - a.value);
}

function acceptanceSeries(stats) {
  const src = stats.over_time ?? stats.timeline ?? stats.acceptance_over_time ?? stats.series ?? stats.buckets ?? stats.daily ?? [];
  if (!Array.isArray(src)) return [];
  return src
    .map((d) => {
      const n = d.submissions ?? d.count ?? d.total;
      const rate = d.acceptance_rate ?? d.rate ?? (n ? (d.accepted ?? 0) / n : null);
      return { x: d.date ?? d.day ?? d.bucket ?? d.period ?? d.start ?? d.t ?? "", y: rate === null || rate === undefined ? NaN : Number(rate), n };
    })
    .filter((p) => Number.isFinite(p.y)); // days with nothing graded have no rate
}

async function loadStats() {
  const body = clear(document.getElementById("stats-body"));
  const status = document.getElementById("stats-status");
  message(status, "Loading…");
  try {
    const days = Number(document.getElementById("stats-window").value);
    const query = days > 0 ? `?since=${encodeURIComponent(new Date(Date.now() - days * 86400000).toISOString())}` : "";
    const { data } = await api(`${base()}/stats${query}`, { token: token() });
    message(status, "");
    const rate = data.acceptance_rate;
    body.append(
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "Submissions"),
        h("dd", {}, String(data.submissions ?? data.total ?? "")),
        h("dt", {}, "Graded"),
        h("dd", {}, String(data.graded ?? "")),
        h("dt", {}, "Acceptance rate"),
        h("dd", {}, typeof rate === "number" ? `${formatNumber(rate * 100)}%` : "none graded"),
        data.verdicts && typeof data.verdicts === "object"
          ? [h("dt", {}, "Verdicts"), h("dd", {}, Object.entries(data.verdicts).map(([k, v]) => `${k.replaceAll("_", " ")}: ${v}`).join(", "))]
          : null,
      ),
    );
    const counts = diagnosisCounts(data);
    body.append(counts.length ? barChart(counts, { title: "How often each diagnosis was found" }) : h("p", {}, "No diagnoses recorded yet."));
    const series = acceptanceSeries(data);
    body.append(series.length ? rateChart(series, { title: "Acceptance rate over time" }) : h("p", {}, "No submissions over time yet."));
  } catch (err) {
    message(status, authHint(err), "error");
  }
}

// ---------------------------------------------------------------- submissions

const VERDICTS = ["accepted", "wrong_answer", "runtime_error", "time_limit_exceeded", "memory_limit_exceeded", "output_limit_exceeded", "compile_error", "internal_error"];
const FILTERS = ["problem", "verdict", "diagnosis", "since", "until", "user_id"];
let nextCursor = null;

/** The filters as query parameters; dates from the datetime-local fields, as UTC ISO times. */
function submissionQuery(cursor = null) {
  const params = new URLSearchParams();
  for (const name of FILTERS) {
    const value = document.getElementById(`sub-${name}`).value.trim();
    if (!value) continue;
    params.set(name, name === "since" || name === "until" ? new Date(value).toISOString() : value);
  }
  if (cursor) params.set("cursor", cursor);
  return params;
}

function submissionRow(s) {
  const at = s.received_at || s.created_at; // when it arrived: what the dates judge
  const when = new Date(at);
  return h(
    "tr",
    { "data-submission": s.id },
    h("td", { class: "nowrap" }, h("time", { datetime: at }, when.toLocaleString())),
    h("td", {}, s.problem_id),
    h("td", {}, s.user_name ?? (s.user_id === null ? "anonymous" : String(s.user_id))),
    h("td", {}, s.verdict ? s.verdict.replaceAll("_", " ") : s.status),
    h("td", { class: "num" }, typeof s.score === "number" ? `${formatNumber(s.score * 100)}%` : ""),
    h("td", {}, s.diagnoses.length ? s.diagnoses.map((c) => h("code", {}, c)).reduce((a, c) => [...a, a.length ? ", " : "", c], []) : ""),
    h("td", { class: "num" }, String(s.run)),
    h("td", { class: "nowrap" }, h("a", { href: `/api/submissions/${encodeURIComponent(s.id)}` }, s.id.slice(0, 8))),
    h(
      "td",
      {},
      s.status === "done"
        ? h("button", { type: "button", class: "button small", "aria-label": `Regrade submission ${s.id}`, onclick: () => regradeOne(s) }, "Regrade")
        : "",
    ),
  );
}

async function loadSubmissions(more = false) {
  const body = document.getElementById("subs-body");
  const status = document.getElementById("subs-status");
  if (!more) {
    clear(body);
    nextCursor = null;
  }
  message(status, "Loading…");
  try {
    const query = submissionQuery(more ? nextCursor : null);
    query.set("limit", "50");
    const { data } = await api(`/api/submissions?${query}`, { token: token() });
    nextCursor = data.next_cursor;
    let tbody = document.querySelector("#subs-table tbody");
    if (!tbody) {
      tbody = h("tbody");
      body.append(
        h(
          "div",
          { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "Submissions" },
          h(
            "table",
            { id: "subs-table" },
            h("thead", {}, h("tr", {}, ["Created", "Problem", "Account", "Verdict", "Score", "Diagnoses", "Run", "Id", ""].map((c) => h("th", { scope: "col" }, c)))),
            tbody,
          ),
        ),
      );
    }
    tbody.append(...data.items.map(submissionRow));
    const shown = tbody.children.length;
    message(status, shown ? `${shown} submission${shown === 1 ? "" : "s"}, newest first${nextCursor ? "; more below" : ""}.` : "No submission matches.");
    document.getElementById("subs-more").hidden = !nextCursor;
  } catch (err) {
    message(status, authHint(err), "error");
  }
}

async function regradeOne(s) {
  const status = document.getElementById("subs-status");
  try {
    const { data } = await api(`/api/submissions/${encodeURIComponent(s.id)}/regrade`, { method: "POST", token: token() });
    message(status, `Submission ${s.id.slice(0, 8)} queued for grading again (run ${data.run}).`, "success");
  } catch (err) {
    message(status, authHint(err), "error");
  }
}

async function regradeMatching() {
  const status = document.getElementById("subs-status");
  try {
    // The count first (up to a page of 200), so the confirmation says what it will touch.
    const query = submissionQuery();
    query.set("limit", "200");
    const { data } = await api(`/api/submissions?${query}`, { token: token() });
    const count = `${data.items.length}${data.next_cursor ? "+" : ""}`;
    if (data.items.length === 0) {
      message(status, "No submission matches: nothing to regrade.");
      return;
    }
    if (!window.confirm(`Regrade all ${count} matching submissions on the current test set? Each takes a place in the queue.`)) return;
    const { data: counts } = await api(`/api/regrades?${submissionQuery()}`, { method: "POST", token: token() });
    const full = counts.queue_full ? " The queue is full: the rest were not queued." : "";
    message(status, `${counts.matched} matched: ${counts.queued} queued, ${counts.skipped} skipped.${full}`, counts.queue_full ? "warn" : "success");
  } catch (err) {
    message(status, authHint(err), "error");
  }
}

function submissionsSection() {
  const field = (name, label, input) => h("div", { class: "field" }, h("label", { for: `sub-${name}` }, label), input);
  return h(
    "section",
    { class: "panel", "aria-labelledby": "subs-heading" },
    h("h2", { id: "subs-heading" }, "Submissions"),
    h("p", { class: "help" }, "Practice submissions of every account, newest first (a course's are in its gradebook)."),
    h(
      "form",
      {
        id: "subs-form",
        onsubmit: (e) => {
          e.preventDefault();
          loadSubmissions();
        },
      },
      h(
        "div",
        { class: "field-row" },
        field("problem", "Problem", h("select", { id: "sub-problem" }, h("option", { value: "" }, "any"), problems.map((p) => h("option", { value: p.id }, p.title)))),
        field("verdict", "Verdict", h("select", { id: "sub-verdict" }, h("option", { value: "" }, "any"), VERDICTS.map((v) => h("option", { value: v }, v.replaceAll("_", " "))))),
        field("diagnosis", "Diagnosis code", h("input", { id: "sub-diagnosis", placeholder: "e.g. missing-wo", pattern: "[a-z0-9][a-z0-9\\-]*", size: "14" })),
        field("since", "From", h("input", { id: "sub-since", type: "datetime-local" })),
        field("until", "Until", h("input", { id: "sub-until", type: "datetime-local" })),
        field("user_id", "Account id", h("input", { id: "sub-user_id", type: "number", min: "1", step: "1", size: "6" })),
      ),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "submit", class: "button primary", id: "subs-search" }, "Show submissions"),
        h("button", { type: "button", class: "button danger", id: "subs-regrade-all", onclick: regradeMatching }, "Regrade all matching…"),
      ),
    ),
    h("p", { id: "subs-status", class: "message", role: "status" }),
    h("div", { id: "subs-body" }),
    h("button", { type: "button", class: "button", id: "subs-more", hidden: true, onclick: () => loadSubmissions(true) }, "Older submissions"),
  );
}

// ---------------------------------------------------------------- page

function accessText(saved) {
  if (saved) return "Token kept for this browser session.";
  if (signedIn) return `Signed in as ${signedIn.name} (${signedIn.role}): the forms below act as you. A token entered here replaces your account for this browser session.`;
  return "Sign in as an instructor, or enter a token (python -m app tokens create --role instructor --name NAME).";
}

function tokenSection() {
  const saved = !!token();
  return h(
    "section",
    { "aria-labelledby": "token-heading", class: "panel" },
    h("h2", { id: "token-heading" }, "Access"),
    h(
      "form",
      {
        id: "token-form",
        class: "inline-form",
        onsubmit: (e) => {
          e.preventDefault();
          const v = document.getElementById("token").value.trim();
          if (v) sessionStore.set(TOKEN_KEY, v);
          document.getElementById("token").value = "";
          message(document.getElementById("token-status"), v ? "Token kept for this browser session." : "Enter a token.", v ? "success" : "error");
          refreshAll();
        },
      },
      h("label", { for: "token" }, "Instructor token"),
      h("input", { id: "token", type: "password", autocomplete: "off", spellcheck: "false", placeholder: saved ? "(saved for this session)" : "" }),
      h("button", { type: "submit", class: "button primary" }, "Use token"),
      h(
        "button",
        {
          type: "button",
          class: "button subtle",
          onclick: () => {
            sessionStore.remove(TOKEN_KEY);
            message(document.getElementById("token-status"), signedIn ? `Token forgotten. ${accessText(false)}` : "Token forgotten.");
            if (signedIn) refreshAll();
          },
        },
        "Forget token",
      ),
    ),
    h("p", { id: "token-status", class: saved || signedIn ? "message success" : "message", role: "status" }, accessText(saved)),
  );
}

function addSection() {
  return h(
    "section",
    { "aria-labelledby": "add-heading", class: "panel" },
    h("h2", { id: "add-heading" }, "Add a case"),
    h(
      "form",
      { id: "add-form", onsubmit: addCase },
      h(
        "div",
        { class: "field-row" },
        h("div", { class: "field" }, h("label", { for: "case-name" }, "Name"), h("input", { id: "case-name", name: "case-name", required: true, pattern: "[A-Za-z0-9_.\\-]+", title: "letters, digits, _ . -" })),
        h(
          "div",
          { class: "field" },
          h("label", { for: "case-visibility" }, "Visibility"),
          h("select", { id: "case-visibility", name: "case-visibility" }, h("option", { value: "hidden" }, "hidden"), h("option", { value: "public" }, "public")),
        ),
        h("div", { class: "field" }, h("label", { for: "case-weight" }, "Weight"), h("input", { id: "case-weight", name: "case-weight", type: "number", min: "0", step: "any", value: "1" })),
        h(
          "div",
          { class: "field" },
          h("label", { for: "case-raises" }, "Must raise (optional)"),
          h("input", { id: "case-raises", name: "case-raises", placeholder: "e.g. ValueError", "aria-describedby": "raises-help" }),
        ),
      ),
      h("p", { id: "raises-help", class: "help" }, "Name an exception type when the function must raise it on these inputs (the reference must raise it too); leave empty when it returns an output."),
      h(
        "fieldset",
        { class: "source" },
        h("legend", {}, "Inputs from"),
        h("label", {}, h("input", { type: "radio", name: "case-source", value: "json", checked: true, onchange: sourceChanged }), " pasted JSON"),
        h("label", {}, h("input", { type: "radio", name: "case-source", value: "npz", onchange: sourceChanged }), " an .npz file"),
        h("label", {}, h("input", { type: "radio", name: "case-source", value: "fields", onchange: sourceChanged }), " a field per parameter"),
      ),
      h(
        "div",
        { id: "json-fields" },
        h("label", { for: "case-json" }, 'JSON: {"inputs": {"<parameter>": value, ...}, "expected": optional}'),
        h("textarea", { id: "case-json", name: "case-json", rows: "8", spellcheck: "false", "aria-describedby": "json-help" }),
        h("p", { id: "json-help", class: "help" }, "Arrays as nested lists (of numbers, or of true/false for a mask); null for an optional parameter without a value. The expected output is computed by the reference; give one only to check it (an object with one array per name when the function returns several)."),
        h("button", { type: "button", class: "button subtle", onclick: fillExample }, "Fill with the first public example"),
      ),
      h(
        "div",
        { id: "npz-fields", hidden: true },
        h("label", { for: "case-file" }, ".npz file with one array per input (integers as 0-d arrays; leave out an optional one for None)"),
        h("input", { id: "case-file", name: "case-file", type: "file", accept: ".npz" }),
      ),
      h("div", { id: "form-fields", hidden: true }, h("div", { id: "param-fields" }), h("button", { type: "button", class: "button subtle", onclick: fillExample }, "Fill with the first public example")),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "button primary", id: "add-case" }, "Add case")),
      h("p", { id: "add-status", class: "message", role: "status" }),
    ),
  );
}

function refreshAll() {
  if (!currentProblem || document.body.dataset.apiMissing) return;
  loadCases();
}

async function main() {
  const root = document.getElementById("main");
  let apiPresent = false;
  try {
    const [{ data: list }, { data: openapi }, { user }] = await Promise.all([api("/api/problems"), api("/openapi.json"), currentUser()]);
    problems = list;
    signedIn = user && (user.role === "instructor" || user.role === "admin") ? user : null;
    apiPresent = Object.keys(openapi.paths || {}).some((p) => CASES_ROUTE.test(p));
  } catch (err) {
    fill(root, h("h1", {}, "Instructor"), h("p", { class: "error", role: "alert" }, describeError(err)));
    return;
  }
  currentProblem = problems.length ? problems[0].id : null;
  fill(root, 
    h("h1", {}, "Instructor"),
    apiPresent ? null : h("p", { id: "api-missing", class: "message warn", role: "alert" }, "This server has no instructor API yet (no test-cases route in its OpenAPI): the forms below cannot work until it does."),
    tokenSection(),
    h(
      "section",
      { class: "panel", "aria-labelledby": "problem-heading" },
      h("h2", { id: "problem-heading" }, "Problem"),
      h("label", { for: "problem-select" }, "Manage "),
      h(
        "select",
        {
          id: "problem-select",
          onchange: (e) => {
            currentProblem = e.target.value;
            renderParamFields();
            refreshAll();
          },
        },
        problems.map((p) => h("option", { value: p.id }, p.title)),
      ),
    ),
    h(
      "section",
      { class: "panel", "aria-labelledby": "cases-heading" },
      h("h2", { id: "cases-heading" }, "Test cases"),
      h("button", { type: "button", class: "button small", onclick: loadCases }, "Refresh"),
      h("p", { id: "cases-status", class: "message", role: "status" }),
      h("div", { id: "cases-body" }),
    ),
    addSection(),
    submissionsSection(),
    h(
      "section",
      { class: "panel", "aria-labelledby": "diag-title" },
      h("h2", { id: "diag-title" }, "Diagnosability"),
      h("p", { class: "help" }, "Which faults and pairs of faults the current cases and probes can tell apart."),
      h("button", { type: "button", class: "button", onclick: loadDiagnosability }, "Compute report"),
      h("p", { id: "diag-status", class: "message", role: "status" }),
      h("div", { id: "diag-body" }),
    ),
    h(
      "section",
      { class: "panel", "aria-labelledby": "stats-title" },
      h("h2", { id: "stats-title" }, "Statistics"),
      h(
        "div",
        { class: "inline-form" },
        h("label", { for: "stats-window" }, "Window"),
        h(
          "select",
          { id: "stats-window" },
          h("option", { value: "7" }, "last 7 days"),
          h("option", { value: "30", selected: true }, "last 30 days"),
          h("option", { value: "0" }, "all time"),
        ),
        h("button", { type: "button", class: "button", onclick: loadStats }, "Load statistics"),
      ),
      h("p", { id: "stats-status", class: "message", role: "status" }),
      h("div", { id: "stats-body" }),
    ),
  );
  if (!apiPresent) document.body.dataset.apiMissing = "1";
  // Example inputs for "Fill with the first public example".
  for (const p of problems) {
    api(`/api/problems/${encodeURIComponent(p.id)}`).then(({ data }) => (p.detail = data)).catch(() => {});
  }
  if (token() || signedIn) refreshAll();
}

main();
