import path from "node:path";
import { z } from "zod";
import { listFiles } from "./internal/file-list.js";
import { statOrNotFound } from "./internal/stat-path.js";
import { parametersOf, type Tool } from "./tool.js";

/** Most entries one listing shows. */
export const LIST_MAX_ENTRIES = 1000;

const description = `List a directory as a tree (directories end with "/"; at most ${LIST_MAX_ENTRIES} \
entries; skips .git, node_modules and ignored files).`;

const schema = z.strictObject({
  path: z.string().default(".").describe("The directory to list."),
  depth: z.number().int().min(1).max(4).default(2).describe("Levels to show, 1 to 4."),
});

interface TreeNode {
  children: Map<string, TreeNode> | null;
}

export const listDirTool: Tool<z.infer<typeof schema>> = {
  name: "list_dir",
  readOnly: true,
  description,
  parameters: parametersOf(schema),
  schema,
  async run(args, ctx) {
    const named = await ctx.workspace.resolve(args.path);
    const stats = await statOrNotFound(named, ctx.workspace.relative(named));
    // A file named for its folder (a small model lists `src/app.ts` when asked about src/): the
    // folder it is in is listed, and the first line says so.
    const absolute = stats.isDirectory() ? named : path.dirname(named);
    const shown = ctx.workspace.relative(absolute);
    const note = stats.isDirectory()
      ? []
      : [`${ctx.workspace.relative(named)} is a file (read it with read_file); its folder:`];
    const listing = await listFiles(absolute, {
      signal: ctx.signal,
      maxDepth: args.depth,
      limit: LIST_MAX_ENTRIES * 20,
    });

    const root: TreeNode = { children: new Map() };
    const insert = (path: string, isDirectory: boolean) => {
      let node = root;
      const parts = path.split("/");
      parts.forEach((part, i) => {
        const last = i === parts.length - 1;
        let child = node.children!.get(part);
        if (!child) {
          child = { children: last && !isDirectory ? null : new Map() };
          node.children!.set(part, child);
        }
        node = child;
      });
    };
    for (const directory of listing.directories) insert(directory, true);
    for (const file of listing.files) insert(file, false);

    const lines = [...note, shown === "." ? "./" : `${shown}/`];
    let capped = listing.truncated;
    const render = (node: TreeNode, indent: string) => {
      const entries = [...node.children!].sort(([nameA, a], [nameB, b]) => {
        if ((a.children === null) !== (b.children === null)) return a.children === null ? 1 : -1;
        return nameA < nameB ? -1 : nameA > nameB ? 1 : 0;
      });
      for (const [name, child] of entries) {
        if (lines.length > LIST_MAX_ENTRIES + note.length) {
          capped = true;
          return;
        }
        lines.push(`${indent}${name}${child.children ? "/" : ""}`);
        if (child.children) render(child, `${indent}  `);
      }
    };
    render(root, "  ");
    if (lines.length === note.length + 1) lines.push("  (empty)");
    if (capped) {
      lines.push(
        `[Listing capped at ${LIST_MAX_ENTRIES} entries; list a subdirectory or pass a smaller depth to see the rest.]`,
      );
    }
    return { output: lines.join("\n"), isError: false };
  },
};
