import * as vscode from "vscode";
import type { ReviewDiagnostic } from "./core/review-problems.js";

const SEVERITY = {
  error: vscode.DiagnosticSeverity.Error,
  warning: vscode.DiagnosticSeverity.Warning,
  information: vscode.DiagnosticSeverity.Information,
} as const;

/** To the end of the last line, whatever its length: VS Code clamps a range to its document. */
const LINE_END = Number.MAX_SAFE_INTEGER;

/** The last `/review`'s findings in VS Code's Problems panel ("spark-review"). */
export class ReviewDiagnostics implements vscode.Disposable {
  private readonly collection = vscode.languages.createDiagnosticCollection("spark-review");

  /** Shows `diagnostics` in place of the previous review's; none clears them. */
  publish(diagnostics: readonly ReviewDiagnostic[]): void {
    const byFile = new Map<string, vscode.Diagnostic[]>();
    for (const found of diagnostics) {
      const range = new vscode.Range(found.startLine, 0, found.endLine, LINE_END);
      const diagnostic = new vscode.Diagnostic(range, found.message, SEVERITY[found.severity]);
      diagnostic.source = found.source;
      byFile.set(found.file, [...(byFile.get(found.file) ?? []), diagnostic]);
    }
    this.collection.clear();
    this.collection.set([...byFile].map(([file, list]) => [vscode.Uri.file(file), list]));
  }

  dispose(): void {
    this.collection.dispose();
  }
}
