/**
 * The HTML shell of every dashboard page. It carries only static text (no data from the store or the request), so
 * the page is never blank: the landmarks, the heading and a loading note are there before the script runs.
 */
export interface PageDef {
  path: string;
  /** Navigation label and <title>. */
  title: string;
  heading: string;
  inNav: boolean;
}

export const PAGES: PageDef[] = [
  { path: "/", title: "Overview", heading: "Your agents at a glance", inNav: true },
  { path: "/onboarding", title: "Activate an agent", heading: "Activate an agent", inNav: false },
  { path: "/agents", title: "Agents", heading: "Agents", inNav: true },
  { path: "/policy", title: "Edit policy", heading: "Edit the spend policy", inNav: false },
  { path: "/approvals", title: "Approvals", heading: "Payments waiting for approval", inNav: true },
  { path: "/ledger", title: "Ledger", heading: "Ledger", inNav: true },
  { path: "/webhooks", title: "Webhooks", heading: "Webhooks: alerts to your endpoints", inNav: true },
];

/** An inline icon: browsers then ask for no /favicon.ico (a 404 in every page's console otherwise). */
export const FAVICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect width='16' height='16' rx='3' fill='%230b57d0'/%3E%3Cpath d='M4 8.5l2.5 2.5L12 5.5' stroke='%23fff' stroke-width='2' fill='none'/%3E%3C/svg%3E";

export const escape = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);

export function renderPage(page: PageDef, assets: { script: string; style: string }): string {
  const nav = PAGES.filter((p) => p.inNav)
    .map((p) => `<li><a href="${p.path}"${p.path === page.path ? ' aria-current="page"' : ""}>${escape(p.title)}</a></li>`)
    .join("");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(page.title)} · SpendGate</title>
<link rel="icon" href="${FAVICON}">
<link rel="stylesheet" href="${assets.style}">
<script type="module" src="${assets.script}"></script>
</head>
<body data-page="${escape(page.path)}">
<a class="skip-link" href="#main">Skip to content</a>
<header class="site-header">
  <a class="brand" href="/">SpendGate</a>
  <nav aria-label="Main"><ul>${nav}</ul></nav>
  <div id="account" class="account"></div>
</header>
<main id="main" tabindex="-1">
  <h1>${escape(page.heading)}</h1>
  <div id="alerts" role="alert" aria-live="assertive"></div>
  <div id="status" class="visually-hidden" role="status" aria-live="polite"></div>
  <div id="page"><p class="loading" id="boot-note">Loading the dashboard… If this message stays, check that JavaScript is enabled and reload the page.</p></div>
</main>
<footer class="site-footer"><p id="footer-note">SpendGate owner dashboard. Every change is signed by your wallet and checked on-chain.</p></footer>
<dialog id="wallet-picker" aria-labelledby="wallet-picker-title"></dialog>
</body>
</html>
`;
}

export function renderBuildError(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Dashboard unavailable · SpendGate</title></head>
<body><main><h1>The dashboard is unavailable</h1>
<p>The dashboard's page scripts could not be built on this server, so it cannot be shown. The API keeps working.
Operators: see the service log for the build error.</p></main></body></html>
`;
}
