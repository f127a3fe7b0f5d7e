/** Variables a command inherits from Spark's environment, by exact name. */
export const SANDBOX_ENV_NAMES = ["PATH", "HOME", "LANG", "TERM", "USER", "LOGNAME", "SHELL", "TZ"] as const;

/** Pagers and credential prompts would wait for a person who cannot answer. */
const FIXED: Readonly<Record<string, string>> = { PAGER: "cat", GIT_PAGER: "cat", GIT_TERMINAL_PROMPT: "0" };

/**
 * The environment a command runs with, in every sandbox mode: {@link SANDBOX_ENV_NAMES} and the
 * locale's `LC_*` variables from `env`, plus `PAGER=cat`, `GIT_PAGER=cat`, `GIT_TERMINAL_PROMPT=0`.
 * An allowlist, so keys and tokens (`SPARK_API_KEY`, `OPENAI_API_KEY`, `*_TOKEN`, ...) never reach
 * a command, whatever they are called.
 */
export function sandboxEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const allowed: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if ((SANDBOX_ENV_NAMES as readonly string[]).includes(name) || /^LC_[A-Z]+$/.test(name))
      allowed[name] = value;
  }
  return { ...allowed, ...FIXED };
}
