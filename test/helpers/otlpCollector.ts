/**
 * An in-process OTLP/HTTP trace collector: a plain HTTP server that takes what @opentelemetry/exporter-trace-otlp-http
 * sends (POST /v1/traces, OTLP JSON) and keeps the spans, flattened, with their resource's attributes.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

type AnyValue = { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number };
interface KeyValue {
  key: string;
  value: AnyValue;
}

export interface CollectedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  resource: Record<string, string | number | boolean>;
  status: { code?: number; message?: string };
}

export interface Collector {
  /** Base URL, for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  url: string;
  spans: CollectedSpan[];
  /** Requests received, with their path and content type. */
  requests: { path: string; contentType: string | undefined }[];
  close(): Promise<void>;
}

function flat(kvs: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of kvs ?? []) {
    const v =
      value.stringValue ?? value.boolValue ?? value.doubleValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

export async function startCollector(): Promise<Collector> {
  const spans: CollectedSpan[] = [];
  const requests: Collector["requests"] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests.push({ path: req.url ?? "", contentType: req.headers["content-type"] });
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        resourceSpans: {
          resource?: { attributes?: KeyValue[] };
          scopeSpans: { spans: (Omit<CollectedSpan, "attributes" | "resource"> & { attributes?: KeyValue[] })[] }[];
        }[];
      };
      for (const rs of body.resourceSpans) {
        const resource = flat(rs.resource?.attributes);
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            spans.push({
              ...s,
              parentSpanId: s.parentSpanId || undefined,
              attributes: flat(s.attributes),
              resource,
              status: s.status ?? {},
            });
          }
        }
      }
      res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
