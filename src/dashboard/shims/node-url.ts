/**
 * The browser's stand-in for node:url's domainToASCII, so the dashboard bundles src/policy/allowlist.ts unchanged.
 * Both run the WHATWG URL host parser (UTS #46 IDNA); Node's also refuses "xn--" labels that are not valid Punycode
 * of a valid label, which browsers let through, so those are checked here the same way. Characters that would make
 * the URL parser read a user, port, path, query or fragment are refused first, as domainToASCII refuses them.
 */
export function domainToASCII(domain: string): string {
  if (/[@:/?#\\]/.test(domain)) return "";
  const host = parseHost(domain);
  if (host === null) return "";
  return host.split(".").every((label) => !label.startsWith("xn--") || validAceLabel(label)) ? host : "";
}

function parseHost(domain: string): string | null {
  try {
    return new URL(`http://${domain}`).hostname;
  } catch {
    return null;
  }
}

/**
 * An "xn--" label is valid when it is Punycode of a label that encodes back to exactly itself (so no mapped, non-NFC
 * or disallowed characters). Node keeps labels that decode to plain ASCII ("xn--abc-"); so does this.
 */
function validAceLabel(label: string): boolean {
  const decoded = decodePunycode(label.slice(4));
  if (!decoded) return false;
  if (/^[\x00-\x7f]*$/.test(decoded)) return true;
  if (/[@:/?#\\.%]/.test(decoded)) return false;
  return parseHost(decoded) === label;
}

/** RFC 3492 Punycode decoding; null when the input is not valid Punycode. */
export function decodePunycode(input: string): string | null {
  const BASE = 36;
  const T_MIN = 1;
  const T_MAX = 26;
  const MAX = 0x7fffffff;
  const digit = (c: number) =>
    c >= 0x30 && c <= 0x39 ? c - 22 : c >= 0x41 && c <= 0x5a ? c - 0x41 : c >= 0x61 && c <= 0x7a ? c - 0x61 : BASE;
  const adapt = (delta: number, points: number, first: boolean) => {
    delta = first ? Math.floor(delta / 700) : delta >> 1;
    delta += Math.floor(delta / points);
    let k = 0;
    for (; delta > ((BASE - T_MIN) * T_MAX) >> 1; k += BASE) delta = Math.floor(delta / (BASE - T_MIN));
    return k + Math.floor(((BASE - T_MIN + 1) * delta) / (delta + 38));
  };
  const output: number[] = [];
  const basic = Math.max(0, input.lastIndexOf("-"));
  for (let j = 0; j < basic; j++) {
    if (input.charCodeAt(j) >= 0x80) return null;
    output.push(input.charCodeAt(j));
  }
  let n = 128;
  let i = 0;
  let bias = 72;
  for (let index = basic > 0 ? basic + 1 : 0; index < input.length;) {
    const oldi = i;
    for (let w = 1, k = BASE; ; k += BASE) {
      if (index >= input.length) return null;
      const d = digit(input.charCodeAt(index++));
      if (d >= BASE || d > Math.floor((MAX - i) / w)) return null;
      i += d * w;
      const t = k <= bias ? T_MIN : k >= bias + T_MAX ? T_MAX : k - bias;
      if (d < t) break;
      if (w > Math.floor(MAX / (BASE - t))) return null;
      w *= BASE - t;
    }
    const length = output.length + 1;
    bias = adapt(i - oldi, length, oldi === 0);
    if (Math.floor(i / length) > MAX - n) return null;
    n += Math.floor(i / length);
    i %= length;
    if (n > 0x10ffff || (n >= 0xd800 && n <= 0xdfff)) return null;
    output.splice(i++, 0, n);
  }
  return String.fromCodePoint(...output);
}
