/** A tiny file with a bug, and the patch that fixes it: the agent tests' shared example edit. */
export const MATH = "export function add(a: number, b: number) {\n  return a - b;\n}\n";

export const PATCH = [
  "*** Begin Patch",
  "*** Update File: src/math.ts",
  "@@",
  " export function add(a: number, b: number) {",
  "-  return a - b;",
  "+  return a + b;",
  " }",
  "*** End Patch",
].join("\n");
