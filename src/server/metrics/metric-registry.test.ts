import { expect, test } from "vitest";
import { MetricRegistry } from "./metric-registry.js";

test("renders counters, gauges and cumulative histograms in the Prometheus text format", () => {
  const registry = new MetricRegistry();
  const requests = registry.counter("x_requests_total", "Requests.", ["model"]);
  const depth = registry.gauge("x_depth", "Depth.", ["model"]);
  const latency = registry.histogram("x_latency_seconds", "Latency.", ["model"], [1, 0.1]);
  requests.inc({ model: "m" });
  requests.inc({ model: "m" }, 2);
  requests.inc({ model: "m" }, -5); // ignored: counters only go up
  depth.set({ model: "m" }, 4);
  depth.dec({ model: "m" });
  for (const value of [0.05, 0.5, 3]) latency.observe({ model: "m" }, value);
  expect(registry.render()).toBe(
    [
      "# HELP x_requests_total Requests.",
      "# TYPE x_requests_total counter",
      'x_requests_total{model="m"} 3',
      "# HELP x_depth Depth.",
      "# TYPE x_depth gauge",
      'x_depth{model="m"} 3',
      "# HELP x_latency_seconds Latency.",
      "# TYPE x_latency_seconds histogram",
      'x_latency_seconds_bucket{model="m",le="0.1"} 1',
      'x_latency_seconds_bucket{model="m",le="1"} 2',
      'x_latency_seconds_bucket{model="m",le="+Inf"} 3',
      'x_latency_seconds_sum{model="m"} 3.55',
      'x_latency_seconds_count{model="m"} 3',
      "",
    ].join("\n"),
  );
});

test("escapes label values and runs collectors before rendering", () => {
  const registry = new MetricRegistry();
  const gauge = registry.gauge("x_g", "A gauge\nwith two lines.", ["name"]);
  let value = 1;
  registry.onCollect(() => gauge.set({ name: 'a "b"\\c\nd' }, value++));
  registry.render();
  expect(registry.render()).toContain('x_g{name="a \\"b\\"\\\\c\\nd"} 2');
  expect(registry.render()).toContain("# HELP x_g A gauge\\nwith two lines.");
  expect(() => registry.counter("x_g", "again", [])).toThrow(/Duplicate/);
});
