/** Phase timings for one request, logged with the outcome: where a slow payment spent its time. */
export function phaseTimer() {
  const start = process.hrtime.bigint();
  let last = start;
  const phases: Record<string, number> = {};
  return {
    mark(name: string) {
      const now = process.hrtime.bigint();
      phases[name] = Math.round(Number(now - last) / 1e4) / 100;
      last = now;
    },
    done(): Record<string, number> {
      return { ...phases, total: Math.round(Number(process.hrtime.bigint() - start) / 1e4) / 100 };
    },
  };
}
export type PhaseTimer = ReturnType<typeof phaseTimer>;
