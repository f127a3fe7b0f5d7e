import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { changedScripts, hookCommands, hookScriptDigests } from "./hook-scripts.js";

const hooksJson = (...commands: string[]) =>
  JSON.stringify({ hooks: { Stop: [{ hooks: commands.map((command) => ({ type: "command", command })) }] } });

describe("the files a hooks.json's trust covers", () => {
  it("are the scripts inside the project its commands run, however they are named", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), "spark-hook-scripts-"));
    await mkdir(path.join(root, "scripts"));
    const files = [
      "scripts/a.sh",
      "scripts/b.py",
      "scripts/c.json",
      "scripts/d.sh",
      "run.sh",
      "e.sh",
      "f.sh",
    ];
    for (const file of [...files, "lint", "marker", "log"]) await writeFile(path.join(root, file), file);
    const outside = await mkdtemp(path.join(os.tmpdir(), "spark-hook-outside-"));
    await writeFile(path.join(outside, "x.sh"), "x");
    const digests = await hookScriptDigests(
      root,
      hooksJson(
        "./run.sh --fast > log",
        "python3 -u scripts/b.py scripts/c.json | head",
        "bash -c 'sh \"$SPARK_PROJECT_DIR/scripts/a.sh\"'",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell variable, as a hook writes it
        '"${CLAUDE_PROJECT_DIR}"/scripts/d.sh;git status && FOO=1 exec ./e.sh',
        "source f.sh; node -e 'require(\"./lint\")'",
        `${outside}/x.sh; bash ../x.sh; /etc/hostname`,
        "npm run lint; touch marker; cat log",
      ),
    );
    expect(Object.keys(digests)).toEqual([
      "e.sh",
      "f.sh",
      "run.sh",
      "scripts/a.sh",
      "scripts/b.py",
      "scripts/d.sh",
    ]);
    expect(digests["run.sh"]).toMatch(/^[0-9a-f]{64}$/);
  });

  it("a script named but absent is left out, so one that appears later is a change", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), "spark-hook-scripts-"));
    const hooks = hooksJson("bash .spark/hooks/guard.sh");
    const before = await hookScriptDigests(root, hooks);
    expect(before).toEqual({});
    await mkdir(path.join(root, ".spark", "hooks"), { recursive: true });
    await writeFile(path.join(root, ".spark", "hooks", "guard.sh"), "exit 0\n");
    expect(changedScripts(before, await hookScriptDigests(root, hooks))).toEqual([".spark/hooks/guard.sh"]);
  });

  it("reads a long command line in one pass", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), "spark-hook-scripts-"));
    const long = `${"echo 'a b' \"c\" d; ".repeat(1600)}./x.sh`;
    expect(long.length).toBeGreaterThan(16_000);
    expect(await hookScriptDigests(root, hooksJson(long))).toEqual({});
  });

  it("a malformed file names no commands; a loose shape still gives its command strings", () => {
    expect(hookCommands("{not json")).toEqual([]);
    expect(
      hookCommands('{"hooks": {"Stop": [{"hooks": [{"type": "http", "command": "x.sh"}, 3]}], "A": 1}}'),
    ).toEqual(["x.sh"]);
  });

  it("a change is a file added, removed or different", () => {
    expect(changedScripts({ a: "1", b: "2", c: "3" }, { a: "1", b: "9", d: "4" })).toEqual(["b", "c", "d"]);
    expect(changedScripts({ a: "1" }, { a: "1" })).toEqual([]);
  });
});
