import { describe, expect, it } from "vitest";
import { createProgressBar, formatBytes, formatDuration, renderProgressLine } from "./progress-bar.js";

function sink(isTTY: boolean, columns = 100) {
  const writes: string[] = [];
  return { writes, stream: { isTTY, columns, write: (text: string) => writes.push(text) } };
}

const MB = 1e6;

describe("progress bar", () => {
  it("formats bytes and durations", () => {
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(312.4 * MB)).toBe("312.4 MB");
    expect(formatBytes(1.6e9)).toBe("1.6 GB");
    expect(formatDuration(16)).toBe("0:16");
    expect(formatDuration(3725)).toBe("1:02:05");
  });

  it("renders the terminal line", () => {
    const line = renderProgressLine(
      "model.gguf",
      { receivedBytes: 312.4 * MB, totalBytes: 694 * MB, bytesPerSecond: 23.1 * MB },
      100,
    );
    expect(line).toMatch(
      /^model\.gguf {2,3}45% \[=+> +\] 312\.4 MB \/ 694\.0 MB {2}23\.1 MB\/s {2}ETA 0:17$/,
    );
    expect(line.length).toBeLessThan(100);
    const narrow = renderProgressLine(
      "a-very-long-model-file-name-q8_0.gguf",
      { receivedBytes: 1, totalBytes: 2, bytesPerSecond: 0 },
      60,
    );
    expect(narrow.length).toBeLessThan(60);
    expect(narrow).toContain("ETA --:--");
    expect(
      renderProgressLine("m.gguf", { receivedBytes: 5 * MB, totalBytes: null, bytesPerSecond: MB }),
    ).toBe("m.gguf  5.0 MB  1.0 MB/s");
  });

  it("redraws one line on a TTY, throttled, and ends it with a newline", () => {
    const { writes, stream } = sink(true);
    let now = 0;
    const bar = createProgressBar("m.gguf", { stream, now: () => now });
    bar.update({ receivedBytes: 0, totalBytes: 100, bytesPerSecond: 0 });
    now = 50;
    bar.update({ receivedBytes: 10, totalBytes: 100, bytesPerSecond: 0 }); // throttled
    now = 150;
    bar.update({ receivedBytes: 20, totalBytes: 100, bytesPerSecond: 0 });
    now = 160;
    bar.update({ receivedBytes: 100, totalBytes: 100, bytesPerSecond: 0 }); // completion always draws
    bar.finish();
    bar.finish();
    expect(writes.filter((w) => w.startsWith("\r"))).toHaveLength(4);
    expect(writes.every((w) => !w.slice(0, -1).includes("\n"))).toBe(true);
    expect(writes.at(-2)).toContain("100%");
    expect(writes.at(-1)).toBe("\n");
  });

  it("prints a plain line every 10% when not on a TTY", () => {
    const { writes, stream } = sink(false);
    const bar = createProgressBar("m.gguf", { stream });
    for (let received = 0; received <= 1000; received += 7) {
      bar.update({ receivedBytes: received, totalBytes: 1000, bytesPerSecond: 0 });
    }
    bar.update({ receivedBytes: 1000, totalBytes: 1000, bytesPerSecond: 0 });
    bar.finish();
    expect(writes).toHaveLength(11);
    expect(writes[0]).toBe("m.gguf  0%  0 B / 1.0 kB  --/s\n");
    expect(writes.at(-1)).toContain("100%");
    expect(writes.join("")).not.toContain("\r");
  });

  it("writes nothing when nothing happened", () => {
    const { writes, stream } = sink(true);
    createProgressBar("m.gguf", { stream }).finish();
    expect(writes).toEqual([]);
  });
});
