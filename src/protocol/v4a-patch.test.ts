import fc from "fast-check";
import { describe, expect, test } from "vitest";
import {
  type HunkLine,
  type PatchHunk,
  type PatchOperation,
  parseV4aPatch,
  V4aPatchParser,
  type V4aPatchResult,
} from "./v4a-patch.js";

/** Feeds `text` cut at `cuts` (offsets in any order); returns the result and `operations` after each piece. */
function streamed(text: string, cuts: readonly number[]): { result: V4aPatchResult; seen: string[] } {
  const parser = new V4aPatchParser();
  const seen: string[] = [];
  let at = 0;
  for (const cut of [...cuts].map((cut) => cut % (text.length + 1)).sort((a, b) => a - b)) {
    parser.push(text.slice(at, cut));
    at = cut;
    seen.push(JSON.stringify(shown(parser.operations)));
  }
  parser.push(text.slice(at));
  const result = parser.end();
  seen.push(JSON.stringify(shown(parser.operations)));
  return { result, seen };
}

/** What a preview shows of operations, in order, one entry per file, move, anchor or line. */
function shown(operations: readonly PatchOperation[]): string[] {
  return operations.flatMap((operation) => [
    `${operation.kind} ${operation.path}`,
    ...(operation.kind === "add" ? operation.lines.map((line) => `+${line}`) : []),
    ...(operation.kind === "update"
      ? [
          ...(operation.moveTo === null ? [] : [`move ${operation.moveTo}`]),
          ...operation.hunks.flatMap((hunk) => [
            "@@",
            ...hunk.anchors.map((anchor) => `anchor ${anchor}`),
            ...hunk.lines.map((line) => `${line.op}${line.text}`),
          ]),
        ]
      : []),
  ]);
}

/** A valid patch as text, and the operations it parses to. */
interface Written {
  text: string;
  operations: PatchOperation[];
}

const word = fc.stringMatching(/^[a-z]{1,6}$/);
const lineText = fc.oneof(fc.constant(""), fc.stringMatching(/^[^\n\r]{0,12}$/));
const anchor = fc.stringMatching(/^[a-zA-Z(){}]{1,10}$/);
const hunkLine: fc.Arbitrary<HunkLine> = fc.record({ op: fc.constantFrom(" ", "-", "+"), text: lineText });
const hunk = fc.record({
  anchors: fc.array(anchor, { maxLength: 2 }),
  before: fc.array(hunkLine, { maxLength: 3 }),
  change: fc.record({ op: fc.constantFrom("-", "+"), text: lineText }) as fc.Arbitrary<HunkLine>,
  after: fc.array(hunkLine, { maxLength: 3 }),
  endOfFile: fc.boolean(),
  /** A hunk without anchors written with an unnumbered `@@ -1,2 +1,2 @@` line. */
  unified: fc.boolean(),
});
const section = fc.oneof(
  fc.record({
    kind: fc.constant("add" as const),
    lines: fc.array(lineText, { maxLength: 4 }),
    spacing: fc.boolean(),
  }),
  fc.record({ kind: fc.constant("delete" as const) }),
  fc.record({
    kind: fc.constant("update" as const),
    move: fc.boolean(),
    hunks: fc.array(hunk, { maxLength: 3 }),
    bareFirst: fc.boolean(),
  }),
);
const wrapper = fc.record({
  leading: fc.nat({ max: 2 }),
  trailing: fc.nat({ max: 2 }),
  heredoc: fc.boolean(),
  crlf: fc.boolean(),
});

/** Valid patches of every operation and lenient form, with distinct paths. */
const validPatch: fc.Arbitrary<Written> = fc
  .tuple(
    fc.uniqueArray(word, { minLength: 8, maxLength: 8 }),
    fc.array(section, { minLength: 1, maxLength: 4 }),
    wrapper,
  )
  .map(([paths, sections, wrap]) => {
    const lines: string[] = [];
    const write = (line: string) => lines.push(line);
    for (let i = 0; i < wrap.leading; i++) write("");
    if (wrap.heredoc) write("apply_patch <<'EOF'");
    write("*** Begin Patch");
    const operations: PatchOperation[] = [];
    for (const [index, spec] of sections.entries()) {
      const path = `${paths[2 * index]}.ts`;
      write(
        `*** ${spec.kind === "add" ? "Add" : spec.kind === "delete" ? "Delete" : "Update"} File: ${path}`,
      );
      const line = lines.length;
      if (spec.kind === "add") {
        for (const text of spec.lines) write(`+${text}`);
        if (spec.spacing) write("");
        operations.push({ kind: "add", path, lines: spec.lines, line });
      } else if (spec.kind === "delete") operations.push({ kind: "delete", path, line });
      else {
        const moveTo = spec.move || spec.hunks.length === 0 ? `${paths[2 * index + 1]}.ts` : null;
        if (moveTo) write(`*** Move to: ${moveTo}`);
        const hunks: PatchHunk[] = [];
        for (const [at, h] of spec.hunks.entries()) {
          const bare = at === 0 && spec.bareFirst && h.anchors.length === 0;
          if (!bare) write(h.unified && h.anchors.length === 0 ? "@@ -1,2 +1,2 @@" : "@@");
          const start = lines.length;
          for (const a of h.anchors) write(`@@ ${a}`);
          const hunkLines = [...h.before, h.change, ...h.after];
          for (const l of hunkLines) write(`${l.op}${l.text}`);
          if (h.endOfFile) write("*** End of File");
          hunks.push({
            anchors: h.anchors,
            lines: hunkLines,
            endOfFile: h.endOfFile,
            line: bare ? start + 1 : start,
          });
        }
        operations.push({ kind: "update", path, moveTo, hunks, line });
      }
    }
    write("*** End Patch");
    if (wrap.heredoc) write("EOF");
    for (let i = 0; i < wrap.trailing; i++) write("");
    return { text: lines.join(wrap.crlf ? "\r\n" : "\n"), operations };
  });

const cuts = fc.array(fc.nat(), { maxLength: 12 });

/** Lines that break a patch wherever they land, and lines that are valid in some places only. */
const strayLine = fc.constantFrom(
  "*** Begin Patch",
  "*** End Patch",
  " *** End Patch",
  "*** Add File: x.ts",
  "*** Add File:",
  "*** Delete File: x.ts",
  "*** Update File: x.ts",
  "*** Move to: y.ts",
  "*** End of File",
  "@@",
  "@@ f()",
  "oops",
  "",
  "EOF",
  "+",
  "-gone",
);

describe("V4aPatchParser", () => {
  test("a valid patch cut at any offsets parses as written, and as it does whole", () => {
    fc.assert(
      fc.property(validPatch, cuts, ({ text, operations }, offsets) => {
        const whole = parseV4aPatch(text);
        expect(whole).toEqual({ ok: true, patch: { operations } });
        expect(streamed(text, offsets).result).toEqual(whole);
      }),
      { numRuns: 400 },
    );
  });

  test("operations only grow while the text streams: what was shown stays as it was", () => {
    fc.assert(
      fc.property(validPatch, cuts, ({ text }, offsets) => {
        const { seen } = streamed(text, offsets);
        for (const [index, now] of seen.entries()) {
          const before = index === 0 ? [] : (JSON.parse(seen[index - 1]!) as string[]);
          expect((JSON.parse(now) as string[]).slice(0, before.length)).toEqual(before);
        }
      }),
      { numRuns: 200 },
    );
  });

  test("a malformed patch gives the same error whole and cut at any offsets", () => {
    const malformed = fc
      .tuple(validPatch, fc.array(fc.tuple(fc.nat(), fc.option(strayLine)), { minLength: 1, maxLength: 3 }))
      .map(([{ text }, edits]) => {
        const lines = text.split("\n");
        // Each edit puts a stray line at a place, or (none) deletes the line there.
        for (const [at, line] of edits) {
          if (line === null) lines.splice(at % lines.length, 1);
          else lines.splice(at % (lines.length + 1), 0, line);
        }
        return lines.join("\n");
      });
    let errors = 0;
    fc.assert(
      fc.property(malformed, cuts, (text, offsets) => {
        const whole = parseV4aPatch(text);
        if (!whole.ok) errors++;
        expect(streamed(text, offsets).result).toEqual(whole);
      }),
      { numRuns: 600 },
    );
    // Most edits break the patch: the property is about errors, not about edits that happen to be valid.
    expect(errors).toBeGreaterThan(300);
  });

  test("a line is parsed once its newline arrives; the last one at the end", () => {
    const parser = new V4aPatchParser();
    parser.push("*** Begin Patch\n*** Add File: a.ts\n+one\n+tw");
    expect(parser.operations).toEqual([{ kind: "add", path: "a.ts", lines: ["one"], line: 2 }]);
    parser.push("o\r");
    expect(parser.operations[0]).toMatchObject({ lines: ["one"] });
    parser.push("\n*** End Patch");
    expect(parser.operations[0]).toMatchObject({ lines: ["one", "two"] });
    expect(parser.end()).toEqual({ ok: true, patch: { operations: parser.operations } });
    // Ending twice gives the same result; pushing after the end is a caller's bug.
    expect(parser.end().ok).toBe(true);
    expect(() => parser.push("x")).toThrow(/after end/);
  });

  test("blank lines wait for the next line: before a header they are spacing, before a line they are content", () => {
    const parser = new V4aPatchParser();
    parser.push("*** Begin Patch\n*** Update File: a.ts\n-x\n\n");
    const update = parser.operations[0];
    if (update?.kind !== "update") throw new Error("expected an update");
    expect(update.hunks[0]!.lines).toEqual([{ op: "-", text: "x" }]);
    parser.push(" y\n\n*** Delete File: b.ts\n*** End Patch\n");
    expect(update.hunks[0]!.lines).toEqual([
      { op: "-", text: "x" },
      { op: " ", text: "" },
      { op: " ", text: "y" },
    ]);
    expect(parser.end().ok).toBe(true);
  });

  test("an End Patch line followed by more is a line of the patch: context where it may be, an error elsewhere", () => {
    const context = parseV4aPatch(
      ["*** Begin Patch", "*** Update File: a.ts", "+x", " *** End Patch", "*** End Patch"].join("\n"),
    );
    expect(context.ok && context.patch.operations[0]).toMatchObject({
      hunks: [
        {
          lines: [
            { op: "+", text: "x" },
            { op: " ", text: "*** End Patch" },
          ],
        },
      ],
    });
    const parser = new V4aPatchParser();
    parser.push(
      [
        "*** Begin Patch",
        "*** Update File: a.ts",
        "+x",
        "*** End Patch",
        "*** Update File: b.ts",
        "+y",
        "",
      ].join("\n"),
    );
    // Past the misplaced End Patch nothing is shown.
    expect(shown(parser.operations)).toEqual(["update a.ts", "@@", "+x"]);
    expect(parser.end()).toEqual({
      ok: false,
      error: { line: 6, message: 'the patch must end with "*** End Patch".' },
    });
  });

  test("past an error the operations go on as a preview shows them; the result is the first error", () => {
    const parser = new V4aPatchParser();
    parser.push(
      ["*** Update File: a.ts", "@@", "oops", "+y", "*** Add File: b.ts", "plain", "*** End Patch"].join(
        "\n",
      ),
    );
    expect(shown(parser.operations)).toEqual(["update a.ts", "@@", " oops", "+y", "add b.ts", "+plain"]);
    expect(parser.end()).toEqual({
      ok: false,
      error: { line: 1, message: 'the patch must start with "*** Begin Patch".' },
    });
  });

  test("errors are reported in reading order: start, end, body, no files, a path changed twice", () => {
    const error = (...lines: string[]) => {
      const result = parseV4aPatch(lines.join("\n"));
      return result.ok ? null : result.error;
    };
    expect(error("", "")).toEqual({ line: 3, message: 'the patch must start with "*** Begin Patch".' });
    expect(error("cat <<'EOF'", "junk", "EOF")?.line).toBe(2);
    expect(error("cat <<'EOF'", "*** Begin Patch", "*** End Patch")?.line).toBe(1);
    expect(error("*** Begin Patch", "oops", "*** Delete File: a")?.message).toContain("must end with");
    expect(
      error("*** Begin Patch", "*** Delete File: a", "*** Add File: a", "oops", "*** End Patch"),
    ).toEqual({
      line: 4,
      message: 'every line of an added file must start with "+", got "oops".',
    });
    expect(error("cat <<EOF", "*** Begin Patch", "*** End Patch", "EOF")).toEqual({
      line: 2,
      message: "the patch changes no files.",
    });
  });
});
