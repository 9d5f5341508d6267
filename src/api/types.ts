import type { ParameterizedContext, Next } from "koa";
import type { Principal } from "../principal";

export interface AppState {
  requestId: string;
  principal?: Principal;
  /**
   * The principal came from this instance's memory of recent key lookups (KeyService.lookup), not from the store:
   * only on the requests that allow it (auth.ts). A route that finds it must change something reads the key again.
   */
  principalRemembered?: boolean;
  /** How long ago (ms) the key's lookup read the store: 0 when this request's did. */
  principalAge?: number;
}

export type AppContext = ParameterizedContext<AppState>;
export type Middleware = (ctx: AppContext, next: Next) => Promise<void>;
