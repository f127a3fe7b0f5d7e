import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

export type CertResult = { ok: true; cert: Buffer; key: Buffer } | { ok: false; reason: string };

/** A throwaway self-signed certificate for localhost, made with the `openssl` CLI. */
export async function selfSignedCert(): Promise<CertResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-bench-tls-"));
  try {
    const key = path.join(dir, "k.pem");
    const cert = path.join(dir, "c.pem");
    await promisify(execFile)(
      "openssl",
      ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1"].concat([
        "-subj",
        "/CN=localhost",
      ]),
      { timeout: 30_000 },
    );
    return { ok: true, cert: await readFile(cert), key: await readFile(key) };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return {
      ok: false,
      reason: code === "ENOENT" ? "openssl not found" : `openssl failed: ${(error as Error).message}`,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
