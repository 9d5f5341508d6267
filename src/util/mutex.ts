/** Runs tasks with the same key one after another; different keys run in parallel. In-process only. */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Whether a task for `key` runs or waits here. */
  busy(key: string): boolean {
    return this.tails.has(key);
  }

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task, task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
