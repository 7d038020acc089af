// Renders a problem statement (stdin) the way the problem page does and prints, one per line as
// JSON, the formulas KaTeX cannot parse: `python -m app problems check` reads them.
// With --batch, stdin is a JSON list of statements and stdout one JSON list of such lists (the
// server vets every folder at start-up with one node process, not one per folder).
import { readFileSync } from "node:fs";
import { renderMarkdown } from "./src/lib/markdown.js";

const errorsOf = (source) =>
  [...renderMarkdown(source).matchAll(/class="katex-error" title="([^"]*)"/g)].map((m) => m[1]);

const input = readFileSync(0, "utf8");
if (process.argv.includes("--batch")) {
  console.log(JSON.stringify(JSON.parse(input).map(errorsOf)));
} else {
  for (const error of errorsOf(input)) console.log(JSON.stringify(error));
}
