// Time from an edit to its diagnostics on a small TypeScript project, cold then warm (needs dist/: npx tsc -p tsconfig.build.json).
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EditDiagnostics } from "../dist/agent/diagnostics/edit-diagnostics.js";
import { CommandSandbox } from "../dist/agent/sandbox/command-sandbox.js";

const dir = await realpath(await mkdtemp(join(tmpdir(), "spark-diag-measure-")));
await mkdir(join(dir, "src"));
await writeFile(
  join(dir, "tsconfig.json"),
  JSON.stringify({ compilerOptions: { strict: true, noEmit: true }, include: ["src"] }),
);
for (let i = 0; i < 10; i++)
  await writeFile(
    join(dir, `src/m${i}.ts`),
    `export function f${i}(n: number): number {\n  return n + ${i};\n}\n`,
  );
const d = new EditDiagnostics({
  root: dir,
  sandbox: new CommandSandbox(),
  budgetMs: 30000,
  startBudgetMs: 60000,
});
let text = "import { f1 } from './m1';\nexport const x: number = f1(1);\n";
await writeFile(join(dir, "src/main.ts"), text);
const times = [];
for (let i = 0; i < 8; i++) {
  const bad = i % 2 === 0;
  const after = `import { f1 } from "./m1";\nexport const x: ${bad ? "string" : "number"} = f1(${i});\n`;
  await writeFile(join(dir, "src/main.ts"), after);
  const t0 = performance.now();
  const r = await d.check([{ path: "src/main.ts", absolute: join(dir, "src/main.ts"), before: text, after }]);
  times.push(Math.round(performance.now() - t0));
  console.log(
    i === 0 ? "cold" : "warm",
    times.at(-1),
    "ms",
    r.diagnostics.length,
    "errors",
    r.notices.join(" "),
  );
  text = after;
}
await d.dispose();
await rm(dir, { recursive: true, force: true });
const warm = times.slice(1).sort((a, b) => a - b);
console.log(
  `cold ${times[0]} ms; warm median ${warm[Math.floor(warm.length / 2)]} ms (min ${warm[0]}, max ${warm.at(-1)})`,
);
