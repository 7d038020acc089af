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
    h("div", {}, h("p", { class: "verdict-label" }, v.label), h("p", { class: "verdict-meta" }, bits.join(" · "))),
  );
}

function requirementList(requirements) {
  if (!requirements || requirements.length === 0) return null;
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

function diagnosisCards(diagnoses, requirementTitles) {
  if (!diagnoses || diagnoses.length === 0) return null;
  return h(
    "section",
    { class: "result-block", "aria-labelledby": "diag-heading" },
    h("h3", { id: "diag-heading" }, diagnoses.length === 1 ? "What went wrong" : `What went wrong (${diagnoses.length} findings)`),
    diagnoses.map((d) =>
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
      ),
    ),
  );
}

// The parts of a case that have a shape and an error: the case itself, or each of its named
// outputs when the function returns several.
function parts(t) {
  return Array.isArray(t.outputs) && t.outputs.length ? t.outputs.map((o) => ({ ...o, caseName: `${t.name}, output ${o.name}`, output: o.name })) : [{ ...t, caseName: t.name, output: null }];
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

function testTable(tests) {
  if (!tests || tests.length === 0) return null;
  const passed = tests.filter((t) => t.status === "passed").length;
  return h(
    "section",
    { class: "result-block", "aria-labelledby": "tests-heading" },
    h("h3", { id: "tests-heading" }, `Tests (${passed} of ${tests.length} passed)`),
    h(
      "div",
      { class: "table-scroll", tabindex: "0", role: "region", "aria-labelledby": "tests-heading" },
      h(
        "table",
        { class: "tests" },
        h(
          "thead",
          {},
          h("tr", {}, ["Case", "Visibility", "Status", "Message", "Largest error", "At", "Shape (expected / yours)", "Time"].map((c) => h("th", { scope: "col" }, c))),
        ),
        h(
          "tbody",
          {},
          tests.map((t) =>
            h(
              "tr",
              { class: `case-${t.status}`, "data-case": t.name },
              h("th", { scope: "row" }, t.name),
              h("td", {}, t.visibility),
              h("td", { class: "case-status nowrap" }, CASE_STATUS[t.status] || t.status),
              messageCell(t),
              h("td", { class: "nowrap" }, t.max_error !== null && t.max_error !== undefined ? formatNumber(t.max_error) : ""),
              h("td", { class: "nowrap" }, Array.isArray(t.max_error_index) ? `[${t.max_error_index.join(", ")}]` : ""),
              h("td", { class: "nowrap" }, t.expected_shape || t.actual_shape ? `${shapeText(t.expected_shape) || "?"} / ${shapeText(t.actual_shape) || "?"}` : ""),
              h("td", { class: "nowrap" }, formatSeconds(t.seconds)),
            ),
          ),
        ),
      ),
    ),
  );
}

const TRACEBACK_LINES = 30;

function outputBlock(sub) {
  const parts = [];
  if (sub.error) {
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

export function renderResult(sub, { mode, requirementTitles = {} } = {}) {
  if (sub.status && sub.status !== "done") {
    return h("p", {}, `Submission ${sub.id} is ${sub.status}.`);
  }
  return h(
    "div",
    { class: "result", "data-submission": sub.id },
    banner(sub, mode),
    policyNote(sub),
    requirementList(sub.requirements),
    diagnosisCards(sub.diagnoses, requirementTitles),
    pictureFor(sub.tests),
    testTable(sub.tests),
    outputBlock(sub),
    sub.id ? h("p", { class: "note" }, `Submission ${sub.id}${sub.finished_at ? `, finished ${new Date(sub.finished_at).toLocaleString()}` : ""}.`) : null,
  );
}
