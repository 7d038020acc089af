// Problem statements: markdown with $...$ / $$...$$ math. Math is cut out by marked extensions
// before any markdown rule sees it, so underscores, asterisks and backslashes inside formulas
// reach KaTeX untouched. Statements are written by problem authors (trusted), not by students.
import katex from "katex";
import { Marked } from "marked";
import { pythonLanguage } from "@codemirror/lang-python";
import { classHighlighter, highlightCode } from "@lezer/highlight";

function tex(source, displayMode) {
  return katex.renderToString(source, {
    displayMode,
    throwOnError: false, // a typo in a statement shows red source, not a blank page
    output: "htmlAndMathml", // MathML keeps formulas readable by screen readers
    strict: "ignore",
  });
}

// First "$" that is not escaped as "\$".
function firstDollar(src) {
  for (let i = src.indexOf("$"); i !== -1; i = src.indexOf("$", i + 1)) {
    if (i === 0 || src[i - 1] !== "\\") return i;
  }
  return undefined;
}

const INLINE_DISPLAY = /^\$\$((?:\\[\s\S]|[^\\$])+?)\$\$/;
// Opening "$" not followed by a space, closing "$" not preceded by one nor followed by a digit,
// so prices like "$5 and $6" stay text; no blank line inside.
const INLINE = /^\$(?!\s)((?:\\[\s\S]|[^\\$\n]|\n(?![ \t]*\n))+?)(?<!\s)\$(?!\d)/;
const BLOCK = /^ {0,3}\$\$((?:\\[\s\S]|[^\\$])+?)\$\$[ \t]*(?:\n+|$)/;

const mathExtension = {
  extensions: [
    {
      name: "blockMath",
      level: "block",
      start(src) {
        const m = /(^|\n) {0,3}\$\$/.exec(src);
        return m ? m.index + m[1].length : undefined;
      },
      tokenizer(src) {
        const m = BLOCK.exec(src);
        if (m) return { type: "blockMath", raw: m[0], text: m[1].trim() };
        return undefined;
      },
      renderer(token) {
        return `<div class="math-display">${tex(token.text, true)}</div>\n`;
      },
    },
    {
      name: "inlineMath",
      level: "inline",
      start: firstDollar,
      tokenizer(src) {
        let m = INLINE_DISPLAY.exec(src);
        if (m) return { type: "inlineMath", raw: m[0], text: m[1].trim(), display: true };
        m = INLINE.exec(src);
        if (m) return { type: "inlineMath", raw: m[0], text: m[1], display: false };
        return undefined;
      },
      renderer(token) {
        return token.display
          ? `<span class="math-display">${tex(token.text, true)}</span>`
          : tex(token.text, false);
      },
    },
  ],
};

function escapeHtml(s) {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function highlightPython(code) {
  let html = "";
  highlightCode(
    code,
    pythonLanguage.parser.parse(code),
    classHighlighter,
    (text, classes) => {
      html += classes ? `<span class="${classes}">${escapeHtml(text)}</span>` : escapeHtml(text);
    },
    () => {
      html += "\n";
    },
  );
  return html;
}

const marked = new Marked({ gfm: true }, mathExtension, {
  renderer: {
    // The page title is the only h1; statement headings move one level down.
    heading({ tokens, depth }) {
      const level = Math.min(depth + 1, 6);
      return `<h${level}>${this.parser.parseInline(tokens)}</h${level}>\n`;
    },
    code({ text, lang }) {
      const language = (lang || "").trim().split(/\s+/)[0];
      const body = language === "python" || language === "py" ? highlightPython(text) : escapeHtml(text);
      const cls = language ? ` class="language-${escapeHtml(language)}"` : "";
      return `<pre class="code-block" tabindex="0"><code${cls}>${body}</code></pre>\n`;
    },
  },
});

export function renderMarkdown(source, { dropTitle = false } = {}) {
  // The page shows the problem's title already; a statement's own leading "# Title" would repeat it.
  const text = dropTitle ? source.replace(/^\s*# [^\n]*\n/, "") : source;
  return marked.parse(text, { async: false });
}

/** Renders into `container`, wrapping wide tables so they scroll instead of the whole page. */
export function renderMarkdownInto(container, source, options = {}) {
  container.innerHTML = renderMarkdown(source, options);
  for (const table of container.querySelectorAll("table")) {
    const wrap = document.createElement("div");
    wrap.className = "table-scroll";
    wrap.tabIndex = 0; // scrollable regions must be reachable by keyboard
    wrap.setAttribute("role", "region");
    wrap.setAttribute("aria-label", "Table (scrolls sideways)");
    table.replaceWith(wrap);
    wrap.append(table);
  }
  return container;
}
