/** Polls until `check` returns a value; the bound only stops a hung test, it asserts nothing about speed. */
export async function waitFor<T>(
  check: () => Promise<T | undefined | null | false>,
  what: string,
  boundMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
