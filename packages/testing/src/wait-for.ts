/** What `waitFor` polls: a falsy answer means "not yet". */
export type Probe<T> = () => Promise<T | undefined | null | false>;

/**
 * Polls `probe` every `intervalMs` until it answers something truthy, and resolves with that;
 * throws `timed out waiting for <what>` once `timeoutMs` have passed. A probe that throws ends
 * the wait with its error.
 */
export async function waitFor<T>(
  what: string,
  probe: Probe<T>,
  timeoutMs = 20_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
