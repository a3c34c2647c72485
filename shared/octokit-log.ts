import type { Logger } from "./logger.ts";

/**
 * The `log` option of an Octokit client: its own warnings and errors go to our JSON log as
 * `<prefix>.codehost_warning` / `<prefix>.codehost_error`, never to the console; debug and info
 * are dropped.
 */
export function octokitLog(logger: Logger, prefix: string) {
  return {
    debug: () => {},
    info: () => {},
    warn: (message: string) => logger.warn(message, { event: `${prefix}.codehost_warning` }),
    error: (message: string) => logger.warn(message, { event: `${prefix}.codehost_error` }),
  };
}
