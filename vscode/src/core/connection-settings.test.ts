import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import {
  type ConnectionSettings,
  describeIgnoredSettings,
  RESTRICTED_SETTINGS,
  readConnectionSettings,
  type SettingInspection,
} from "./connection-settings.js";

interface Manifest {
  capabilities?: {
    untrustedWorkspaces?: { supported?: unknown; description?: unknown; restrictedConfigurations?: unknown };
  };
  contributes: {
    configuration: { properties: Record<string, { scope?: string; markdownDescription?: string }> };
  };
}

const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as Manifest;
const properties = manifest.contributes.configuration.properties;

/** Settings that neither start a program nor say where code goes: they may come from any workspace. */
const WORKSPACE_SAFE = ["spark.approvals", "spark.revealEdits"];

describe("a repository's .vscode/settings.json cannot run a program or send prompts elsewhere", () => {
  test("package.json: every launching or redirecting setting is machine-scoped and restricted", () => {
    expect(manifest.capabilities?.untrustedWorkspaces).toMatchObject({
      supported: "limited",
      description: expect.stringMatching(/untrusted workspace/),
    });
    const restricted = Object.keys(RESTRICTED_SETTINGS).map((key) => `spark.${key}`);
    expect(manifest.capabilities?.untrustedWorkspaces?.restrictedConfigurations).toEqual(restricted);
    for (const [key, scope] of Object.entries(RESTRICTED_SETTINGS)) {
      expect({ key, scope: properties[`spark.${key}`]?.scope }).toEqual({ key, scope });
    }
    // A new setting is one or the other: restricted, or named here as safe from any workspace.
    expect(Object.keys(properties).sort()).toEqual([...restricted, ...WORKSPACE_SAFE].sort());
  });

  test("package.json suggests only arguments spark serve takes", () => {
    const text = properties["spark.serveArgs"]?.markdownDescription ?? "";
    expect(text).not.toContain("--engine");
    expect(text).toContain('["--ctx-size", "8192"]');
  });

  const inspections = (
    values: { [K in keyof ConnectionSettings]?: SettingInspection<ConnectionSettings[K]> },
  ) => ((key: keyof ConnectionSettings) => values[key]) as Parameters<typeof readConnectionSettings>[0];
  const hostile = inspections({
    serverUrl: { defaultValue: "", workspaceValue: "https://evil.example" },
    apiKey: { defaultValue: "", globalValue: "mine", workspaceValue: "known-to-the-repo" },
    sparkPath: { defaultValue: "", workspaceFolderValue: "./evil.sh" },
    serveArgs: {
      defaultValue: [],
      globalValue: ["--ctx-size", "4096"],
      workspaceValue: ["--host", "0.0.0.0"],
    },
    autoStart: { defaultValue: true, globalValue: false, workspaceValue: true },
  });

  test("an untrusted workspace's values are ignored, each named; the user's apply", () => {
    const read = readConnectionSettings(hostile, { trusted: false, env: {} });
    expect(read.settings).toEqual({
      serverUrl: "",
      apiKey: "mine",
      sparkPath: "",
      autoStart: false,
      serveArgs: ["--ctx-size", "4096"],
    });
    expect(read.ignored).toEqual([
      "spark.serverUrl",
      "spark.apiKey",
      "spark.sparkPath",
      "spark.autoStart",
      "spark.serveArgs",
    ]);
    expect(describeIgnoredSettings(read.ignored, false)).toMatch(
      /^Ignored the workspace's spark\.serverUrl, .*: the workspace is not trusted/,
    );
  });

  test("a trusted workspace may point at its server and pass arguments, never choose the program or the key", () => {
    const read = readConnectionSettings(hostile, { trusted: true, env: {} });
    expect(read.settings).toEqual({
      serverUrl: "https://evil.example",
      apiKey: "mine",
      sparkPath: "",
      autoStart: true,
      serveArgs: ["--host", "0.0.0.0"],
    });
    expect(read.ignored).toEqual(["spark.apiKey", "spark.sparkPath"]);
    expect(describeIgnoredSettings(read.ignored, true)).toContain("user settings only");
  });

  test("without any value: the defaults, and SPARK_API_KEY for the key; nothing is said", () => {
    const read = readConnectionSettings(() => undefined, { trusted: false, env: { SPARK_API_KEY: "k" } });
    expect(read).toEqual({
      settings: { serverUrl: "", apiKey: "k", sparkPath: "", autoStart: true, serveArgs: [] },
      ignored: [],
    });
    expect(describeIgnoredSettings(read.ignored, false)).toBeNull();
  });
});
