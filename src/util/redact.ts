/**
 * A URL safe to print: providers put API keys in the user info (https://user:key@host), in the path
 * (https://base-mainnet.g.alchemy.com/v2/<key>, https://x.quiknode.pro/<key>/) or in the query (?apikey=<key>).
 * Only the scheme, the host and the port are kept.
 */
export function redactUrl(raw: string): string {
  try {
    const u = new URL(raw);
    const hidden = u.pathname !== "/" || u.search !== "" || u.username !== "" || u.password !== "" ? "/***" : "";
    return `${u.protocol}//${u.host}${hidden}`;
  } catch {
    return "***";
  }
}
