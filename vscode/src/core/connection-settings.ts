/** What VS Code's `WorkspaceConfiguration.inspect` says of one setting (the fields read here). */
export interface SettingInspection<T> {
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

/**
 * The settings that start a program or say where prompts and keys go. A workspace's value of one
 * (its `.vscode/settings.json`, which comes with a cloned repository) never applies in an untrusted
 * workspace; a `machine` one never applies from any workspace. package.json declares the same
 * scopes and lists every one under `capabilities.untrustedWorkspaces.restrictedConfigurations`
 * (connection-settings.test.ts checks both agree).
 */
export const RESTRICTED_SETTINGS = {
  /** The program Spark starts. */
  sparkPath: "machine",
  /** Given to a server Spark starts: a workspace could make the key of your server one it knows. */
  apiKey: "machine",
  /** Where every prompt, file and key is sent. */
  serverUrl: "machine-overridable",
  /** The arguments of the server Spark starts (`--host`, `--no-auth`, a model file). */
  serveArgs: "machine-overridable",
  /** Whether Spark starts a server at all. */
  autoStart: "machine-overridable",
} as const satisfies Record<string, "machine" | "machine-overridable">;

export type RestrictedSetting = keyof typeof RESTRICTED_SETTINGS;

export interface ConnectionSettings {
  serverUrl: string;
  apiKey: string;
  sparkPath: string;
  autoStart: boolean;
  serveArgs: string[];
}

const DEFAULTS: ConnectionSettings = {
  serverUrl: "",
  apiKey: "",
  sparkPath: "",
  autoStart: true,
  serveArgs: [],
};

export interface ReadConnectionSettingsOptions {
  /** `vscode.workspace.isTrusted`. */
  trusted: boolean;
  /** Where `SPARK_API_KEY` is read when no key is set. Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/**
 * The connection settings as they may apply: a value from the user's settings, or from the
 * workspace where its scope and the workspace's trust allow; `ignored` names each setting whose
 * workspace value was not used (`spark.serverUrl`), for the log.
 */
export function readConnectionSettings(
  inspect: <K extends RestrictedSetting>(key: K) => SettingInspection<ConnectionSettings[K]> | undefined,
  options: ReadConnectionSettingsOptions,
): { settings: ConnectionSettings; ignored: string[] } {
  const ignored: string[] = [];
  const read = <K extends RestrictedSetting>(key: K): ConnectionSettings[K] => {
    const seen = inspect(key) ?? {};
    const fromWorkspace = seen.workspaceFolderValue ?? seen.workspaceValue;
    const own = seen.globalValue ?? seen.defaultValue ?? DEFAULTS[key];
    if (fromWorkspace === undefined) return own;
    if (RESTRICTED_SETTINGS[key] === "machine" || !options.trusted) {
      ignored.push(`spark.${key}`);
      return own;
    }
    return fromWorkspace;
  };
  const settings: ConnectionSettings = {
    serverUrl: read("serverUrl"),
    apiKey: read("apiKey") || (options.env ?? process.env).SPARK_API_KEY || "",
    sparkPath: read("sparkPath"),
    autoStart: read("autoStart"),
    serveArgs: read("serveArgs"),
  };
  return { settings, ignored };
}

/** The log line for settings a workspace set that were not used, or null. */
export function describeIgnoredSettings(ignored: readonly string[], trusted: boolean): string | null {
  if (ignored.length === 0) return null;
  return (
    `Ignored the workspace's ${ignored.join(", ")}: ` +
    (trusted
      ? "these are read from your user settings only."
      : "the workspace is not trusted (these start programs or say where your code is sent); your user settings apply.")
  );
}
