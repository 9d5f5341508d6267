/** Every failure turned into what a person needs: what happened, and what to do about it. */
import { ApiError, NetworkError, SessionExpiredError, SignInRequiredError } from "./api";
import { WalletMissingError, WalletRequestError, WrongAccountError, WrongChainError, chainLabel } from "./wallet";

export interface Problem {
  title: string;
  detail: string;
  /** What the person can do next, as a button the page wires (sign in again, switch network). */
  action?: "sign-in" | "switch-chain" | "reload";
  kind: string;
}

const NOTHING_CHANGED = "Nothing was signed and nothing was changed.";

export function describe(err: unknown, doing = "do this"): Problem {
  if (err instanceof WalletMissingError) {
    return {
      kind: "wallet-missing",
      title: "No wallet found",
      detail:
        "This dashboard needs a browser wallet (an EIP-1193 wallet such as MetaMask, Rabby, Coinbase Wallet or Frame). Install or enable one, then reload this page.",
      action: "reload",
    };
  }
  if (err instanceof WrongChainError) {
    const expected = chainLabel(err.expected);
    const why =
      err.why === "rejected"
        ? "The network switch was declined in your wallet."
        : err.why === "unknown"
          ? "Your wallet does not know this network; add it in your wallet settings."
          : "Your wallet did not switch networks.";
    return {
      kind: "wrong-chain",
      title: "Your wallet is on the wrong network",
      detail: `Your wallet is on ${chainLabel(err.current)}, but SpendGate signs for ${expected}. ${why} Switch your wallet to ${expected} and try again. ${NOTHING_CHANGED}`,
      action: "switch-chain",
    };
  }
  if (err instanceof WrongAccountError) {
    return {
      kind: "wrong-account",
      title: "Your wallet has another account selected",
      detail: `You are signed in as ${err.expected}, but your wallet's account is ${err.current ?? "not connected"}. Select ${err.expected} in your wallet, or sign in again with the other account. ${NOTHING_CHANGED}`,
      action: "sign-in",
    };
  }
  if (err instanceof WalletRequestError) {
    if (err.code === 4001) {
      return {
        kind: "rejected",
        title: "You rejected the request in your wallet",
        detail: `${NOTHING_CHANGED} You can try again whenever you are ready.`,
      };
    }
    if (err.code === -32002) {
      return {
        kind: "wallet-busy",
        title: "Your wallet already has a request open",
        detail: `Open your wallet and finish or dismiss the open request, then try again. ${NOTHING_CHANGED}`,
      };
    }
    if (err.code === 4100) {
      return {
        kind: "wallet-unauthorized",
        title: "Your wallet did not allow this",
        detail: `Connect this site to your account in the wallet, then try again. ${NOTHING_CHANGED}`,
      };
    }
    if (err.code === 4200) {
      return {
        kind: "wallet-unsupported",
        title: "Your wallet cannot do this",
        detail: `Your wallet does not support ${err.method}. Try another wallet. ${NOTHING_CHANGED}`,
      };
    }
    if (err.code === 4900 || err.code === 4901) {
      return {
        kind: "wallet-disconnected",
        title: "Your wallet is disconnected",
        detail: `Reconnect your wallet to the network and try again. ${NOTHING_CHANGED}`,
      };
    }
    return { kind: "wallet-error", title: "Your wallet reported an error", detail: `${err.message} ${NOTHING_CHANGED}` };
  }
  if (err instanceof SessionExpiredError || err instanceof SignInRequiredError) {
    return {
      kind: "signed-out",
      title: err instanceof SessionExpiredError ? "Your sign-in has expired" : "Sign in first",
      detail: `Sign in again with your wallet to ${doing}. Nothing was changed.`,
      action: "sign-in",
    };
  }
  if (err instanceof NetworkError) {
    return {
      kind: "network",
      title: "SpendGate could not be reached",
      detail: `The request did not get an answer (${err.method} ${err.path}). Check your connection and that the service is running, then try again. If you were changing something, reload the page to see whether it went through.`,
      action: "reload",
    };
  }
  if (err instanceof ApiError) return describeApi(err, doing);
  return {
    kind: "unexpected",
    title: "Something went wrong in this page",
    detail: `${(err as Error)?.message ?? String(err)}. Reload the page and try again.`,
    action: "reload",
  };
}

function describeApi(err: ApiError, doing: string): Problem {
  const base = { kind: `api-${err.code}` };
  switch (err.code) {
    case "invalid_signature":
      return { ...base, title: "The signature was not accepted", detail: `${err.message} Nothing was changed.` };
    case "forbidden":
      return { ...base, title: "Not allowed", detail: `${err.message} Nothing was changed.` };
    case "not_found":
      return { ...base, title: "Not found", detail: err.message };
    case "conflict":
    case "price_changed":
      return { ...base, title: "This has changed meanwhile", detail: `${err.message} Reload to see the current state.`, action: "reload" };
    case "rate_limited":
      return { ...base, title: "Too many requests", detail: `Wait ${err.retryAfter ?? 60} seconds, then try again.` };
    case "bad_request": {
      const fields = Array.isArray(err.details) ? (err.details as { path?: string; message?: string }[]) : [];
      const list = fields.length ? ` (${fields.map((f) => `${f.path}: ${f.message}`).join("; ")})` : "";
      return { ...base, title: "The service refused the request", detail: `${err.message}${list}` };
    }
    case "blocked":
      return { ...base, title: "The payment was blocked on-chain", detail: err.message };
    case "upstream_error":
      // Another party (a seller, its facilitator) refused or did not answer: its message says what, and what stayed.
      return { ...base, title: `Could not ${doing}`, detail: `${err.message} Try again later.` };
    default:
      if (err.status >= 500) {
        return {
          ...base,
          title: "SpendGate had a problem",
          detail: `${err.message} (HTTP ${err.status}). Try again in a moment; if it keeps failing, ask the operator to check the service.`,
        };
      }
      return { ...base, title: `Could not ${doing}`, detail: `${err.message} (HTTP ${err.status}).` };
  }
}
