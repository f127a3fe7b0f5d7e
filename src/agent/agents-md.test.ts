import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import { discoverAgentsFiles } from "./agents-md.js";

async function repo(): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), "spark-agents-md-"));
  await mkdir(path.join(root, ".git"));
  return root;
}

test("AGENTS.md files from the repository root down to the working directory, outermost first", async () => {
  const root = await repo();
  await mkdir(path.join(root, "pkg", "src"), { recursive: true });
  await writeFile(path.join(root, "AGENTS.md"), "root rules");
  await writeFile(path.join(root, "pkg", "AGENTS.md"), "package rules");
  const files = await discoverAgentsFiles(path.join(root, "pkg", "src"));
  expect(files.map((file) => [path.relative(root, file.path), file.content])).toEqual([
    ["AGENTS.md", "root rules"],
    [path.join("pkg", "AGENTS.md"), "package rules"],
  ]);
});

test("a large file is cut at the byte budget and says so", async () => {
  const root = await repo();
  await writeFile(path.join(root, "AGENTS.md"), "x".repeat(100));
  const [file] = await discoverAgentsFiles(root, { maxBytes: 10 });
  expect(file?.content).toBe(`${"x".repeat(10)}\n[truncated]`);
});

test("an AGENTS.md that cannot be read is reported, not silently skipped; absent ones are not", async () => {
  const root = await repo();
  await mkdir(path.join(root, "pkg"));
  await mkdir(path.join(root, "pkg", "AGENTS.md"));
  const notices: string[] = [];
  const files = await discoverAgentsFiles(path.join(root, "pkg"), { onUnreadable: (m) => notices.push(m) });
  expect(files).toEqual([]);
  expect(notices).toHaveLength(1);
  expect(notices[0]).toContain(path.join(root, "pkg", "AGENTS.md"));
  expect(notices[0]).toContain("EISDIR");
});
