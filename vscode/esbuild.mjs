// Bundles the extension (Node, CommonJS, `vscode` external) and the chat view's script (browser).
// Protocol types come from ../src/protocol as type-only imports: nothing of the server is bundled.
import * as esbuild from "esbuild";

const production = process.argv.includes("--production");
const watch = process.argv.includes("--watch");

const shared = {
  bundle: true,
  minify: production,
  sourcemap: production ? false : "linked",
  logLevel: "info",
  legalComments: "none",
};

const contexts = await Promise.all([
  esbuild.context({
    ...shared,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.cjs",
    platform: "node",
    format: "cjs",
    target: "node20",
    // `ws` tries these optional native helpers; without them it uses its JavaScript fallbacks.
    external: ["vscode", "bufferutil", "utf-8-validate"],
  }),
  esbuild.context({
    ...shared,
    entryPoints: ["src/webview/chat-app.ts"],
    outfile: "dist/webview.js",
    platform: "browser",
    format: "iife",
    target: "es2022",
  }),
]);

if (watch) {
  await Promise.all(contexts.map((context) => context.watch()));
} else {
  await Promise.all(contexts.map((context) => context.rebuild()));
  await Promise.all(contexts.map((context) => context.dispose()));
}
