/** Daily spend against the daily budget as an inline SVG bar chart, with the same numbers as a table for everyone. */
import { fromUnits } from "./amounts";
import { h, svg } from "./dom";

export interface DayTotal {
  day: string; // YYYY-MM-DD (UTC)
  units: bigint;
}

/** The last `days` UTC days ending today, oldest first, with the spend of each. */
export function dailyTotals(entries: { at: string; units: bigint }[], days: number, now = new Date()): DayTotal[] {
  const out: DayTotal[] = [];
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  for (let i = days - 1; i >= 0; i--) out.push({ day: new Date(today - i * 86_400_000).toISOString().slice(0, 10), units: 0n });
  const byDay = new Map(out.map((d) => [d.day, d]));
  for (const e of entries) {
    const d = byDay.get(e.at.slice(0, 10));
    if (d) d.units += e.units;
  }
  return out;
}

export function spendChart(totals: DayTotal[], budgetUnits: bigint, caption: string): HTMLElement {
  const W = 640;
  const H = 220;
  const pad = { left: 56, right: 12, top: 16, bottom: 36 };
  const highest = totals.reduce((m, d) => (d.units > m ? d.units : m), 0n);
  // Scaled to what was spent, so a day far below the budget still shows: the budget is drawn only when it is at most
  // twice the highest day, and otherwise named above the scale.
  const budgetShown = budgetUnits > 0n && (highest === 0n || budgetUnits <= 2n * highest);
  const max = budgetShown && budgetUnits > highest ? budgetUnits : highest > 0n ? highest : 1n;
  const scale = (units: bigint) => (Number(units) / Number(max)) * (H - pad.top - pad.bottom);
  const slot = (W - pad.left - pad.right) / totals.length;
  const y0 = H - pad.bottom;
  const over = totals.filter((d) => budgetUnits > 0n && d.units > budgetUnits).length;
  const desc = `${totals.length} days. Budget ${fromUnits(budgetUnits)} USDC per day. Highest day ${fromUnits(highest)} USDC.${over ? ` ${over} day(s) above the budget.` : ""}`;
  const chart = svg(
    "svg",
    { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": "chart-title chart-desc", class: "chart", id: "spend-chart" },
    svg("title", { id: "chart-title" }, caption),
    svg("desc", { id: "chart-desc" }, desc),
    svg("line", { x1: pad.left, y1: y0, x2: W - pad.right, y2: y0, class: "axis" }),
    svg("text", { x: pad.left - 6, y: pad.top + 4, class: "tick", "text-anchor": "end" }, fromUnits(max)),
    svg("text", { x: pad.left - 6, y: y0, class: "tick", "text-anchor": "end" }, "0"),
    totals.map((d, i) => {
      const height = scale(d.units);
      const x = pad.left + i * slot + slot * 0.15;
      return [
        svg(
          "rect",
          {
            x,
            y: y0 - height,
            width: slot * 0.7,
            height,
            class: budgetUnits > 0n && d.units > budgetUnits ? "bar over" : "bar",
            "data-day": d.day,
          },
          svg("title", null, `${d.day}: ${fromUnits(d.units)} USDC`),
        ),
        (totals.length - 1 - i) % 2 === 0 || totals.length <= 7
          ? svg("text", { x: x + slot * 0.35, y: H - pad.bottom + 16, class: "tick", "text-anchor": "middle" }, d.day.slice(5))
          : null,
      ];
    }),
    budgetShown
      ? [
          svg("line", { x1: pad.left, x2: W - pad.right, y1: y0 - scale(budgetUnits), y2: y0 - scale(budgetUnits), class: "budget" }),
          svg(
            "text",
            { x: W - pad.right, y: y0 - scale(budgetUnits) - 4, class: "tick budget-label", "text-anchor": "end" },
            `budget ${fromUnits(budgetUnits)}`,
          ),
        ]
      : budgetUnits > 0n
        ? svg(
            "text",
            { x: W - pad.right, y: pad.top - 4, class: "tick budget-label", "text-anchor": "end" },
            `budget ${fromUnits(budgetUnits)} a day: above this scale`,
          )
        : null,
  );
  const table = h(
    "details",
    null,
    h("summary", null, "The chart's numbers as a table"),
    h(
      "table",
      { id: "chart-data" },
      h("caption", null, caption),
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          h("th", { scope: "col" }, "Day (UTC)"),
          h("th", { scope: "col" }, "Spent (USDC)"),
          h("th", { scope: "col" }, "Budget (USDC)"),
        ),
      ),
      h(
        "tbody",
        null,
        totals.map((d) =>
          h(
            "tr",
            null,
            h("th", { scope: "row" }, d.day),
            h("td", { class: "num" }, fromUnits(d.units)),
            h("td", { class: "num" }, fromUnits(budgetUnits)),
          ),
        ),
      ),
    ),
  );
  return h(
    "figure",
    { class: "chart-figure" },
    chart,
    h("figcaption", null, caption, ". Bars: approved (settled) payments per day, scaled to the highest day; line: today's daily budget."),
    table,
  );
}
