import { randomBytes } from "node:crypto";
import { mkdir, open, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { INSTANCE_KEY_BYTES } from "./cipher.ts";

/**
 * The instance key file: 32 random bytes written as one line of base64, mode 0600. Text, so an
 * operator can back it up and restore it by copy and paste; losing it loses every stored secret.
 */
export class InstanceKeyError extends Error {}

export async function createInstanceKey(path: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    // "wx": never overwrite, even when another process creates the file between a check and the write
    handle = await open(path, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") {
      throw new InstanceKeyError(
        `the instance key file ${path} already exists; svc never overwrites it, because the secrets ` +
          "stored under it would become unreadable. Delete it yourself first if you really mean to start over",
      );
    }
    throw error;
  }
  try {
    await handle.writeFile(`${randomBytes(INSTANCE_KEY_BYTES).toString("base64")}\n`);
    // the process umask may have narrowed the mode but never widens it; make it exactly 0600
    await handle.chmod(0o600);
  } finally {
    await handle.close();
  }
}

export async function readInstanceKey(path: string): Promise<Buffer> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") {
      throw new InstanceKeyError(
        `the instance key file ${path} does not exist; create it with \`svc setup instance-key\` ` +
          "(or restore the file it was backed up from), or set SVC_INSTANCE_KEY_FILE to where it is",
      );
    }
    throw new InstanceKeyError(`the instance key file ${path} cannot be read (${code ?? "error"})`);
  }
  const key = Buffer.from(text.trim(), "base64");
  if (key.length !== INSTANCE_KEY_BYTES || key.toString("base64") !== text.trim()) {
    throw new InstanceKeyError(
      `the instance key file ${path} does not hold a key (one line of base64 encoding ${INSTANCE_KEY_BYTES} bytes)`,
    );
  }
  return key;
}
