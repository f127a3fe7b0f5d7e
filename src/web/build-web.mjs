#!/usr/bin/env node
// Builds the web app (src/web/app) into dist/web/app: one hashed JS bundle and one hashed CSS file,
// and index.html pointing at them. `npm run build:web`; `npm run build` runs it. `--out DIR` builds
// elsewhere (the browser tests build the current sources into a temporary folder).
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("../..", import.meta.url));
const source = path.join(root, "src/web/app");
const at = process.argv.indexOf("--out");
const out = at === -1 ? path.join(root, "dist/web/app") : path.resolve(process.argv[at + 1]);

await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });
const result = await build({
  entryPoints: { app: path.join(source, "main.tsx") },
  outdir: path.join(out, "assets"),
  entryNames: "[name]-[hash]",
  bundle: true,
  format: "esm",
  target: ["es2022", "chrome111", "firefox111", "safari16"],
  jsx: "automatic",
  jsxImportSource: "preact",
  minify: true,
  sourcemap: "linked",
  legalComments: "none",
  metafile: true,
  logLevel: "warning",
});
const outputs = Object.keys(result.metafile.outputs).map((file) => path.relative(out, path.resolve(file)));
const js = outputs.find((file) => file.endsWith(".js"));
const css = outputs.find((file) => file.endsWith(".css"));
if (!js || !css) throw new Error(`build-web: expected a .js and a .css output, got ${outputs.join(", ")}`);
const html = (await readFile(path.join(source, "index.html"), "utf8"))
  .replace("%APP_JS%", `/${js.split(path.sep).join("/")}`)
  .replace("%APP_CSS%", `/${css.split(path.sep).join("/")}`);
await writeFile(path.join(out, "index.html"), html);
const size = (file) =>
  result.metafile.outputs[path.relative(process.cwd(), path.join(out, file))]?.bytes ?? 0;
console.log(
  `build-web: ${js} (${(size(js) / 1024).toFixed(1)} KiB), ${css} (${(size(css) / 1024).toFixed(1)} KiB)`,
);
