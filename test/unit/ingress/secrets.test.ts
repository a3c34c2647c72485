import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { openSecret, SecretDecryptError, sealSecret } from "../../../shared/secrets/cipher.ts";
import {
  createInstanceKey,
  InstanceKeyError,
  readInstanceKey,
} from "../../../shared/secrets/instance-key.ts";
import { storedSecretRefs } from "../../../shared/secrets/refs.ts";

describe("instance key and AES-256-GCM", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });
  const tempDir = async () => {
    const dir = await mkdtemp(join(tmpdir(), "svc-key-"));
    dirs.push(dir);
    return dir;
  };

  it("creates a 0600 key file, reads it back, and refuses to overwrite it", async () => {
    const path = join(await tempDir(), "nested", "instance.key");
    await createInstanceKey(path);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const before = await readFile(path, "utf8");
    const key = await readInstanceKey(path);
    expect(key.length).toBe(32);
    await expect(createInstanceKey(path)).rejects.toThrow(/already exists; svc never overwrites it/);
    expect(await readFile(path, "utf8")).toBe(before);
  });

  it("names the file and the fix when the key is missing or damaged", async () => {
    const dir = await tempDir();
    await expect(readInstanceKey(join(dir, "absent.key"))).rejects.toThrow(
      new InstanceKeyError(
        `the instance key file ${join(dir, "absent.key")} does not exist; create it with \`svc setup instance-key\` (or restore the file it was backed up from), or set SVC_INSTANCE_KEY_FILE to where it is`,
      ),
    );
    await writeFile(join(dir, "short.key"), "c2hvcnQ=\n");
    await expect(readInstanceKey(join(dir, "short.key"))).rejects.toThrow(/does not hold a key/);
  });

  it("round-trips any text, and fails on another key, another name or a flipped bit", () => {
    fc.assert(
      fc.property(fc.string(), fc.uint8Array({ minLength: 32, maxLength: 32 }), (plaintext, bytes) => {
        const key = Buffer.from(bytes);
        const sealed = sealSecret(key, "webhook/a", plaintext);
        expect(sealed.includes(Buffer.from(plaintext)) && plaintext.length > 3).toBe(false);
        expect(openSecret(key, "webhook/a", sealed)).toBe(plaintext);
        expect(() => openSecret(key, "webhook/b", sealed)).toThrow(SecretDecryptError);
        const other = Buffer.from(key);
        other[0] = (other[0]! + 1) % 256;
        expect(() => openSecret(other, "webhook/a", sealed)).toThrow(SecretDecryptError);
        const flipped = Buffer.from(sealed);
        flipped[flipped.length - 1]! ^= 1;
        if (plaintext.length) expect(() => openSecret(key, "webhook/a", flipped)).toThrow(SecretDecryptError);
      }),
    );
  });

  it("finds every stored secret reference in a snapshot fragment", () => {
    expect(
      storedSecretRefs({
        webhooks: {
          sources: {
            github: {
              name: "github",
              verify: "codehost",
              secret: { kind: "stored", name: "webhook/github" },
            },
            hook: { name: "hook", verify: "bearer", secret: { kind: "inline", value: "x" } },
          },
        },
        auth: null,
      }),
    ).toEqual([{ name: "webhook/github", usedBy: "webhooks.sources.github" }]);
  });
});
