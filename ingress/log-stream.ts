import { Writable } from "node:stream";

/**
 * stdout for the request log, with the lines of one event-loop turn written together: under load
 * many requests finish per turn, and one write per line would cost a syscall each. Lines are held
 * only until the end of the turn, and flushed before the process exits.
 */
export function coalescedStdout(out: NodeJS.WriteStream = process.stdout): Writable {
  let corked = false;
  const flush = () => {
    if (!corked) return;
    corked = false;
    out.uncork();
  };
  process.once("exit", flush);
  return new Writable({
    write(chunk, _encoding, done) {
      if (!corked) {
        corked = true;
        out.cork();
        setImmediate(flush);
      }
      out.write(chunk);
      done();
    },
  });
}
