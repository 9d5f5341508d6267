import type { ParameterizedContext, Next } from "koa";
import type { Principal } from "../services/keys";

export interface AppState {
  requestId: string;
  principal?: Principal;
  /** Parsed, validated input written by validate(): handlers read only this. */
  input: Record<string, unknown>;
}

export type AppContext = ParameterizedContext<AppState>;
export type Middleware = (ctx: AppContext, next: Next) => Promise<void>;
