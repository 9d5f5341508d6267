/**
 * A few DOM helpers. Every piece of data reaches the page as a text node or an attribute value, never as HTML:
 * labels, intents and merchants come from agents and sellers and must not be able to inject markup.
 */
export type Child = Node | string | number | null | undefined | false | Child[];
type Props = Record<string, unknown> | null | undefined;

function append(parent: Node, child: Child): void {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) for (const c of child) append(parent, c);
  else parent.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
}

function applyProps(el: Element, props: Props): void {
  if (!props) return;
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value as EventListener);
    } else if (key === "value" && el instanceof HTMLInputElement) {
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- attribute values are strings, numbers or booleans
      el.value = String(value);
    } else {
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- attribute values are strings, numbers or booleans
      el.setAttribute(key === "className" ? "class" : key, value === true ? "" : String(value));
    }
  }
}

/** Creates an HTML element: h("button", { type: "button", onclick }, "Approve"). */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props?: Props, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  applyProps(el, props);
  append(el, children);
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** Creates an SVG element (for the ledger chart). */
export function svg(tag: string, props?: Props, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVG_NS, tag);
  applyProps(el, props);
  append(el, children);
  return el;
}

/** Replaces an element's children. */
export function replace(el: Element, ...children: Child[]): void {
  el.textContent = "";
  append(el, children);
}

// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- callers name the element they expect
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el as T;
}

/** Says something to screen readers without moving focus (the polite live region). */
export function announce(message: string): void {
  const status = byId("status");
  status.textContent = "";
  // A new text node after a tick is announced even when the same words repeat.
  setTimeout(() => (status.textContent = message), 50);
}

/** Moves focus to a heading or region (after a step completes), so keyboard and screen-reader users follow along. */
export function focusOn(el: HTMLElement | null): void {
  if (!el) return;
  if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "-1");
  el.focus();
}

export function shortAddress(address: string): string {
  return `${address.slice(0, 6)}…${address.slice(-4)}`;
}

/** "12 s ago", "3 min ago", "2 h ago", "4 days ago". */
export function age(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - new Date(iso).getTime()) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} days ago`;
}

/** "in 23 h", "in 5 min" (for expiry times). */
export function until(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((new Date(iso).getTime() - now) / 1000));
  if (s < 60) return `in ${s} s`;
  if (s < 3600) return `in ${Math.floor(s / 60)} min`;
  if (s < 86400) return `in ${Math.floor(s / 3600)} h`;
  return `in ${Math.floor(s / 86400)} days`;
}

export function dateTime(iso: string): string {
  const d = new Date(iso);
  return d.toLocaleString(undefined, {
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
}

/** A <time> element with the machine-readable value. */
export function time(iso: string, text: string): HTMLTimeElement {
  return h("time", { datetime: iso, title: new Date(iso).toISOString() }, text);
}
