// Bundles frontend/src into app/web/static/dist (served at /static/dist). No CDN at run time:
// every script, style and KaTeX font the pages use ends up in that folder.
import { build } from "esbuild";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = resolve(here, "../app/web/static/dist");

await rm(outdir, { recursive: true, force: true });
await mkdir(outdir, { recursive: true });

const result = await build({
  absWorkingDir: here,
  entryPoints: {
    index: "src/pages/index.js",
    problem: "src/pages/problem.js",
    instructor: "src/pages/instructor.js",
    admin: "src/pages/admin.js",
    courses: "src/pages/courses.js",
    join: "src/pages/join.js",
    roster: "src/pages/roster.js",
    nav: "src/pages/nav.js",
    login: "src/pages/login.js",
    account: "src/pages/account.js",
    reset: "src/pages/reset.js",
    setup: "src/pages/setup.js",
    signup: "src/pages/signup.js",
    verify: "src/pages/verify.js",
    course: "src/pages/course.js",
    assignment: "src/pages/assignment.js",
    gradebook: "src/pages/gradebook.js",
    "gradebook-student": "src/pages/gradebook-student.js",
    similarity: "src/pages/similarity.js",
    app: "src/styles/app.css",
  },
  outdir,
  bundle: true,
  format: "esm",
  splitting: true,
  minify: true,
  sourcemap: true,
  target: ["es2020"],
  chunkNames: "chunks/[name]-[hash]",
  assetNames: "assets/[name]-[hash]",
  // KaTeX's stylesheet names its fonts; copying them keeps the math readable offline.
  loader: { ".woff2": "file", ".woff": "file", ".ttf": "file" },
  metafile: true,
  logLevel: "warning",
});

// The web router checks this file to tell "assets not built" from a working install.
await writeFile(resolve(outdir, "BUILT"), new Date().toISOString() + "\n");
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.log(`built ${Object.keys(result.metafile.outputs).length} files, ${bytes} bytes -> ${outdir}`);
