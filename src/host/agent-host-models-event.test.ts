import { afterEach, expect, test } from "vitest";
import type { HostClient } from "../client-core/host-client.js";
import { type Cleanups, connectCoreClient, serveThreadlessHost } from "./test-support/threadless-host.js";

// The host names the models a thread may switch to (`models`), so an attached face can offer them.

const cleanups: Cleanups = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const nextModels = (client: HostClient) =>
  new Promise<readonly string[]>((resolve) => {
    const off = client.on("models", (models) => {
      off();
      resolve(models);
    });
  });

test("a client connecting gets the host's models; a later list reaches clients already connected", async () => {
  const { host, url } = await serveThreadlessHost({ models: ["fast", "deep"] }, cleanups);
  const client = await connectCoreClient(url, cleanups);
  if (client.models.length === 0) await nextModels(client);
  expect(client.models).toEqual(["fast", "deep"]);
  const later = nextModels(client);
  host.listModels(["fast", "deep", "hf:org/model:Q4_K_M"]);
  expect(await later).toEqual(["fast", "deep", "hf:org/model:Q4_K_M"]);
});

test("a malformed list (a name thread.set_model would refuse, or too many) is ignored whole and logged", async () => {
  const { host, url } = await serveThreadlessHost({ models: ["fast"] }, cleanups);
  const client = await connectCoreClient(url, cleanups);
  if (client.models.length === 0) await nextModels(client);
  const logs: string[] = [];
  for (const bad of [["fast", "two words"], ["fast", ""], Array.from({ length: 65 }, (_, i) => `m${i}`)]) {
    const logged = new Promise<void>((resolve) => {
      const off = client.on("log", (line) => {
        logs.push(line);
        off();
        resolve();
      });
    });
    host.listModels(bad);
    await logged;
  }
  expect(logs).toEqual(Array(3).fill("Ignored a models event: not a list of model names"));
  expect(client.models).toEqual(["fast"]);
});

test("a host with no models to offer sends none", async () => {
  const { url } = await serveThreadlessHost({}, cleanups);
  const client = await connectCoreClient(url, cleanups);
  await client.list();
  expect(client.models).toEqual([]);
});
