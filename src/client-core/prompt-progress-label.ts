/**
 * What the faces say while the agent prompt is evaluated: `preparing the agent prompt 45%
 * (1,200/2,700 tokens)`, or without numbers before the engine has said any.
 */
export function promptProgressLabel({ evaluated, total }: { evaluated: number; total: number }): string {
  if (total <= 0) return "preparing the agent prompt";
  const percent = Math.floor((Math.min(evaluated, total) / total) * 100);
  const count = (n: number) => n.toLocaleString("en-US");
  return `preparing the agent prompt ${percent}% (${count(evaluated)}/${count(total)} tokens)`;
}
