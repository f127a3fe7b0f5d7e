import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { type Catalog, loadCatalog } from "../../agent/definitions/catalog.js";
import { HostClient } from "../../client-core/host-client.js";
import { threadlessHost } from "../../host/test-support/threadless-host.js";
import { socketPair } from "../../runtime/in-memory-socket.js";
import { tuiHarness } from "./test-support/tui-harness.js";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** The client core's HostClient on an in-process agent host listing `catalog`, once it has it. */
async function hostListing(catalog: Catalog): Promise<HostClient> {
  const host = threadlessHost({ catalog });
  const client = new HostClient({
    url: "memory://spark/v1/agent",
    createSocket: () => {
      const { host: end, client: socket } = socketPair();
      host.accept(end);
      return socket;
    },
  });
  cleanups.push(() => {
    client.dispose();
    host.dispose();
  });
  const listed = new Promise((resolve) => client.on("catalog", resolve));
  await client.connect();
  if (catalog.skills.length + catalog.agents.length > 0) await listed;
  return client;
}

async function repoCatalog(): Promise<Catalog> {
  const root = await mkdtemp(path.join(os.tmpdir(), "spark-tui-catalog-"));
  execFileSync("git", ["init", "-q"], { cwd: root });
  const files: Record<string, string> = {
    ".agents/skills/pdf/SKILL.md": "---\nname: pdf\ndescription: Fill and read PDF forms.\n---\nBody.\n",
    ".agents/agents/reviewer.md":
      "---\nname: reviewer\ndescription: Reviews a diff.\ntools: read_file, search\ntier: deep\n---\nReview.\n",
  };
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await writeFile(path.join(root, name), text);
  }
  return loadCatalog({ repoRoot: root, userDir: null });
}

describe("/skills and /agents in the terminal UI", () => {
  test("list the skills, and the defined agents beside the session's sub-agents", async () => {
    await using h = await tuiHarness({}, { script: [{ text: "hi" }] });
    h.mount({ mcp: hostListing(await repoCatalog()) });
    await h.stdout.waitForText("Ask Spark");
    await h.send("/skills");
    const skills = await h.stdout.waitForText("Skills (1)");
    expect(skills).toContain(
      `pdf (repository, ${path.join(".agents", "skills", "pdf", "SKILL.md")}): Fill and read PDF forms.`,
    );
    await h.send("/agents");
    const agents = await h.stdout.waitForText("Agents (1)");
    expect(agents).toContain("reviewer (repository, tools: read_file, search, tier deep): Reviews a diff.");
    expect(agents).toContain("No sub-agents in this session.");
  });

  test("with none they say where to add them", async () => {
    await using h = await tuiHarness({}, { script: [{ text: "hi" }] });
    h.mount({ mcp: hostListing({ skills: [], agents: [], problems: [] }) });
    await h.stdout.waitForText("Ask Spark");
    await h.send("/skills");
    await h.stdout.waitForText("No skills. Add a folder with a SKILL.md to .agents/skills/");
    await h.send("/agents");
    await h.stdout.waitForText("No agents defined. Add NAME.md to .agents/agents/");
  });
});
