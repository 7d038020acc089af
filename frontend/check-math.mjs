// Renders a problem statement (stdin) the way the problem page does and prints, one per line as
// JSON, the formulas KaTeX cannot parse: `python -m app problems check` reads them.
import { readFileSync } from "node:fs";
import { renderMarkdown } from "./src/lib/markdown.js";

const html = renderMarkdown(readFileSync(0, "utf8"));
const errors = [...html.matchAll(/class="katex-error" title="([^"]*)"/g)].map((m) => m[1]);
for (const error of errors) console.log(JSON.stringify(error));
