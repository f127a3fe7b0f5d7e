import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { IncrementalPatchPreview } from "./incremental-patch-preview.js";
import { PATCH_PREVIEW_MAX_CHARS, type PatchPreviewFile, previewPatch } from "./streaming-patch.js";

const PATCH = [
  "*** Begin Patch",
  "*** Update File: src/app.ts",
  "@@ class App",
  "@@   start()",
  " const a = 1;",
  "-const port = 8080;",
  '+const port = 9090; // 😀 "quoted" \\ tab\t',
  "",
  " end",
  "*** Move to: src/main.ts",
  "*** Add File: notes.md",
  "+# Notes",
  "+中文 é",
  "*** Delete File: old.txt",
  "*** End Patch",
].join("\n");

/** Both encodings: raw non-ASCII (JSON.stringify) and every non-ASCII character escaped. */
const encodings = (text: string) => {
  const raw = JSON.stringify({ patch: text });
  return [
    raw,
    raw.replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`),
  ];
};

/** What a face shows of the files: paths, kinds and lines (hunk headers are not shown). */
const shownOf = (files: readonly PatchPreviewFile[]) =>
  JSON.stringify(
    files.map((file) => [file.path, file.kind, file.from, file.hunks.flatMap((hunk) => hunk.lines)]),
  );

/** Feeds `json` cut at `cuts` (sorted offsets); checks the preview against previewPatch after each piece. */
function feed(json: string, cuts: number[]): void {
  const preview = new IncrementalPatchPreview();
  let shown = shownOf(preview.files);
  for (const end of [...cuts, json.length]) {
    const prefix = json.slice(0, end);
    const changed = preview.update(prefix);
    const whole = previewPatch(prefix)?.files ?? [];
    expect(preview.files).toEqual(whole);
    const now = shownOf(preview.files);
    // It says whether anything shown changed, and only then.
    expect(changed).toBe(now !== shown);
    shown = now;
  }
}

describe("IncrementalPatchPreview (ACP re-parsed the patch preview 3-4 times per delta)", () => {
  test("cut at every offset, it shows what previewPatch shows of the same text", () => {
    for (const json of encodings(PATCH))
      feed(
        json,
        Array.from({ length: json.length }, (_, i) => i),
      );
  });

  test("cut at random places (several at a time), it shows what previewPatch shows", () => {
    for (const json of encodings(PATCH)) {
      fc.assert(
        fc.property(fc.uniqueArray(fc.nat({ max: json.length }), { maxLength: 40 }), (cuts) => {
          feed(
            json,
            cuts.sort((a, b) => a - b),
          );
        }),
        { numRuns: 200 },
      );
    }
  });

  test("a patch field after another field, and arguments that never reach a patch", () => {
    const json = JSON.stringify({ note: "x".repeat(100), patch: PATCH });
    feed(
      json,
      Array.from({ length: json.length }, (_, i) => i),
    );
    const preview = new IncrementalPatchPreview();
    expect(preview.update(JSON.stringify({ command: "ls" }))).toBe(false);
    expect(preview.files).toEqual([]);
    // A prefix too long to be searched again per delta: nothing is shown, and nothing is searched.
    const long = `{"note": "${"y".repeat(5000)}", "patch": "*** Begin Patch\\n*** Add File: a\\n+a\\n`;
    expect(preview.update(long)).toBe(false);
    expect(preview.files).toEqual([]);
  });

  test("past PATCH_PREVIEW_MAX_CHARS the preview stops growing, as previewPatch's does", () => {
    const lines = Array.from({ length: 30_000 }, (_, i) => `+line ${i}`);
    const text = ["*** Begin Patch", "*** Add File: big.txt", ...lines, "*** End Patch"].join("\n");
    const json = JSON.stringify({ patch: text });
    expect(json.length).toBeGreaterThan(PATCH_PREVIEW_MAX_CHARS);
    const cuts = Array.from({ length: Math.ceil(json.length / 32_768) }, (_, i) => i * 32_768);
    feed(json, cuts);
  });
});
