/**
 * Every timer the simulator starts goes through here, so close() can cancel all
 * of them: Deno's test sanitizers fail a test that leaves a timer behind.
 *
 * @module
 */

/** A registry of cancellable timers with one shared "closing" signal. */
export class Timers {
  readonly #ids = new Set<ReturnType<typeof setTimeout>>();
  readonly #closing = new AbortController();

  /** Aborted when the simulator closes; long waits (hang faults) listen to it. */
  get signal(): AbortSignal {
    return this.#closing.signal;
  }

  /** Runs `fn` after `ms` unless closed first. */
  after(ms: number, fn: () => void): void {
    if (this.#closing.signal.aborted) return;
    const id = setTimeout(() => {
      this.#ids.delete(id);
      fn();
    }, Math.max(0, ms));
    this.#ids.add(id);
  }

  /** Waits `ms`; resolves true when the time passed, false when closing cut it short. */
  sleep(ms: number): Promise<boolean> {
    const signal = this.#closing.signal;
    if (signal.aborted) return Promise.resolve(false);
    if (ms <= 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const onAbort = () => {
        clearTimeout(id);
        this.#ids.delete(id);
        resolve(false);
      };
      const id = setTimeout(() => {
        this.#ids.delete(id);
        signal.removeEventListener("abort", onAbort);
        resolve(true);
      }, ms);
      this.#ids.add(id);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Resolves when the simulator starts closing. */
  untilClosed(): Promise<void> {
    const signal = this.#closing.signal;
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) =>
      signal.addEventListener("abort", () => resolve(), { once: true })
    );
  }

  /** Cancels every pending timer and wakes every sleeper. */
  close(): void {
    this.#closing.abort();
    for (const id of this.#ids) clearTimeout(id);
    this.#ids.clear();
  }
}
