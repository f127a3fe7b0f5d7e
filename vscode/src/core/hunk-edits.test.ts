import { describe, expect, test } from "vitest";
import { diffText } from "../../../src/agent/diff.js";
import { applyReplacement, FileReview, lineDelta, planHunk, splitLines } from "./hunk-edits.js";

/** A deterministic pseudo-random source (mulberry32), so a failure names its seed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Lines from a small alphabet, so hunks repeat nearby text and locating must be exact. */
function randomText(next: () => number, lines: number, trailingNewline: boolean): string {
  const words = ["a", "b", "c", "foo()", "  return x;", "}", ""];
  const out = Array.from({ length: lines }, () => words[Math.floor(next() * words.length)]!);
  return out.join("\n") + (trailingNewline && lines > 0 ? "\n" : "");
}

function mutate(next: () => number, text: string): string {
  const lines = text.split("\n");
  const edits = 1 + Math.floor(next() * 4);
  for (let i = 0; i < edits; i++) {
    const at = Math.floor(next() * (lines.length + 1));
    const roll = next();
    if (roll < 0.35 && lines.length > 0) lines.splice(Math.min(at, lines.length - 1), 1);
    else if (roll < 0.7) lines.splice(at, 0, `new ${Math.floor(next() * 100)}`);
    else if (lines.length > 0) lines[Math.min(at, lines.length - 1)] = `changed ${i}`;
  }
  return lines.join("\n");
}

function shuffle<T>(next: () => number, items: T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

describe("hunk accept/reject text transforms", () => {
  test("rejecting some hunks of the patched text equals applying only the others to the original", () => {
    for (let seed = 1; seed <= 400; seed++) {
      const next = random(seed);
      const before = randomText(next, Math.floor(next() * 40), next() < 0.8);
      const after = mutate(next, before);
      const diff = diffText("f.txt", before, after);
      const review = new FileReview("call_1", diff);
      const rejected = new Set(review.hunks.map((_, i) => i).filter(() => next() < 0.5));

      let text = after;
      for (const index of shuffle(next, [...review.hunks.keys()])) {
        if (!rejected.has(index)) {
          review.accept(index);
          continue;
        }
        const edit = review.planReject(text, index);
        expect(edit, `seed ${seed}: hunk ${index} not found`).not.toBeNull();
        text = applyReplacement(text, edit!);
        review.markRejected(index);
      }

      // The same result, built forwards: the kept hunks applied to the original, top to bottom.
      let expected = before;
      let shift = 0;
      for (const [index, hunk] of review.hunks.entries()) {
        if (rejected.has(index)) continue;
        const start = (hunk.oldLines === 0 ? hunk.oldStart : hunk.oldStart - 1) + shift;
        const edit = planHunk(expected, hunk, "apply", start);
        expect(edit, `seed ${seed}: apply ${index}`).not.toBeNull();
        expected = applyReplacement(expected, edit!);
        shift += lineDelta(hunk, "apply");
      }
      expect(text, `seed ${seed}`).toBe(expected);
      expect(review.settled).toBe(true);
      if (rejected.size === review.hunks.length) expect(text, `seed ${seed}`).toBe(before);
    }
  });

  test("a CRLF file keeps its line endings; a file without a final newline keeps that", () => {
    const before = "one\r\ntwo\r\nthree\r\nfour\r\nfive\r\nsix\r\nseven\r\neight\r\nnine\r\nten\r\n";
    const after = before.replace("two", "TWO").replace("nine\r\n", "nine\r\nnine and a half\r\n");
    const review = new FileReview("c", diffText("f", before, after));
    expect(review.hunks).toHaveLength(2);
    let text = after;
    for (const index of [1, 0]) {
      text = applyReplacement(text, review.planReject(text, index)!);
      review.markRejected(index);
    }
    expect(text).toBe(before);

    const noEol = "a\nb\nc";
    const grown = "a\nb\nc\nd";
    const tail = new FileReview("c", diffText("f", noEol, grown));
    expect(applyReplacement(grown, tail.planReject(grown, 0)!)).toBe(noEol);
  });

  test("hunks are found where they moved to, and a hunk edited since is not found", () => {
    const before = `${Array.from({ length: 30 }, (_, i) => `line ${i}`).join("\n")}\n`;
    const after = before.replace("line 3\n", "line three\n").replace("line 25\n", "line twenty-five\n");
    const review = new FileReview("c", diffText("f", before, after));
    expect(review.hunks).toHaveLength(2);
    // The person added two lines at the top since; the hunks moved down by two.
    const edited = `// header\n// more\n${after}`;
    const placements = review.place(edited);
    expect(placements.map((p) => p.addedLines)).toEqual([[5], [27]]);
    expect(placements[0]!.removed).toEqual([{ beforeLine: 5, lines: ["line 3"] }]);
    const rejected = applyReplacement(edited, review.planReject(edited, 1)!);
    expect(rejected).toBe(`// header\n// more\n${before.replace("line 3\n", "line three\n")}`);
    review.markRejected(1);

    const clobbered = rejected.replace("line three", "line 3 by hand");
    expect(review.planReject(clobbered, 0)).toBeNull();
    expect(review.place(clobbered)).toEqual([]);
  });

  test("the hunk near the cursor, and the outcome once settled", () => {
    const before = `${Array.from({ length: 30 }, (_, i) => `line ${i}`).join("\n")}\n`;
    const after = before.replace("line 3\n", "line three\n").replace("line 25\n", "line twenty-five\n");
    const review = new FileReview("c", diffText("f", before, after));
    expect(review.hunkNear(after, 0)).toBe(0);
    expect(review.hunkNear(after, 3)).toBe(0);
    expect(review.hunkNear(after, 12)).toBe(1);
    expect(review.hunkNear(after, 29)).toBe(1);
    review.accept(0);
    expect(review.hunkNear(after, 3)).toBe(1);
    expect(review.outcome).toBeNull();
    review.markRejected(1);
    expect(review.outcome).toBe("mixed");
    const all = new FileReview("c", diffText("f", before, after));
    all.settleAll("rejected");
    expect(all.outcome).toBe("rejected");
  });

  test("splitLines keeps each line's own ending", () => {
    expect(splitLines("a\r\nb\nc")).toEqual([
      { text: "a", eol: "\r\n" },
      { text: "b", eol: "\n" },
      { text: "c", eol: "" },
    ]);
    expect(splitLines("")).toEqual([]);
  });
});
