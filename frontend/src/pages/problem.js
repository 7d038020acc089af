// "/problems/{id}": statement, editor, grading with live progress, result panel and history.
import { api, describeError } from "../lib/api.js";
import { clear, fill, h, shapeText, variadicNote } from "../lib/dom.js";
import { createEditor } from "../lib/editor.js";
import { followSubmission } from "../lib/follow.js";
import { formatValue } from "../lib/format.js";
import { loadHistory, recordSubmission, updateSubmission } from "../lib/history.js";
import { highlightPython, renderMarkdownInto } from "../lib/markdown.js";
import { renderResult, resultLabel, verdictLabel } from "../lib/result.js";
import { localStore } from "../lib/storage.js";

const problemId = document.body.dataset.problemId;
// In an assignment (/courses/{c}/assignments/{a}/problems/{p}): submissions go to the
// assignment's route, count as attempts, and come back cut by its feedback policy.
const courseId = document.body.dataset.courseId || null;
const assignmentId = document.body.dataset.assignmentId || null;
const assignmentBase = assignmentId ? `/api/courses/${encodeURIComponent(courseId)}/assignments/${encodeURIComponent(assignmentId)}` : null;
const historyKey = assignmentId ? `${problemId}@assignment-${assignmentId}` : problemId;
const draftKey = `tj:draft:${historyKey}`;
const isMac = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);
const MOD = isMac ? "⌘" : "Ctrl";

const PHASES = {
  queued: "Queued: waiting for a grader",
  running: "Running your code in the sandbox and grading it",
  grading: "Grading: comparing and diagnosing",
  // A `phase` event says a phase has finished; show what comes next.
  sandbox: "Grading: comparing outputs and diagnosing",
  compare: "Grading: diagnosing",
  diagnose: "Grading: writing the report",
  done: "Finished",
};

let problem = null;
let editor = null;
let busy = false;
// The latest graded submission of this page arrived before the due date (see receivedNote).
let onTime = false;
let requirementTitles = {};

function statementColumn(p) {
  const md = h("div", { class: "markdown" });
  renderMarkdownInto(md, p.statement_markdown, { dropTitle: true });
  const sig = h("pre", { class: "code-block", tabindex: "0" }, h("code", {}));
  sig.firstChild.innerHTML = highlightPython(p.signature);
  return h(
    "article",
    { class: "statement", "aria-labelledby": "problem-title" },
    h(
      "div",
      { class: "topline" },
      assignmentId
        ? h("nav", { class: "breadcrumb", "aria-label": "Breadcrumb" }, h("a", { href: `/courses/${courseId}` }, "Course"), " / ", h("a", { href: `/courses/${courseId}/assignments/${assignmentId}` }, "Assignment"), " / ", p.title)
        : h("nav", { class: "breadcrumb", "aria-label": "Breadcrumb" }, h("a", { href: "/" }, "Problems"), " / ", p.title),
      h("a", { class: "jump", href: "#editor-heading" }, "Go to the editor"),
    ),
    h("h1", { id: "problem-title" }, p.title),
    h("p", { class: "meta" }, h("span", { class: `badge difficulty-${p.difficulty}` }, p.difficulty), " ", p.summary),
    md,
    h("section", { "aria-labelledby": "sig-heading" }, h("h2", { id: "sig-heading" }, "Signature"), sig, shapesList(p)),
    h(
      "section",
      { "aria-labelledby": "reqs-heading" },
      h("h2", { id: "reqs-heading" }, "Requirements"),
      h(
        "ol",
        { class: "requirements" },
        p.requirements.map((r) => h("li", { "data-requirement": r.id }, h("strong", {}, r.title), " ", h("code", {}, r.id), h("p", {}, r.text))),
      ),
    ),
    h(
      "section",
      { "aria-labelledby": "examples-heading" },
      h("h2", { id: "examples-heading" }, "Examples"),
      p.examples.map((ex) =>
        h(
          "details",
          { class: "example" },
          h("summary", {}, ex.name),
          h("h3", { class: "sub" }, "Inputs"),
          Object.entries(ex.inputs).map(([name, value]) => [h("p", { class: "input-name" }, h("code", {}, name)), h("pre", { class: "value", tabindex: "0" }, formatValue(value))]),
          expectedBlock(p, ex),
        ),
      ),
    ),
  );
}

/** Every array's declared shape: parameters, then outputs; variadic groups explained once. */
function shapesList(p) {
  const arrays = p.params.filter((x) => x.kind === "array");
  const row = (name, shape, what) => h("li", { "data-shape": name }, h("code", {}, name), " ", h("code", {}, shapeText(shape)), what ? ` ${what}` : "");
  const note = variadicNote([...arrays.map((x) => x.shape), ...p.outputs.map((o) => o.shape)]);
  return h(
    "div",
    { class: "shapes" },
    h("h3", { class: "sub" }, "Shapes"),
    h(
      "ul",
      { class: "shape-list" },
      arrays.map((x) => row(x.name, x.shape, [x.dtype === "bool" ? "bool" : "", x.optional ? "or None" : ""].filter(Boolean).join(", "))),
      p.outputs.map((o) => row(o.name, o.shape, p.multiple_outputs ? "(returned)" : "(the result)")),
    ),
    note ? h("p", { class: "help", id: "variadic-note" }, note) : null,
  );
}

/** An example's expected result: one output, each named output, or the exception it must raise. */
function expectedBlock(p, ex) {
  if (ex.raises) return [h("h3", { class: "sub" }, "Expected"), h("p", { class: "raises" }, "raises ", h("code", {}, ex.raises))];
  if (!p.multiple_outputs) return [h("h3", { class: "sub" }, "Expected output"), h("pre", { class: "value", tabindex: "0" }, formatValue(ex.output))];
  return [
    h("h3", { class: "sub" }, "Expected outputs (a tuple)"),
    p.outputs.map((o) => [h("p", { class: "input-name" }, h("code", {}, o.name)), h("pre", { class: "value", tabindex: "0", "data-output": o.name }, formatValue(ex.output[o.name]))]),
  ];
}

function workspaceColumn() {
  return h(
    "section",
    { class: "workspace", "aria-labelledby": "editor-heading" },
    h("h2", { id: "editor-heading" }, "Your solution"),
    assignmentId ? h("section", { id: "assignment-panel", class: "assignment-panel", "aria-label": "Assignment", "aria-live": "polite" }, h("p", { class: "note" }, "Loading the assignment…")) : null,
    h(
      "p",
      { id: "editor-help", class: "help" },
      `Tab indents; Esc then Tab leaves the editor. ${MOD}+Enter submits, ${MOD}+Shift+Enter runs the examples. Your draft is kept in this browser.`,
    ),
    h("div", { id: "editor", class: "editor" }),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "button", id: "run-examples", class: "button", onclick: () => grade("examples") }, "Run examples"),
      h("button", { type: "button", id: "submit", class: "button primary", onclick: () => grade("submit") }, "Submit"),
      h("button", { type: "button", id: "reset-code", class: "button subtle", onclick: resetCode }, "Reset to starter code"),
      frameworkSwitch(),
      h("span", { id: "draft-status", class: "note" }),
    ),
    h(
      "div",
      { id: "progress", class: "progress", hidden: true },
      h("span", { class: "spinner", "aria-hidden": "true" }),
      h("span", { id: "progress-text", role: "status" }),
      h("span", { id: "elapsed", class: "elapsed", "aria-hidden": "true" }),
    ),
    h("p", { id: "submit-error", class: "error", role: "alert" }),
    h("section", { id: "result", class: "result-panel", "aria-labelledby": "result-heading", hidden: true }, h("h2", { id: "result-heading", tabindex: "-1" }, "Result"), h("div", { id: "result-body" })),
    h("section", { class: "history", "aria-labelledby": "history-heading" }, h("h2", { id: "history-heading" }, "Your submissions"), h("div", { id: "history-body" })),
  );
}

// ---------------------------------------------------------------- draft

let saveTimer = null;
function saveDraft(code) {
  clearTimeout(saveTimer);
  saveTimer = setTimeout(() => {
    const ok = localStore.set(draftKey, { code, saved_at: new Date().toISOString() });
    document.getElementById("draft-status").textContent = ok ? "Draft saved" : "Draft not saved (browser storage unavailable)";
  }, 250);
}

function initialCode() {
  const draft = localStore.get(draftKey);
  return draft && typeof draft.code === "string" ? draft.code : problem.starter_code;
}

// The problem's starters by framework ("numpy" always; "torch" where the server offers it). A
// submission is graded in the framework its imports show, so switching only swaps the starter.
const FRAMEWORK_NAMES = { numpy: "NumPy", torch: "PyTorch" };

function frameworkSwitch() {
  const starters = problem.starters || {};
  const names = Object.keys(starters);
  const unavailable = (problem.frameworks_unavailable || []).map((name) => FRAMEWORK_NAMES[name] || name);
  if (names.length < 2) {
    // The problem has a PyTorch version this server does not offer: say so rather than hide it.
    if (!unavailable.length) return null;
    return h(
      "span",
      { id: "framework-unavailable", class: "note framework-switch" },
      `${unavailable.join(" and ")} ${unavailable.length > 1 ? "are" : "is"} not installed on this server: submissions are graded as NumPy.`,
    );
  }
  return h(
    "label",
    { class: "framework-switch" },
    "Framework ",
    h(
      "select",
      { id: "framework", onchange: (event) => switchFramework(event.target) },
      ...names.map((name) => h("option", { value: name }, FRAMEWORK_NAMES[name] || name)),
    ),
  );
}

function switchFramework(select) {
  const starter = (problem.starters || {})[select.value];
  if (typeof starter !== "string") return;
  if (!window.confirm(`Replace your code with the ${FRAMEWORK_NAMES[select.value] || select.value} starter code? Your draft will be lost.`)) return;
  editor.setCode(starter);
  editor.focus();
}

function resetCode() {
  if (!window.confirm("Replace your code with the starter code? Your draft will be lost.")) return;
  editor.setCode(problem.starter_code);
  editor.focus();
}

// ---------------------------------------------------------------- progress

let tick = null;
function startProgress(label) {
  const box = document.getElementById("progress");
  const started = performance.now();
  box.hidden = false;
  box.classList.add("active");
  setProgress(label);
  clearInterval(tick);
  const elapsed = document.getElementById("elapsed");
  const update = () => {
    elapsed.textContent = `${((performance.now() - started) / 1000).toFixed(1)} s`;
  };
  update();
  tick = setInterval(update, 100);
}

function setProgress(text) {
  const el = document.getElementById("progress-text");
  if (el.textContent !== text) el.textContent = text;
}

function stopProgress(text) {
  clearInterval(tick);
  const box = document.getElementById("progress");
  box.classList.remove("active");
  setProgress(text);
}

function setBusy(value) {
  busy = value;
  // aria-disabled, not disabled: a disabled button would drop keyboard focus to <body>.
  for (const id of ["run-examples", "submit"]) {
    document.getElementById(id).setAttribute("aria-disabled", value ? "true" : "false");
  }
  document.querySelector(".workspace").setAttribute("aria-busy", value ? "true" : "false");
}

// ---------------------------------------------------------------- grading

/** Puts the cursor on the line an error points to, marked, and the editor in focus. */
function showLine(line, message) {
  if (!editor.markLine(line, message)) return;
  editor.view.dispatch({ selection: { anchor: editor.view.state.doc.line(line).from } });
  editor.focus();
}

/** `code`: what was graded; the line a load failure names is marked only while the editor still
 * holds exactly that code (a reopened older submission may not be what is in the editor). */
function showResult(sub, mode, code = null) {
  const panel = document.getElementById("result");
  panel.hidden = false;
  const failure = sub.load_failure;
  const current = code !== null && editor.getCode() === code;
  const onShowLine = failure && failure.line && current ? (line) => showLine(line, failure.message) : null;
  editor.clearMark();
  if (onShowLine) editor.markLine(failure.line, failure.message);
  fill(document.getElementById("result-body"), renderResult(sub, { mode: sub.mode || mode, requirementTitles, onShowLine }));
  // Bring the verdict into view without moving keyboard focus away from the editor.
  const banner = document.getElementById("verdict");
  const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  if (banner) banner.scrollIntoView({ block: "nearest", behavior: still ? "auto" : "smooth" });
}

/** "Queued: 41 ahead of you, about 1 min" (the same words as `tj`). */
function queueText(place) {
  if (!place) return PHASES.queued;
  const where = place.ahead === 0 ? "next in line" : `${place.ahead} ahead of you`;
  const s = place.estimate_seconds;
  if (typeof s !== "number") return `Queued: ${where}`;
  return `Queued: ${where}, about ${s < 60 ? `${Math.max(1, Math.round(s))} s` : `${Math.round(s / 60)} min`}`;
}

/** Said of a submission received before its due date, whatever the time is now: it counts. */
function receivedNote(data) {
  const due = document.getElementById("assignment-due");
  if (!data.received_at || !due || !due.dataset.due) return "";
  const received = new Date(data.received_at);
  return received <= new Date(due.dataset.due) ? ` Received ${received.toLocaleTimeString()}, before the due date: it counts as on time.` : "";
}

async function follow(id, mode, code = null) {
  const sub = await followSubmission(id, ({ status, phase, queue }) => {
    if (status === "queued" && !phase) return setProgress(queueText(queue));
    setProgress(PHASES[phase] || PHASES[status] || `${status || "working"}${phase ? `: ${phase}` : ""}`);
  });
  updateSubmission(historyKey, id, { status: sub.status, verdict: sub.verdict, score: sub.score });
  showResult(sub, mode, code);
  stopProgress(typeof sub.score === "number" ? `${resultLabel(sub)}, score ${Math.round(sub.score * 100)}%` : resultLabel(sub));
  // A report cut by a feedback policy gives the run no time: the page does not keep one either.
  if (sub.view && sub.view !== "visible") document.getElementById("elapsed").textContent = "";
  renderHistory();
  return sub;
}

async function grade(mode, force = false) {
  if (busy) return;
  const code = editor.getCode();
  editor.clearMark();
  const errorBox = document.getElementById("submit-error");
  errorBox.textContent = "";
  setBusy(true);
  startProgress(mode === "submit" ? "Submitting…" : "Sending the examples run…");
  try {
    const url = assignmentBase ? `${assignmentBase}/problems/${encodeURIComponent(problemId)}/submissions` : `/api/problems/${encodeURIComponent(problemId)}/submissions`;
    const { data } = await api(url, {
      method: "POST",
      body: force ? { code, mode, force: true } : { code, mode },
    });
    recordSubmission(historyKey, { id: data.id, mode, status: data.status, submitted_at: new Date().toISOString(), code });
    renderHistory();
    if (data.status === "done" && Array.isArray(data.requirements)) {
      updateSubmission(historyKey, data.id, { status: "done", verdict: data.verdict, score: data.score });
      showResult(data, mode, code);
      stopProgress(resultLabel(data));
      renderHistory();
    } else {
      setProgress(data.status === "queued" ? queueText(data.queue) + receivedNote(data) : PHASES[data.status] || PHASES.queued);
      if (mode === "submit") onTime = receivedNote(data) !== "";
      await follow(data.id, mode, code);
    }
  } catch (err) {
    stopProgress("Not graded");
    document.getElementById("progress").hidden = true;
    errorBox.textContent = describeError(err);
    // The same code as an earlier graded attempt: nothing was spent; ask before spending one.
    if (err.code === "identical_resubmission") {
      setBusy(false);
      if (window.confirm(`${err.message}.\n\nSpend a graded attempt on the same code anyway?`)) {
        errorBox.textContent = "";
        await grade(mode, true);
      }
    }
  } finally {
    setBusy(false);
    if (assignmentId) refreshAssignment();
  }
}

// ---------------------------------------------------------------- assignment

async function refreshAssignment() {
  const panel = document.getElementById("assignment-panel");
  if (!panel) return;
  try {
    const [{ data: a }, { data: mine }] = await Promise.all([
      api(assignmentBase),
      api(`${assignmentBase}/problems/${encodeURIComponent(problemId)}/attempts`),
    ]);
    const entry = (a.problems || []).find((x) => x.problem_id === problemId);
    const left = mine.attempts_allowed === null ? "no limit" : `${Math.max(0, mine.attempts_allowed - mine.attempts_used)} left`;
    const attempts = mine.attempts_allowed === null ? `${mine.attempts_used} used (no limit)` : `${mine.attempts_used} of ${mine.attempts_allowed} used, ${left}`;
    const feedback = { visible: "full report", summary: "public cases in full, hidden cases as a count", verdict: "verdict only, until published" }[mine.feedback] || mine.feedback;
    fill(
      panel,
      h("p", { class: "assignment-title" }, h("a", { href: `/courses/${courseId}/assignments/${assignmentId}` }, a.title), entry ? ` · ${entry.points} points` : ""),
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "Due"),
        h("dd", { id: "assignment-due", "data-due": mine.due_at }, new Date(mine.due_at).toLocaleString()),
        h("dt", {}, "Now"),
        // Past the due date while the student's last submission arrived before it: that one
        // counts, and "closed" would read as if it did not.
        h("dd", { id: "assignment-credit" }, mine.open ? mine.rule : onTime ? "due date passed: your last submission arrived on time and counts" : `closed: ${mine.rule}`),
        h("dt", {}, "Attempts"),
        h("dd", { id: "assignment-attempts", "data-used": mine.attempts_used }, attempts),
        h("dt", {}, "Feedback"),
        h("dd", { id: "assignment-feedback" }, feedback),
      ),
    );
  } catch (err) {
    fill(panel, h("p", { class: "error", role: "alert" }, describeError(err)));
  }
}

// ---------------------------------------------------------------- history

async function reopen(entry) {
  if (busy) return;
  setBusy(true);
  startProgress("Loading submission…");
  try {
    const { data } = await api(`/api/submissions/${encodeURIComponent(entry.id)}`);
    if (data.status === "done") {
      updateSubmission(historyKey, entry.id, { status: "done", verdict: data.verdict, score: data.score });
      showResult(data, entry.mode, entry.code);
      stopProgress(`Showing submission ${entry.id}: ${resultLabel(data)}`);
      renderHistory();
    } else {
      setProgress(PHASES[data.status] || data.status);
      await follow(entry.id, entry.mode, entry.code);
    }
    document.getElementById("result-heading").focus();
  } catch (err) {
    stopProgress("Could not load it");
    document.getElementById("submit-error").textContent = describeError(err);
  } finally {
    setBusy(false);
  }
}

function renderHistory() {
  const body = clear(document.getElementById("history-body"));
  const list = loadHistory(historyKey);
  if (list.length === 0) {
    body.append(h("p", { class: "note" }, "None yet from this browser."));
    return;
  }
  body.append(
    h(
      "ol",
      { class: "history-list" },
      list.map((e) => {
        const when = e.submitted_at ? new Date(e.submitted_at).toLocaleString() : "";
        const score = typeof e.score === "number" ? ` · ${Math.round(e.score * 100)}%` : "";
        const outcome = e.verdict ? `${verdictLabel(e.verdict)}${score}` : e.status || "";
        return h(
          "li",
          { "data-submission": e.id, class: e.verdict === "accepted" ? "accepted" : "" },
          h("span", { class: "history-what" }, h("strong", {}, e.mode === "examples" ? "Examples run" : "Submission"), ` ${when} — ${outcome}`),
          h("span", { class: "history-actions" },
            h("button", { type: "button", class: "button small", onclick: () => reopen(e), "aria-label": `Open ${e.mode === "examples" ? "examples run" : "submission"} from ${when}` }, "Open"),
            e.code
              ? h("button", {
                  type: "button",
                  class: "button small subtle",
                  "aria-label": `Restore code from ${when}`,
                  onclick: () => {
                    if (window.confirm("Replace the code in the editor with this submission's code?")) {
                      editor.setCode(e.code);
                      editor.focus();
                    }
                  },
                }, "Restore code")
              : null,
          ),
        );
      }),
    ),
  );
}

// ---------------------------------------------------------------- start

async function main() {
  const root = document.getElementById("main");
  try {
    problem = (await api(`/api/problems/${encodeURIComponent(problemId)}`)).data;
  } catch (err) {
    fill(root, h("h1", {}, "Problem not available"), h("p", { class: "error", role: "alert" }, describeError(err)), h("p", {}, h("a", { href: "/" }, "Back to the problems")));
    return;
  }
  requirementTitles = Object.fromEntries(problem.requirements.map((r) => [r.id, r.title]));
  document.title = `${problem.title} · TensorJudge`;
  fill(root, h("div", { class: "problem-layout" }, statementColumn(problem), workspaceColumn()));
  editor = createEditor({
    parent: document.getElementById("editor"),
    doc: initialCode(),
    labelledBy: "editor-heading",
    describedBy: "editor-help",
    onChange: saveDraft,
    onSubmit: () => grade("submit"),
    onRunExamples: () => grade("examples"),
  });
  document.addEventListener("keydown", (event) => {
    // The editor handles its own shortcut; this covers focus anywhere else on the page.
    if (event.defaultPrevented || event.key !== "Enter" || !(event.ctrlKey || event.metaKey)) return;
    event.preventDefault();
    grade(event.shiftKey ? "examples" : "submit");
  });
  window.addEventListener("pagehide", () => {
    clearTimeout(saveTimer);
    localStore.set(draftKey, { code: editor.getCode(), saved_at: new Date().toISOString() });
  });
  renderHistory();
  if (assignmentId) refreshAssignment();
}

main();
