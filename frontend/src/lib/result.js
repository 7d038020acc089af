// Renders one submission's GradeReport: verdict banner, requirement checklist, diagnosis cards,
// one picture, the test table, and the program's output.
import { formatNumber, formatSeconds, h, shapeText } from "./dom.js";
import { errorPicture, shapePicture } from "./pictures.js";

export const VERDICTS = {
  accepted: { label: "Accepted", tone: "good", icon: "✓" },
  wrong_answer: { label: "Wrong answer", tone: "bad", icon: "✗" },
  runtime_error: { label: "Runtime error", tone: "bad", icon: "!" },
  time_limit_exceeded: { label: "Time limit exceeded", tone: "bad", icon: "⧗" },
  memory_limit_exceeded: { label: "Memory limit exceeded", tone: "bad", icon: "!" },
  output_limit_exceeded: { label: "Output limit exceeded", tone: "bad", icon: "!" },
  compile_error: { label: "Does not compile", tone: "bad", icon: "!" },
  internal_error: { label: "Grader error (not your fault)", tone: "warn", icon: "?" },
};

export function verdictLabel(verdict) {
  return (VERDICTS[verdict] && VERDICTS[verdict].label) || String(verdict || "unknown");
}

/** A result's headline: code that failed to load says how ("No function named softmax_backward",
 * "Syntax error on line 4") rather than "Does not compile". */
export function resultLabel(sub) {
  const failure = sub && sub.load_failure;
  if (failure && failure.title && sub.verdict === "compile_error") return failure.title;
  return verdictLabel(sub && sub.verdict);
}

const REQUIREMENT_MARK = {
  passed: { icon: "✓", text: "passed" },
  failed: { icon: "✗", text: "failed" },
  not_checked: { icon: "–", text: "not checked" },
};

const CASE_STATUS = { passed: "✓ passed", failed: "✗ failed", error: "! error" };

function percent(score) {
  return typeof score === "number" ? `${Math.round(score * 100)}%` : "";
}

function modeLabel(mode) {
  if (mode === "examples") return "public examples only";
  if (mode === "submit") return "all tests";
  return "";
}

function banner(sub, mode) {
  const v = VERDICTS[sub.verdict] || { label: sub.verdict, tone: "warn", icon: "?" };
  const total = sub.timings && typeof sub.timings.total === "number" ? sub.timings.total : null;
  const score = sub.score_hidden ? "score hidden until published" : `score ${percent(sub.score)}`;
  const bits = [score, modeLabel(mode), total !== null ? `graded in ${formatSeconds(total)}` : ""].filter(Boolean);
  return h(
    "div",
    { class: `verdict tone-${v.tone}`, "data-verdict": sub.verdict, id: "verdict" },
    h("span", { class: "verdict-icon", "aria-hidden": "true" }, v.icon),
    h("div", {}, h("p", { class: "verdict-label" }, resultLabel(sub)), h("p", { class: "verdict-meta" }, bits.join(" · "))),
  );
}

function requirementList(requirements, loadFailed) {
  if (!requirements || requirements.length === 0) return null;
  if (loadFailed && requirements.every((r) => r.status === "not_checked")) {
    return h(
      "section",
      { class: "result-block", "aria-labelledby": "req-heading" },
      h("h3", { id: "req-heading" }, "Requirements"),
      h("p", { class: "not-run", "data-not-checked": requirements.length }, `None of the ${requirements.length} requirements could be checked: your code did not load.`),
    );
  }
  return h(
    "section",
    { class: "result-block", "aria-labelledby": "req-heading" },
    h("h3", { id: "req-heading" }, "Requirements"),
    h(
      "ul",
      { class: "checklist" },
      requirements.map((r) => {
        const mark = REQUIREMENT_MARK[r.status] || { icon: "?", text: r.status };
        return h(
          "li",
          { class: `req req-${r.status}`, "data-requirement": r.id, "data-status": r.status },
          h("span", { class: "req-icon", "aria-hidden": "true" }, mark.icon),
          h(
            "div",
            {},
            h("span", { class: "req-title" }, r.title),
            " ",
            h("span", { class: "req-status" }, `(${mark.text})`),
            r.detail ? h("p", { class: "req-detail" }, r.detail) : null,
          ),
        );
      }),
    ),
  );
}

function diagnosisCards(diagnoses, requirementTitles, pictures) {
  if (!diagnoses || diagnoses.length === 0) return null;
  return h(
    "section",
    { class: "result-block", "aria-labelledby": "diag-heading" },
    h("h3", { id: "diag-heading" }, diagnoses.length === 1 ? "What went wrong" : `What went wrong (${diagnoses.length} findings)`),
    diagnoses.map((d, i) =>
      h(
        "article",
        { class: "diagnosis", "data-code": d.code, "aria-labelledby": `diag-${d.code}` },
        h(
          "header",
          {},
          h("h4", { id: `diag-${d.code}` }, d.title),
          h("code", { class: "diag-code" }, d.code),
          d.requirement ? h("span", { class: "diag-req" }, `breaks: ${requirementTitles[d.requirement] || d.requirement}`) : null,
        ),
        h("p", { class: "diag-explanation" }, d.explanation),
        d.hint ? h("p", { class: "diag-hint" }, h("strong", {}, "Hint: "), d.hint) : null,
        d.evidence ? h("details", {}, h("summary", {}, "Evidence"), h("p", {}, d.evidence)) : null,
        // The picture shows where this output is off: it belongs to the finding, inside its card.
        i === 0 ? pictures : null,
      ),
    ),
  );
}

// The parts of a case that have a shape and an error: the case itself, or each of its named
// outputs when the function returns several.
function parts(t) {
  return Array.isArray(t.outputs) && t.outputs.length
    ? t.outputs.map((o) => ({ ...o, caseName: t.name, output: o.name }))
    : [{ ...t, caseName: t.name, output: null }];
}

/** One picture per output that is off: a shape diagram when a shape is wrong, else a heat map. */
function pictureFor(tests) {
  const all = (tests || []).flatMap(parts);
  const mismatch = all.filter(
    (t) => Array.isArray(t.expected_shape) && Array.isArray(t.actual_shape) && shapeText(t.expected_shape) !== shapeText(t.actual_shape),
  );
  if (mismatch.length) return firstPerOutput(mismatch).map((t) => shapePicture(t.expected_shape, t.actual_shape));
  const off = all.filter((t) => t.status !== "passed" && (Array.isArray(t.max_error_index) || Array.isArray(t.error_grid)));
  const pictures = firstPerOutput(off).map((t) =>
    errorPicture({
      shape: t.expected_shape || t.actual_shape,
      index: t.max_error_index,
      maxError: t.max_error,
      grid: t.error_grid,
      caseName: t.caseName,
      output: t.output,
    }),
  );
  return pictures.length ? pictures : null;
}

function firstPerOutput(items) {
  const seen = new Set();
  return items.filter((t) => !seen.has(t.output) && seen.add(t.output));
}

const OUTPUT_STATUS = { passed: "✓", failed: "✗" };

function messageCell(t) {
  const outputs = Array.isArray(t.outputs) && t.outputs.length ? t.outputs : null;
  return h(
    "td",
    { class: "case-message" },
    t.raises ? h("span", { class: "case-raises" }, `must raise ${t.raises}. `) : null,
    outputs
      ? h(
          "ul",
          { class: "case-outputs" },
          outputs.map((o) => h("li", { "data-output": o.name, "data-status": o.status }, h("code", {}, o.name), ` ${OUTPUT_STATUS[o.status] || o.status} `, o.message || "")),
        )
      : t.message || "",
  );
}

// A case the run never reached (the grader words it "not run: the run ended early (...)").
function notRun(t) {
  return t.status === "error" && /^not run\b/.test(t.message || "");
}

/** "(2, 3) / (2, 3)": expected, then yours. A hidden case shows no shape of yours (it would come
 * from the submission), except when it passed: then yours is the expected one. */
function shapeCell(t) {
  const expected = shapeText(t.expected_shape);
  const yours = shapeText(t.actual_shape) || (t.status === "passed" ? expected : "");
  if (!expected && !yours) return h("td", {});
  return h("td", { class: "case-shape" }, h("span", { class: "nowrap" }, expected || "?"), " / ", h("span", { class: "nowrap" }, yours || "?"));
}

function errorCell(t) {
  const hasError = t.max_error !== null && t.max_error !== undefined;
  const at = Array.isArray(t.max_error_index) ? `[${t.max_error_index.join(", ")}]` : "";
  return h("td", { class: "case-error" }, hasError ? h("span", { class: "nowrap" }, formatNumber(t.max_error)) : null, hasError && at ? " at " : null, at ? h("span", { class: "nowrap" }, at) : null);
}

function testTable(tests, loadFailed) {
  if (!tests || tests.length === 0) return null;
  const passed = tests.filter((t) => t.status === "passed").length;
  const skipped = tests.filter(notRun);
  const ran = tests.filter((t) => !notRun(t));
  const heading = h("h3", { id: "tests-heading" }, `Tests (${passed} of ${tests.length} passed)`);
  // Rows that did not run say nothing one by one: one line says how many.
  const why = loadFailed ? "your code did not load" : (skipped[0] && skipped[0].message.replace(/^not run:\s*/, "")) || "";
  const skippedLine = skipped.length
    ? h("p", { class: "not-run", "data-not-run": skipped.length }, ran.length ? `${skipped.length} more ${skipped.length === 1 ? "test" : "tests"} did not run: ${why}.` : `None of the ${skipped.length} tests ran: ${why}.`)
    : null;
  if (!ran.length) return h("section", { class: "result-block", "aria-labelledby": "tests-heading" }, heading, skippedLine);
  return h(
    "section",
    { class: "result-block", "aria-labelledby": "tests-heading" },
    heading,
    h(
      "div",
      { class: "table-scroll", tabindex: "0", role: "region", "aria-labelledby": "tests-heading" },
      h(
        "table",
        { class: "tests" },
        h(
          "thead",
          {},
          h("tr", {}, ["Case", "Visibility", "Status", "Message", "Largest error", "Shape (expected / yours)", "Time"].map((c) => h("th", { scope: "col" }, c))),
        ),
        h(
          "tbody",
          {},
          ran.map((t) =>
            h(
              "tr",
              { class: `case-${t.status}`, "data-case": t.name, "data-visibility": t.visibility },
              h("th", { scope: "row" }, t.name),
              h("td", {}, t.visibility),
              h("td", { class: "case-status nowrap" }, CASE_STATUS[t.status] || t.status),
              messageCell(t),
              errorCell(t),
              shapeCell(t),
              h("td", { class: "nowrap" }, formatSeconds(t.seconds)),
            ),
          ),
        ),
      ),
    ),
    skippedLine,
  );
}

const TRACEBACK_LINES = 30;

const LOAD_HINTS = {
  missing_function: "Define it at the top level of your code (not inside a class or another function), with exactly this name.",
  not_callable: "The name must be a function (def), not a variable or a class.",
  raised_on_import: "Code outside your function runs when your file is loaded; the line below raised.",
};

/** Code that failed before any case: the error and its line, first. */
function loadFailureBlock(sub, onShowLine) {
  const f = sub.load_failure;
  if (!f) return null;
  return h(
    "section",
    { class: "result-block load-failure", "aria-labelledby": "load-heading", "data-kind": f.kind, "data-line": f.line || undefined },
    h("h3", { id: "load-heading" }, f.title),
    h("p", { class: "load-message" }, h("code", {}, f.message)),
    LOAD_HINTS[f.kind] ? h("p", { class: "note" }, LOAD_HINTS[f.kind]) : null,
    sub.error && sub.error.trim() !== f.message ? h("pre", { class: "traceback", tabindex: "0", "aria-label": "Error and traceback" }, sub.error) : null,
    f.line && onShowLine ? h("button", { type: "button", class: "button subtle show-line", onclick: () => onShowLine(f.line) }, `Show line ${f.line} in the editor`) : null,
  );
}

function outputBlock(sub) {
  const parts = [];
  // A load failure's error is already shown first, in full.
  if (sub.error && !sub.load_failure) {
    const lines = sub.error.split("\n");
    const long = lines.length > TRACEBACK_LINES;
    const tail = long ? lines.slice(-TRACEBACK_LINES).join("\n") : sub.error;
    parts.push(
      h("h4", {}, "Error"),
      h("pre", { class: "traceback", tabindex: "0", "aria-label": "Error and traceback" }, (long ? "…\n" : "") + tail),
      long ? h("details", {}, h("summary", {}, `Full traceback (${lines.length} lines)`), h("pre", { class: "traceback", tabindex: "0" }, sub.error)) : null,
    );
  }
  for (const stream of ["stdout", "stderr"]) {
    if (sub[stream]) {
      parts.push(
        h("h4", {}, stream),
        h("pre", { class: "stream", tabindex: "0", "aria-label": stream }, sub[stream]),
        sub[`${stream}_truncated`] ? h("p", { class: "note" }, `${stream} was cut at the size limit.`) : null,
      );
    }
  }
  if (parts.length === 0) return null;
  return h("section", { class: "result-block", "aria-labelledby": "out-heading" }, h("h3", { id: "out-heading" }, "Output"), parts);
}

/** The full result panel for a finished submission. */
/** What an assignment's feedback policy left out of this report, said plainly. */
function policyNote(sub) {
  if (sub.view === "summary" && sub.hidden_total) {
    return h(
      "section",
      { class: "result-block policy-note", "data-view": "summary" },
      h("p", { class: "hidden-summary", "data-hidden-passed": sub.hidden_passed, "data-hidden-total": sub.hidden_total }, `${sub.hidden_passed} of ${sub.hidden_total} hidden cases passed`),
      h("p", { class: "note" }, "This assignment shows hidden cases only as a count; the requirements and the diagnosis below come from the public examples and the grader's probes."),
    );
  }
  if (sub.view === "verdict") {
    return h("p", { class: "result-block policy-note note", "data-view": "verdict" }, "Only the verdict is shown until your instructor publishes the feedback.");
  }
  return null;
}

export function renderResult(sub, { mode, requirementTitles = {}, onShowLine = null } = {}) {
  if (sub.status && sub.status !== "done") {
    return h("p", {}, `Submission ${sub.id} is ${sub.status}.`);
  }
  const loadFailed = Boolean(sub.load_failure);
  const pictures = pictureFor(sub.tests);
  const cards = diagnosisCards(sub.diagnoses, requirementTitles, pictures);
  return h(
    "div",
    { class: "result", "data-submission": sub.id },
    banner(sub, mode),
    policyNote(sub),
    loadFailureBlock(sub, onShowLine),
    requirementList(sub.requirements, loadFailed),
    cards,
    // Without a finding to hold them, the pictures stand on their own.
    cards ? null : pictures,
    testTable(sub.tests, loadFailed),
    outputBlock(sub),
    sub.id ? h("p", { class: "note" }, `Submission ${sub.id}${sub.finished_at ? `, finished ${new Date(sub.finished_at).toLocaleString()}` : ""}.`) : null,
  );
}
