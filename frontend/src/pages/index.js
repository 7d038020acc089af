// "/": the list of problems.
import { api, describeError } from "../lib/api.js";
import { fill, h } from "../lib/dom.js";
import { hasAccepted } from "../lib/history.js";

// The one-line install of the `tj` client, when this server has its wheel built.
function clientSection(wheel) {
  if (!wheel) return null;
  const origin = window.location.origin;
  return h(
    "section",
    { class: "client-install", "aria-labelledby": "client-heading" },
    h("h2", { id: "client-heading" }, "Work from a terminal or a notebook"),
    h("p", {}, "Install the client with one line:"),
    h("pre", { class: "code-block", tabindex: "0" }, h("code", { id: "client-install" }, `pip install ${origin}${wheel.path}`)),
    h(
      "p",
      { class: "note" },
      "Then ",
      h("code", {}, `tj --url ${origin} problems`),
      ", ",
      h("code", {}, "tj start ID"),
      " and ",
      h("code", {}, "tj submit ID FILE"),
      "; in Jupyter, ",
      h("code", {}, `Judge("${origin}").submit(ID, your_function)`),
      ".",
    ),
  );
}

async function main() {
  const root = document.getElementById("main");
  try {
    // A server without the wheel built still lists its problems.
    const [{ data }, wheel] = await Promise.all([
      api("/api/problems"),
      api("/api/client").then((r) => r.data, () => null),
    ]);
    const missing = document.body.dataset.missingProblem;
    fill(root, 
      missing ? h("p", { class: "message warn", role: "alert" }, `There is no problem called "${missing}". Here are the ones there are.`) : null,
      h("h1", {}, "Problems"),
      h("p", { class: "lead" }, "Pick a problem, write a NumPy function in the editor, and the grader tells you which requirement failed and why."),
      data.length === 0
        ? h("p", {}, "No problems are loaded.")
        : h(
            "ul",
            { class: "problem-list" },
            data.map((p) =>
              h(
                "li",
                { class: "problem-card" },
                h("h2", {}, h("a", { href: `/problems/${encodeURIComponent(p.id)}` }, p.title)),
                h(
                  "p",
                  { class: "meta" },
                  h("span", { class: `badge difficulty-${p.difficulty}` }, p.difficulty),
                  hasAccepted(p.id) ? h("span", { class: "badge solved" }, "✓ solved") : null,
                ),
                h("p", {}, p.summary),
              ),
            ),
          ),
      clientSection(wheel),
    );
  } catch (err) {
    fill(root, h("h1", {}, "Problems"), h("p", { class: "error", role: "alert" }, `Could not load the problems: ${describeError(err)}`));
  }
}

main();
