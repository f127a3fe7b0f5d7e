import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { Workspace } from "../workspace.js";
import { expandMentions, findMentions, MAX_MENTION_BYTES, MAX_MENTIONED_FILES } from "./file-mentions.js";

let root: string;
let outside: string;
let workspace: Workspace;

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "spark-mentions-"));
  outside = await mkdtemp(path.join(os.tmpdir(), "spark-mentions-outside-"));
  await mkdir(path.join(root, "src"));
  await mkdir(path.join(root, ".git"));
  await writeFile(path.join(root, "src", "parser.ts"), "export const x = 1;\n");
  await writeFile(path.join(root, "fenced.md"), "text\n```ts\ncode\n```\n");
  await writeFile(path.join(root, "big.txt"), "a".repeat(MAX_MENTION_BYTES + 100));
  await writeFile(path.join(root, "blob.bin"), Buffer.from([1, 2, 0, 3]));
  await writeFile(path.join(root, ".git", "config"), "[core]\n");
  await writeFile(path.join(outside, "secret.txt"), "SECRET\n");
  await symlink(path.join(outside, "secret.txt"), path.join(root, "link.txt"));
  workspace = new Workspace(root);
});

describe("findMentions", () => {
  it("takes @ at the start, after whitespace or a bracket, not inside a word (an e-mail address)", () => {
    const written = findMentions("see @a.ts, (@b/c.md) and mail me@x.org @a.ts").map((m) => m.written);
    expect(written).toEqual(["a.ts,", "b/c.md)", "a.ts"]);
    expect(findMentions("@a.ts,")[0]!.candidates).toEqual(["a.ts,", "a.ts"]);
  });
});

describe("expandMentions", () => {
  it("attaches a mentioned file inside the workspace as a fenced block after the message", async () => {
    const { attachments, notices } = await expandMentions("explain @src/parser.ts.", workspace);
    expect(notices).toEqual([]);
    expect(attachments).toBe("\n\nFile src/parser.ts (mentioned):\n```\nexport const x = 1;\n```");
  });

  it("uses a fence longer than any backticks in the file", async () => {
    const { attachments } = await expandMentions("@fenced.md", workspace);
    expect(attachments).toContain("````\ntext\n```ts\ncode\n```\n````");
  });

  it("size bound: attaches the first 64 KiB of a bigger file and says it is cut", async () => {
    const { attachments } = await expandMentions("@big.txt", workspace);
    expect(attachments).toContain(
      `first 65,536 of ${(MAX_MENTION_BYTES + 100).toLocaleString("en-US")} bytes`,
    );
    expect(attachments).toContain("The file is cut here");
    expect(attachments.match(/a/g)!.length).toBe(MAX_MENTION_BYTES + 2); // the content and "cut", "read_file"
  });

  it("refuses a path that escapes the workspace (.., absolute, a symlink out) with a notice, reading nothing", async () => {
    const { attachments, notices } = await expandMentions(
      `@../${path.basename(outside)}/secret.txt @${path.join(outside, "secret.txt")} @link.txt`,
      workspace,
    );
    expect(notices).toHaveLength(3);
    for (const notice of notices) expect(notice).toMatch(/not attached: outside the workspace/);
    expect(attachments).not.toContain("SECRET");
  });

  it("refuses .git, folders, binary and missing files with a notice; a word that is no path is left alone", async () => {
    const { attachments, notices } = await expandMentions(
      "@.git/config @src @blob.bin @src/nope.ts @alice",
      workspace,
    );
    expect(notices).toEqual([
      "@.git/config not attached: inside .git or .spark, which are off limits.",
      "@src not attached: a folder; mention the files in it.",
      "@blob.bin not attached: a binary file.",
      "@src/nope.ts not attached: no such file in the workspace.",
    ]);
    expect(attachments).not.toContain("[core]");
    // The model hears of them too.
    expect(attachments).toContain("(@src/nope.ts not attached: no such file in the workspace.)");
  });

  it("attaches each file once and at most MAX_MENTIONED_FILES files", async () => {
    const names = Array.from({ length: MAX_MENTIONED_FILES + 1 }, (_, i) => `f${i}.txt`);
    for (const name of names) await writeFile(path.join(root, name), `${name}\n`);
    const { attachments, notices } = await expandMentions(
      `@f0.txt @./f0.txt ${names.map((n) => `@${n}`).join(" ")}`,
      workspace,
    );
    expect(attachments.match(/^File /gm)).toHaveLength(MAX_MENTIONED_FILES);
    expect(notices).toEqual([
      `@f${MAX_MENTIONED_FILES}.txt not attached: a message attaches 8 files at most.`,
    ]);
  });

  it("property: whatever the mentioned path (.., absolute, symlinks, .git in any case), nothing outside the workspace or in .git is attached", async () => {
    const segment = fc.constantFrom(
      "..",
      ".",
      "src",
      ".git",
      ".GIT",
      ".spark",
      "link.txt",
      "config",
      "secret.txt",
    );
    const mentioned = fc.tuple(
      fc.constantFrom("", `${outside}/`, `${root}/`, "/"),
      fc.array(segment, { minLength: 1, maxLength: 5 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(mentioned, { minLength: 1, maxLength: 4 }), async (paths) => {
        const text = paths.map(([prefix, parts]) => `@${prefix}${parts.join("/")}`).join(" ");
        const { attachments } = await expandMentions(text, workspace);
        expect(attachments).not.toContain("SECRET");
        expect(attachments).not.toContain("[core]");
      }),
      { numRuns: 200 },
    );
  });

  it("a message without mentions attaches nothing", async () => {
    expect(await expandMentions("hello there", workspace)).toEqual({ attachments: "", notices: [] });
  });
});
