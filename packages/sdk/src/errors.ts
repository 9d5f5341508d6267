/** The one error the client throws: the service's `{ error, message, status }` body, or `network_error` (status 0). */
export class SpendGateError extends Error {
  override readonly name = "SpendGateError";
  /** The service's code: `unauthorized`, `validation_error`, `conflict`, `rate_limited`, ... or `network_error`. */
  readonly error: string;
  /** The HTTP status (0: no answer). */
  readonly status: number;
  /** True when the same request may succeed later (the service said so, with `retryable` and `Retry-After`). */
  readonly retryable: boolean;
  /** Seconds to wait before a retry, from `Retry-After`, when given. */
  readonly retryAfter: number | undefined;
  /** The whole error body (other fields such as `details`, `payTo`). */
  readonly body: Readonly<Record<string, unknown>>;

  constructor(init: {
    error: string;
    message: string;
    status: number;
    retryable?: boolean;
    retryAfter?: number;
    body?: Record<string, unknown>;
  }) {
    super(init.message);
    this.error = init.error;
    this.status = init.status;
    this.retryable = init.retryable ?? false;
    this.retryAfter = init.retryAfter;
    this.body = init.body ?? { error: init.error, message: init.message, status: init.status };
  }

  /** The interface's error shape. */
  toJSON(): { error: string; message: string; status: number } {
    return { error: this.error, message: this.message, status: this.status };
  }
}

/** Whether `err` is a SpendGateError (also across two copies of this package). */
export function isSpendGateError(err: unknown): err is SpendGateError {
  return err instanceof SpendGateError || (err instanceof Error && err.name === "SpendGateError" && "status" in err && "error" in err);
}

/** Input the service would refuse, refused before any request with the error it would answer (400 bad_request). */
export function invalidInput(message: string): SpendGateError {
  return new SpendGateError({ error: "bad_request", message, status: 400 });
}
