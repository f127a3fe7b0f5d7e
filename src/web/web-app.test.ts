import { expect, test } from "vitest";
import { webAppUrl } from "./web-app.js";

test("the app's address carries the API key in its fragment only", () => {
  expect(webAppUrl("http://127.0.0.1:8080")).toBe("http://127.0.0.1:8080/");
  const url = new URL(webAppUrl("http://127.0.0.1:8080", "k/=+ e&y"));
  expect(url.search).toBe("");
  expect(new URLSearchParams(url.hash.slice(1)).get("key")).toBe("k/=+ e&y");
});
