#!/usr/bin/env node
// Adds lock entries for optional platform packages that this machine's registry does not serve
// (other operating systems' prebuilt binaries). npm leaves them out of package-lock.json when it
// cannot fetch them, and then `npm ci` rejects its own lock file (npm/cli#9846). Each entry gets
// the exact version its parent pins and is marked optional, so npm skips it where it cannot be had
// and installs it where it can. Run after `npm install` changes the lock: `npm run complete-lock`.
import { readFileSync, writeFileSync } from "node:fs";

const path = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
const packages = lock.packages;
let added = 0;
for (const entry of Object.values(packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const target = `node_modules/${name}`;
    if (packages[target] || /[\^~<>*|\s]/.test(version)) continue;
    packages[target] = { version, ...(entry.dev ? { dev: true } : {}), optional: true };
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : 1)),
);
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: added ${added} optional entries`);
