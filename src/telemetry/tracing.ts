/**
 * OpenTelemetry traces of one service instance, exported over OTLP/HTTP (JSON) when an endpoint is configured
 * (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); nothing of it exists otherwise.
 *
 * Nothing global is registered: the tracer provider is this instance's (tests run several stacks in one process),
 * and the active span travels in an AsyncLocalStorage of its own, with the parent handed to each startSpan. An
 * incoming W3C `traceparent` makes the request's span a child of the caller's.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import {
  type Attributes,
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  defaultTextMapGetter,
  trace,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
  ATTR_URL_PATH,
} from "@opentelemetry/semantic-conventions";
import type { Middleware } from "../api/types";

/** Attribute names of the payment and its steps. */
export const ATTR = {
  agent: "spendgate.agent_address",
  txnId: "spendgate.txn_id",
  paymentId: "spendgate.payment_id",
  kind: "spendgate.payment_kind",
  outcome: "spendgate.outcome",
  reason: "spendgate.reason",
  instance: "service.instance.id",
} as const;

/** The payment a span belongs to: its attributes, copied onto each of its steps' spans as they end. */
interface PaymentScope {
  span: Span;
  attributes: Attributes;
}

interface Scope {
  context: Context;
  payment: PaymentScope | undefined;
}

export interface TracingOptions {
  url: string;
  headers: Record<string, string>;
  serviceName: string;
  version: string;
  instanceId: string;
}

const propagator = new W3CTraceContextPropagator();

export class Tracing {
  private readonly provider: TracerProvider;
  private readonly tracer: Tracer;
  private readonly als = new AsyncLocalStorage<Scope>();

  constructor(opts: TracingOptions) {
    const exporter = new OTLPTraceExporter({ url: opts.url, headers: { ...opts.headers } });
    this.provider = new TracerProvider({
      resource: resourceFromAttributes({
        [ATTR_SERVICE_NAME]: opts.serviceName,
        [ATTR_SERVICE_VERSION]: opts.version,
        [ATTR.instance]: opts.instanceId,
      }),
      // About ten spans a payment: at 50 payments a second the SDK's defaults (2,048 queued, sent every 5 s) drop spans.
      spanProcessors: [new BatchSpanProcessor({ exporter, maxQueueSize: 16_384, maxExportBatchSize: 2_048, scheduledDelayMillis: 2_000 })],
    });
    this.tracer = this.provider.getTracer("spendgate", opts.version);
  }

  /** Runs `fn` in a new span, child of the current one; the span ends (with an error status if it throws) after it. */
  private async inSpan<T>(
    name: string,
    kind: SpanKind,
    parent: Context,
    payment: PaymentScope | "new" | undefined,
    attributes: Attributes | undefined,
    fn: (span: Span) => Promise<T>,
  ): Promise<T> {
    const span = this.tracer.startSpan(name, { kind, attributes }, parent);
    const scope: Scope = {
      context: trace.setSpan(parent, span),
      payment: payment === "new" ? { span, attributes: { ...attributes } } : payment,
    };
    try {
      return await this.als.run(scope, () => fn(span));
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
      throw err;
    } finally {
      if (payment !== "new" && scope.payment) span.setAttributes(scope.payment.attributes);
      span.end();
    }
  }

  /** A payment's span (its steps are its children): under the request's span, or a trace of its own. */
  payment<T>(attributes: Attributes, fn: () => Promise<T>): Promise<T> {
    const current = this.als.getStore();
    return this.inSpan("payment", SpanKind.INTERNAL, current?.context ?? ROOT_CONTEXT, "new", attributes, fn);
  }

  /** A step's span, child of its payment's (or a trace of its own, for a recovery outside any request). */
  step<T>(name: string, fn: () => Promise<T>, attributes?: Attributes): Promise<T> {
    const current = this.als.getStore();
    return this.inSpan(`payment.${name}`, SpanKind.INTERNAL, current?.context ?? ROOT_CONTEXT, current?.payment, attributes, fn);
  }

  /** Sets attributes of the current payment (its ids, once known; its outcome), and so of its steps' spans. */
  annotate(attributes: Attributes): void {
    const payment = this.als.getStore()?.payment;
    if (!payment) return;
    Object.assign(payment.attributes, attributes);
    payment.span.setAttributes(attributes);
  }

  /** The HTTP server span of each request, parent of everything the request does. */
  middleware(): Middleware {
    return async (ctx, next) => {
      const parent = ctx.get("traceparent") ? propagator.extract(ROOT_CONTEXT, ctx.headers, defaultTextMapGetter) : ROOT_CONTEXT;
      const attributes = { [ATTR_HTTP_REQUEST_METHOD]: ctx.method, [ATTR_URL_PATH]: ctx.path };
      await this.inSpan(ctx.method, SpanKind.SERVER, parent, undefined, attributes, async (span) => {
        try {
          await next();
        } finally {
          // The route's pattern, never the raw path (ids in paths would make every request's name unique).
          const route = (ctx as { _matchedRoute?: unknown })._matchedRoute;
          if (typeof route === "string") {
            span.updateName(`${ctx.method} ${route}`);
            span.setAttribute(ATTR_HTTP_ROUTE, route);
          }
          const status = ctx.res.statusCode;
          span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
          if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        }
      });
    };
  }

  /** Sends the spans ended so far. */
  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  /** Sends what is left and stops. */
  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}
