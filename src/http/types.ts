import type { ParameterizedContext, Next } from "koa";
import type { Principal } from "../services/keys";

export interface AppState {
  requestId: string;
  principal?: Principal;
}

export type AppContext = ParameterizedContext<AppState>;
export type Middleware = (ctx: AppContext, next: Next) => Promise<void>;
