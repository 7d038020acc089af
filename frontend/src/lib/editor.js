// The code editor: CodeMirror 6 with Python highlighting, line numbers and 4-space indents.
// Tab indents; Esc then Tab (or Ctrl-M to toggle) moves focus out, so keyboard users are never
// trapped in the editor.
import { basicSetup } from "codemirror";
import { indentWithTab, temporarilySetTabFocusMode } from "@codemirror/commands";
import { python } from "@codemirror/lang-python";
import { indentUnit } from "@codemirror/language";
import { EditorState, Prec, StateEffect, StateField } from "@codemirror/state";
import { Decoration, EditorView, keymap } from "@codemirror/view";

// The line an error points to (a syntax error, a failed import): marked until the next run, and
// kept on the same text while the student edits around it.
const setErrorLine = StateEffect.define();
const errorLine = StateField.define({
  create: () => Decoration.none,
  update(marks, tr) {
    let next = marks.map(tr.changes);
    for (const effect of tr.effects) {
      if (!effect.is(setErrorLine)) continue;
      const mark = effect.value;
      next = mark
        ? Decoration.set([Decoration.line({ class: "cm-error-line", attributes: { "data-error-line": String(mark.line), title: mark.message } }).range(mark.from)])
        : Decoration.none;
    }
    return next;
  },
  provide: (field) => EditorView.decorations.from(field),
});

/**
 * createEditor({parent, doc, labelledBy, describedBy, onChange, onSubmit, onRunExamples})
 */
export function createEditor({ parent, doc, labelledBy, describedBy, onChange, onSubmit, onRunExamples }) {
  const shortcuts = Prec.highest(
    keymap.of([
      { key: "Mod-Enter", run: () => (onSubmit(), true) },
      { key: "Shift-Mod-Enter", run: () => (onRunExamples(), true) },
      {
        key: "Escape",
        run: (view) => {
          // First Escape collapses a multi-selection (CodeMirror's default); with a plain
          // cursor it frees the Tab key for two seconds so focus can leave.
          if (view.state.selection.ranges.length > 1) return false;
          return temporarilySetTabFocusMode(view);
        },
      },
    ]),
  );

  const attributes = { "aria-multiline": "true" };
  if (labelledBy) attributes["aria-labelledby"] = labelledBy;
  if (describedBy) attributes["aria-describedby"] = describedBy;

  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        shortcuts,
        basicSetup,
        keymap.of([indentWithTab]),
        python(),
        indentUnit.of("    "),
        EditorState.tabSize.of(4),
        EditorView.contentAttributes.of(attributes),
        // Wrapped lines: no sideways scrolling at phone width, and no scroll region that a
        // keyboard user would have to reach separately from the text.
        EditorView.lineWrapping,
        errorLine,
        EditorView.updateListener.of((update) => {
          if (update.docChanged) onChange(update.state.doc.toString());
        }),
      ],
    }),
  });
  return {
    view,
    getCode: () => view.state.doc.toString(),
    setCode: (code) =>
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: code } }),
    focus: () => view.focus(),
    /** Marks line `line` (1-based) as the one an error points to and scrolls it into view. */
    markLine: (line, message = "") => {
      const doc = view.state.doc;
      if (!Number.isInteger(line) || line < 1 || line > doc.lines) return false;
      const from = doc.line(line).from;
      view.dispatch({ effects: [setErrorLine.of({ line, from, message }), EditorView.scrollIntoView(from, { y: "center" })] });
      return true;
    },
    clearMark: () => view.dispatch({ effects: setErrorLine.of(null) }),
  };
}
