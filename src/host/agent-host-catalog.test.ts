import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { type Catalog, loadCatalog } from "../agent/definitions/catalog.js";
import type { HostClient } from "../client-core/host-client.js";
import { CATALOG_LIMITS, type DecodedCatalog, decodeCatalog } from "../protocol/catalog.js";
import type { AgentHostOptions } from "./agent-host.js";
import { connectHost } from "./test-support/host-client.js";
import { type Cleanups, connectCoreClient, serveThreadlessHost } from "./test-support/threadless-host.js";

const cleanups: Cleanups = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const serve = (options: AgentHostOptions) => serveThreadlessHost(options, cleanups);

const coreClient = (url: string) => connectCoreClient(url, cleanups);

const nextCatalog = (client: HostClient) =>
  new Promise<DecodedCatalog>((resolve) => {
    const off = client.on("catalog", (catalog) => {
      off();
      resolve(catalog);
    });
  });

/** A repository with one skill and one agent, and a user folder with one skill. */
async function catalog(): Promise<Catalog> {
  const root = await mkdtemp(path.join(os.tmpdir(), "spark-host-catalog-"));
  execFileSync("git", ["init", "-q"], { cwd: root });
  const files: Record<string, string> = {
    ".agents/skills/pdf/SKILL.md": "---\nname: pdf\ndescription: PDF work.\n---\nSECRET BODY\n",
    ".agents/agents/reviewer.md":
      "---\nname: reviewer\ndescription: Reviews.\ntools: [read_file]\n---\nSECRET INSTRUCTIONS\n",
    "user/skills/notes/SKILL.md": "---\nname: notes\ndescription: My notes.\n---\nMine.\n",
  };
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await writeFile(path.join(root, name), text);
  }
  return loadCatalog({ repoRoot: root, userDir: path.join(root, "user") });
}

describe("the agent host lists skills and defined agents (catalog)", () => {
  test("each client gets names, descriptions, sources and files on connecting; never bodies", async () => {
    const { url } = await serve({ catalog: await catalog() });
    const raw = await connectHost(url);
    cleanups.push(() => raw.ws.close());
    const event = await raw.next((e) => e.type === "catalog", 0);
    expect(JSON.stringify(event)).not.toMatch(/SECRET/);
    expect(event).toMatchObject({
      type: "catalog",
      skills: [
        { name: "notes", description: "My notes.", source: "user" },
        { name: "pdf", description: "PDF work.", source: "project", file: ".agents/skills/pdf/SKILL.md" },
      ],
      agents: [
        {
          name: "reviewer",
          description: "Reviews.",
          source: "project",
          file: ".agents/agents/reviewer.md",
          tools: ["read_file"],
        },
      ],
    });
    const core = await coreClient(url);
    const listed = core.catalog.skills.length > 0 ? core.catalog : await nextCatalog(core);
    expect(listed.skills.map((skill) => skill.name)).toEqual(["notes", "pdf"]);
    expect(listed.agents.map((agent) => agent.name)).toEqual(["reviewer"]);
  });

  test("a client connected before the catalog was read gets it when it is; none is sent when empty", async () => {
    const { host, url } = await serve({});
    const core = await coreClient(url);
    const coming = nextCatalog(core);
    host.listCatalog({ skills: [], agents: [], problems: [] });
    host.listCatalog(await catalog());
    expect((await coming).skills.map((skill) => skill.name)).toEqual(["notes", "pdf"]);
  });
});

describe("decodeCatalog", () => {
  const skill = {
    name: "pdf",
    description: "PDF work.",
    source: "project",
    file: ".agents/skills/pdf/SKILL.md",
  };

  test("keeps only the known fields", () => {
    expect(
      decodeCatalog([{ ...skill, extra: 1 }], [{ ...skill, tools: ["read_file"], tier: "deep" }]),
    ).toEqual({
      ok: true,
      catalog: { skills: [skill], agents: [{ ...skill, tools: ["read_file"], tier: "deep" }] },
    });
  });

  test.each([
    [{ skills: "x" as unknown, agents: [] as unknown }, "skills is not an array"],
    [{ skills: [{ ...skill, source: "web" }], agents: [] }, "skills[0].source is not one of user, project"],
    [{ skills: [skill, skill], agents: [] }, 'skills[1].name repeats "pdf"'],
    [
      { skills: [{ ...skill, description: "" }], agents: [] },
      "skills[0].description is not a text of 1-1024",
    ],
    [{ skills: [], agents: [{ ...skill, tools: "read_file" }] }, "agents[0].tools is not a list"],
    [
      { skills: Array.from({ length: CATALOG_LIMITS.skills + 1 }, () => skill), agents: [] },
      `skills lists more than ${CATALOG_LIMITS.skills} entries`,
    ],
  ])("rejects a frame whole (%#)", (frame, reason) => {
    const decoded = decodeCatalog(frame.skills, frame.agents);
    expect(decoded.ok).toBe(false);
    expect(decoded.ok ? "" : decoded.reason).toContain(reason);
  });
});
