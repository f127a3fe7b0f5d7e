import { execFile } from "node:child_process";

/** How long the start-up check may take before bubblewrap counts as not working. */
const PROBE_TIMEOUT_MS = 10_000;

export interface BubblewrapArgsOptions {
  /** Directories bound writable at their own paths (the workspace root). */
  writable: readonly string[];
  /** Existing paths inside `writable` re-bound read-only (`.git`, `.spark`). */
  readOnly: readonly string[];
  /** Keep the host's network. Default: false (a network namespace of its own, loopback only). */
  network?: boolean;
  /** The directory the command starts in. */
  cwd: string;
}

/**
 * bwrap's arguments up to and including `--`: the whole filesystem read-only, then a fresh `/dev`
 * and `/proc`, a private `/tmp`, the writable directories, and their read-only exceptions (later
 * binds cover earlier ones). The command gets a PID namespace of its own, so when bwrap dies (it
 * dies with Spark: `--die-with-parent`) every process the command started dies with it;
 * `--new-session` keeps it from writing to Spark's terminal (TIOCSTI).
 */
export function bubblewrapArgs(options: BubblewrapArgsOptions): string[] {
  return [
    ...["--ro-bind", "/", "/"],
    ...["--dev", "/dev"],
    ...["--proc", "/proc"],
    ...["--tmpfs", "/tmp"],
    ...options.writable.flatMap((path) => ["--bind", path, path]),
    ...options.readOnly.flatMap((path) => ["--ro-bind", path, path]),
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    ...(options.network ? [] : ["--unshare-net"]),
    "--die-with-parent",
    "--new-session",
    ...["--chdir", options.cwd],
    "--",
  ];
}

/** Checks already made, by bwrap path: whether bubblewrap works does not change while Spark runs. */
const probes = new Map<string, Promise<string | null>>();

/**
 * Runs `true` under `bwrapPath` with the strictest isolation once per process and path; resolves
 * null when it works, else why not (not installed, or it cannot set up its namespaces, e.g.
 * where unprivileged user namespaces are disabled).
 */
export function probeBubblewrap(bwrapPath: string): Promise<string | null> {
  let probe = probes.get(bwrapPath);
  if (!probe) {
    probe = runProbe(bwrapPath);
    probes.set(bwrapPath, probe);
  }
  return probe;
}

function runProbe(bwrapPath: string): Promise<string | null> {
  const args = [...bubblewrapArgs({ writable: [], readOnly: [], cwd: "/" }), "true"];
  return new Promise((resolve) => {
    execFile(
      bwrapPath,
      args,
      { timeout: PROBE_TIMEOUT_MS, env: { PATH: process.env.PATH ?? "" } },
      (error, _stdout, stderr) => {
        if (!error) return resolve(null);
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOENT") return resolve(`bubblewrap is not installed (no ${bwrapPath})`);
        const said = stderr.trim().split("\n")[0];
        resolve(`bubblewrap (${bwrapPath}) cannot start a sandbox here: ${said || error.message}`);
      },
    );
  });
}
