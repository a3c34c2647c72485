import { createHmac, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tokenDigest } from "../../../ingress/webhooks/bearer.ts";
import { gitlabEventName } from "../../../ingress/webhooks/gitlab/event.ts";
import {
  MAX_SIGNATURE_SKEW_MS,
  verifyGitlabToken,
  verifyStandardSignature,
} from "../../../ingress/webhooks/gitlab/verify.ts";
import { buildSourceTable, SourceConfigError } from "../../../ingress/webhooks/sources.ts";
import { signingKey } from "../../../shared/config/signing-secret.ts";

const FIXTURES = join(import.meta.dirname, "../../../ingress/webhooks/gitlab/fixtures");
const fixture = (name: string): unknown => JSON.parse(readFileSync(join(FIXTURES, name), "utf8"));

// the Standard Webhooks specification's published test vector
const VECTOR = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: "1614265330",
  body: Buffer.from('{"test": 2432232314}'),
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const VECTOR_NOW = Number(VECTOR.timestamp) * 1000;

function sign(key: Buffer, id: string, timestamp: string, body: Buffer): string {
  const mac = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest("base64");
  return `v1,${mac}`;
}

describe("GitLab signing token", () => {
  it("decodes whsec_<base64> to its key", () => {
    const key = randomBytes(32);
    expect(signingKey(`whsec_${key.toString("base64")}`)).toEqual(key);
    expect(signingKey(`whsec_${key.toString("base64").replace(/=+$/, "")}`)).toEqual(key);
    expect(signingKey(VECTOR.secret)?.length).toBe(24);
  });

  it("refuses what is not a signing token", () => {
    const key = randomBytes(32).toString("base64");
    for (const bad of [
      key,
      `whsec${key}`,
      `WHSEC_${key}`,
      "whsec_",
      `whsec_${key}!`,
      `whsec_${key.slice(0, -4)}*${key.slice(-3)}`,
      `whsec_${randomBytes(16).toString("base64")}`,
      `whsec_${randomBytes(65).toString("base64")}`,
      `whsec_${randomBytes(32).toString("base64url")}_-_-`,
    ]) {
      expect({ bad, key: signingKey(bad) }).toEqual({ bad, key: undefined });
    }
  });
});

describe("GitLab Standard Webhooks signature", () => {
  const key = signingKey(VECTOR.secret)!;
  const headers = (signature: string, timestamp = VECTOR.timestamp, id = VECTOR.id) => ({
    id,
    timestamp,
    signature,
  });

  it("passes the specification's test vector", () => {
    expect(verifyStandardSignature(headers(VECTOR.signature), VECTOR.body, key, VECTOR_NOW)).toBe(true);
  });

  it("refuses a bad signature: another body, id, timestamp or key", () => {
    expect(verifyStandardSignature(headers(VECTOR.signature), Buffer.from("{}"), key, VECTOR_NOW)).toBe(
      false,
    );
    expect(
      verifyStandardSignature(
        headers(VECTOR.signature, VECTOR.timestamp, "msg_other"),
        VECTOR.body,
        key,
        VECTOR_NOW,
      ),
    ).toBe(false);
    const later = String(Number(VECTOR.timestamp) + 1);
    expect(verifyStandardSignature(headers(VECTOR.signature, later), VECTOR.body, key, VECTOR_NOW)).toBe(
      false,
    );
    expect(verifyStandardSignature(headers(VECTOR.signature), VECTOR.body, randomBytes(24), VECTOR_NOW)).toBe(
      false,
    );
  });

  it("refuses malformed and missing headers", () => {
    const good = VECTOR.signature;
    for (const signature of [
      "",
      good.slice(3),
      `v2,${good.slice(3)}`,
      `v1a,${good.slice(3)}`,
      good.slice(0, -2),
      `${good}AA`,
      `v1,${Buffer.from(good.slice(3), "base64").toString("hex")}`,
    ]) {
      expect({
        signature,
        ok: verifyStandardSignature(headers(signature), VECTOR.body, key, VECTOR_NOW),
      }).toEqual({
        signature,
        ok: false,
      });
    }
    const none = { id: undefined, timestamp: undefined, signature: undefined };
    expect(verifyStandardSignature(none, VECTOR.body, key, VECTOR_NOW)).toBe(false);
    expect(verifyStandardSignature({ ...headers(good), id: undefined }, VECTOR.body, key, VECTOR_NOW)).toBe(
      false,
    );
    expect(
      verifyStandardSignature({ ...headers(good), timestamp: undefined }, VECTOR.body, key, VECTOR_NOW),
    ).toBe(false);
    // a timestamp that is not whole seconds signs, but is not one
    const body = Buffer.from("{}");
    for (const timestamp of ["1614265330.0", "-1614265330", "0x60374d72", " 1614265330"]) {
      const signature = sign(key, VECTOR.id, timestamp, body);
      expect(verifyStandardSignature(headers(signature, timestamp), body, key, VECTOR_NOW)).toBe(false);
    }
  });

  it("takes a header listing several signatures when one of them is valid", () => {
    const other = sign(randomBytes(32), VECTOR.id, VECTOR.timestamp, VECTOR.body);
    const valid = VECTOR.signature;
    for (const list of [`${other} ${valid}`, `${valid} ${other}`, `v1a,abc ${other} ${valid} junk`]) {
      expect(verifyStandardSignature(headers(list), VECTOR.body, key, VECTOR_NOW)).toBe(true);
    }
    expect(verifyStandardSignature(headers(`${other} ${other}`), VECTOR.body, key, VECTOR_NOW)).toBe(false);
  });

  it("refuses a timestamp more than five minutes old (a replay) or ahead", () => {
    const body = Buffer.from('{"object_kind":"push"}');
    const now = 1_760_000_000_000;
    const at = (offsetMs: number) => String(Math.round((now + offsetMs) / 1000));
    const check = (offsetMs: number) =>
      verifyStandardSignature(
        headers(sign(key, "id-1", at(offsetMs), body), at(offsetMs), "id-1"),
        body,
        key,
        now,
      );
    expect(check(0)).toBe(true);
    expect(check(-MAX_SIGNATURE_SKEW_MS)).toBe(true);
    expect(check(MAX_SIGNATURE_SKEW_MS)).toBe(true);
    expect(check(-MAX_SIGNATURE_SKEW_MS - 1000)).toBe(false);
    expect(check(MAX_SIGNATURE_SKEW_MS + 1000)).toBe(false);
    expect(check(-24 * 3600 * 1000)).toBe(false);
  });
});

describe("GitLab secret token", () => {
  it("compares X-Gitlab-Token with the source's secret", () => {
    const digest = tokenDigest("gl-secret");
    expect(verifyGitlabToken("gl-secret", digest)).toBe(true);
    for (const bad of [undefined, "", "gl-secre", "gl-secret ", "GL-SECRET", "Bearer gl-secret"]) {
      expect(verifyGitlabToken(bad, digest)).toBe(false);
    }
  });
});

describe("GitLab event names", () => {
  it("names each documented payload", () => {
    expect(gitlabEventName(fixture("merge-request.json"))).toBe("merge_request.open");
    expect(gitlabEventName(fixture("note-merge-request.json"))).toBe("note");
    expect(gitlabEventName(fixture("push.json"))).toBe("push");
    expect(gitlabEventName(fixture("tag-push.json"))).toBe("tag_push");
  });

  it("is <object_kind>.<action> for merge requests and the bare object_kind otherwise", () => {
    for (const action of ["update", "reopen", "close", "merge", "approved", "unapproved", "approval"]) {
      expect(gitlabEventName({ object_kind: "merge_request", object_attributes: { action } })).toBe(
        `merge_request.${action}`,
      );
    }
    expect(gitlabEventName({ object_kind: "merge_request", object_attributes: {} })).toBe("merge_request");
    expect(gitlabEventName({ object_kind: "merge_request" })).toBe("merge_request");
    expect(gitlabEventName({ object_kind: "note", object_attributes: { action: "update" } })).toBe("note");
    expect(gitlabEventName({ object_kind: "issue", object_attributes: { action: "open" } })).toBe("issue");
    expect(gitlabEventName({ object_kind: "pipeline", object_attributes: { status: "success" } })).toBe(
      "pipeline",
    );
  });

  it("is undefined without an object_kind", () => {
    for (const payload of [
      null,
      [],
      "push",
      {},
      { object_kind: "" },
      { object_kind: 3 },
      { event_name: "push" },
    ]) {
      expect(gitlabEventName(payload)).toBeUndefined();
    }
  });
});

describe("a gitlab source's signing token at start-up", () => {
  const key = randomBytes(32);
  const sources = (signing: { kind: "stored"; name: string } | undefined) => ({
    gl: {
      name: "gl",
      verify: "gitlab" as const,
      secret: { kind: "inline" as const, value: "gl-secret" },
      ...(signing ? { signingSecret: signing } : {}),
    },
  });
  const stored =
    (values: Record<string, string>) => (source: { kind: string; name?: string; value?: string }) =>
      source.kind === "inline" ? source.value! : values[source.name!]!;

  it("decodes a stored token once", () => {
    const table = buildSourceTable(
      sources({ kind: "stored", name: "webhook/gl/signing-secret" }),
      stored({ "webhook/gl/signing-secret": `whsec_${key.toString("base64")}` }),
    );
    expect(table.byName("gl")?.signingKey).toEqual(key);
    expect(table.codehost).toBeUndefined();
    expect(buildSourceTable(sources(undefined), stored({})).byName("gl")?.signingKey).toBeUndefined();
  });

  it("refuses to start on a stored value that is no signing token, naming the key and the fix", () => {
    const build = () =>
      buildSourceTable(
        sources({ kind: "stored", name: "webhook/gl/signing-secret" }),
        stored({ "webhook/gl/signing-secret": "not-a-token" }),
      );
    expect(build).toThrow(SourceConfigError);
    expect(build).toThrow(
      /webhooks\.sources\.gl\.signing_secret_ref \(the stored secret webhook\/gl\/signing-secret\).*svc setup webhook gl --signing/,
    );
    expect(build).not.toThrow(/not-a-token/);
  });
});
