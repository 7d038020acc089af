// "/": the list of problems.
import { api, describeError } from "../lib/api.js";
import { fill, h } from "../lib/dom.js";
import { hasAccepted } from "../lib/history.js";

async function main() {
  const root = document.getElementById("main");
  try {
    const { data } = await api("/api/problems");
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
    );
  } catch (err) {
    fill(root, h("h1", {}, "Problems"), h("p", { class: "error", role: "alert" }, `Could not load the problems: ${describeError(err)}`));
  }
}

main();
