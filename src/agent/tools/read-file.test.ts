import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { createReadFileTool, READ_MAX_BYTES, READ_MAX_LINES, readFileTool } from "./read-file.js";
import { tempWorkspace } from "./test-support/temp-workspace.js";
import { runTool } from "./tool.js";

const numbered = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join("\n");

describe("read_file", () => {
  test("numbers lines, right-aligned", async () => {
    await using t = await tempWorkspace({ files: { "a.txt": `${numbered(10)}\n` } });
    const result = await runTool(readFileTool, '{"path":"a.txt"}', t.context());
    expect(result.isError).toBe(false);
    expect(result.output.split("\n").slice(0, 2)).toEqual([" 1\tline 1", " 2\tline 2"]);
    expect(result.output.split("\n").at(-1)).toBe("10\tline 10");
  });

  test("reads a range and says how to read on", async () => {
    await using t = await tempWorkspace({ files: { "a.txt": numbered(30) } });
    const result = await runTool(readFileTool, '{"path":"a.txt","start_line":9,"end_line":11}', t.context());
    expect(result.output).toBe(
      " 9\tline 9\n10\tline 10\n11\tline 11\n[Showing lines 9-11 of 30. Call read_file with start_line=12 to read further.]",
    );
    const tail = await runTool(readFileTool, '{"path":"a.txt","start_line":29,"end_line":99}', t.context());
    expect(tail.output).toBe("29\tline 29\n30\tline 30\n[Showing lines 29-30 of 30.]");
  });

  test("caps at 2,000 lines", async () => {
    await using t = await tempWorkspace({ files: { "long.txt": `${numbered(2500)}\n` } });
    const result = await runTool(readFileTool, '{"path":"long.txt"}', t.context());
    const lines = result.output.split("\n");
    expect(lines).toHaveLength(READ_MAX_LINES + 1);
    expect(lines.at(-2)).toBe("2000\tline 2000");
    expect(lines.at(-1)).toContain("showing lines 1-2000 of 2500. Call read_file with start_line=2001");
  });

  test("caps at 256 KiB and cuts very long lines", async () => {
    const line = "x".repeat(1000);
    await using t = await tempWorkspace({
      files: { "wide.txt": `${Array(1000).fill(line).join("\n")}\n`, "min.js": "y".repeat(10_000) },
    });
    const result = await runTool(readFileTool, '{"path":"wide.txt"}', t.context());
    expect(Buffer.byteLength(result.output)).toBeLessThanOrEqual(READ_MAX_BYTES + 300);
    expect(result.output.split("\n").at(-1)).toMatch(
      /^\[Output capped .* Call read_file with start_line=\d+/,
    );
    const minified = await runTool(readFileTool, '{"path":"min.js"}', t.context());
    expect(minified.output).toContain("… [line cut: 10000 characters]");
  });

  test("strips CR from CRLF lines", async () => {
    await using t = await tempWorkspace({ files: { "w.txt": "a\r\nb\r\n" } });
    expect((await runTool(readFileTool, '{"path":"w.txt"}', t.context())).output).toBe("1\ta\n2\tb");
  });

  test("clear errors: binary, missing, a directory, past the end, a reversed range, outside", async () => {
    await using t = await tempWorkspace({
      files: { "img.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 13]), "a.txt": "one\n", "dir/x": "" },
    });
    const run = (args: object) => runTool(readFileTool, JSON.stringify(args), t.context());
    const binary = await run({ path: "img.png" });
    expect(binary).toMatchObject({ isError: true, errorCode: "not_allowed" });
    expect(binary.output).toContain("binary file");
    expect(await run({ path: "nope.txt" })).toMatchObject({ isError: true, errorCode: "not_found" });
    expect(await run({ path: "dir" })).toMatchObject({ isError: true, errorCode: "invalid_arguments" });
    const past = await run({ path: "a.txt", start_line: 5 });
    expect(past.output).toContain("which has 1 line.");
    expect(await run({ path: "a.txt", start_line: 3, end_line: 2 })).toMatchObject({
      errorCode: "invalid_arguments",
    });
    expect(await run({ path: "../../etc/passwd" })).toMatchObject({ errorCode: "path_outside_workspace" });
    expect((await run({ path: "dir/x" })).output).toBe("[dir/x is empty.]");
  });

  test("reads no further than its byte cap, and says so", async () => {
    // 9 lines of 10 bytes; a 35-byte cap ends inside line 4.
    await using t = await tempWorkspace({
      files: { "a.txt": `${numbered(9).replaceAll("line ", "line 000")}\n` },
    });
    const tool = createReadFileTool({ maxBytes: 35 });
    const result = await runTool(tool, '{"path":"a.txt"}', t.context());
    expect(result.output.split("\n")).toEqual([
      "1\tline 0001",
      "2\tline 0002",
      "3\tline 0003",
      "4\tline ",
      "[a.txt is 90 bytes; read_file reads only its first 35 bytes (lines 1-4, the last one possibly cut). Use search to find text in it.]",
    ]);
    const past = await runTool(tool, '{"path":"a.txt","start_line":7}', t.context());
    expect(past).toMatchObject({ isError: true, errorCode: "not_allowed" });
    expect(past.output).toContain("reads only its first 35 bytes");
  });

  test.skipIf(process.platform === "win32")("a FIFO is refused, not waited on", async () => {
    await using t = await tempWorkspace();
    execFileSync("mkfifo", [join(t.dir, "pipe")]);
    const result = await runTool(readFileTool, '{"path":"pipe"}', t.context());
    expect(result).toMatchObject({ isError: true, errorCode: "not_allowed" });
    expect(result.output).toContain("not a regular file");
  });
});
