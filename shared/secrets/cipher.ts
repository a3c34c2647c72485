import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * AES-256-GCM for stored secrets. Layout of a sealed value: iv (12 bytes) | tag (16 bytes) | ciphertext.
 * The secret's name is the additional authenticated data, so a ciphertext copied onto another
 * name's row fails to open instead of silently serving the wrong secret.
 */
const IV_BYTES = 12;
const TAG_BYTES = 16;
export const INSTANCE_KEY_BYTES = 32;

export class SecretDecryptError extends Error {}

export function sealSecret(key: Buffer, name: string, plaintext: string): Buffer {
  assertKey(key);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(name, "utf8"));
  const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]);
}

export function openSecret(key: Buffer, name: string, sealed: Buffer): string {
  assertKey(key);
  if (sealed.length < IV_BYTES + TAG_BYTES) {
    throw new SecretDecryptError(`the stored secret ${name} is truncated`);
  }
  const iv = sealed.subarray(0, IV_BYTES);
  const tag = sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES);
  const decipher = createDecipheriv("aes-256-gcm", key, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(name, "utf8"));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
      "utf8",
    );
  } catch {
    throw new SecretDecryptError(
      `the stored secret ${name} cannot be decrypted with this instance key: ` +
        "the key file is not the one the secret was stored with, or the row was altered",
    );
  }
}

function assertKey(key: Buffer): void {
  if (key.length !== INSTANCE_KEY_BYTES) {
    throw new Error(`an instance key is ${INSTANCE_KEY_BYTES} bytes, not ${key.length}`);
  }
}
