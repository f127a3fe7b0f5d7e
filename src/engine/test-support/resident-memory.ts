import { readFileSync } from "node:fs";

/** This process's anonymous resident memory (`RssAnon` in /proc/self/status), in bytes; Linux only. */
export function residentAnon(): number {
  const status = readFileSync("/proc/self/status", "utf8");
  return Number(/^RssAnon:\s+(\d+) kB/m.exec(status)![1]) * 1024;
}
