import { createHmac } from "node:crypto";
import { sign } from "@octokit/webhooks-methods";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isJsonContentType } from "../../../ingress/media-type.ts";
import { tokenDigest, UNKNOWN_SOURCE_DIGEST, verifyBearer } from "../../../ingress/webhooks/bearer.ts";
import { codehostEventName } from "../../../ingress/webhooks/codehost/event.ts";
import { verifyCodehostSignature } from "../../../ingress/webhooks/codehost/verify.ts";
import { trackerEventName } from "../../../ingress/webhooks/tracker/event.ts";
import { isFreshTimestamp, verifyTrackerSignature } from "../../../ingress/webhooks/tracker/verify.ts";

describe("codehost verifier", () => {
  it("passes GitHub's documented test vector", () => {
    const header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    expect(verifyCodehostSignature(header, Buffer.from("Hello, World!"), "It's a Secret to Everybody")).toBe(
      true,
    );
    expect(verifyCodehostSignature(header, Buffer.from("Hello, World?"), "It's a Secret to Everybody")).toBe(
      false,
    );
    expect(verifyCodehostSignature(header, Buffer.from("Hello, World!"), "It's a Secret to Everybody.")).toBe(
      false,
    );
  });

  it("agrees with @octokit/webhooks-methods on any body and secret", async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), async (body, secret) => {
        const header = await sign(secret, body);
        expect(verifyCodehostSignature(header, Buffer.from(body), secret)).toBe(true);
        expect(verifyCodehostSignature(header, Buffer.from(`${body} `), secret)).toBe(false);
      }),
    );
  });

  it("rejects missing, truncated, non-hex and sha1 signatures", () => {
    const body = Buffer.from("{}");
    const good = `sha256=${createHmac("sha256", "s").update(body).digest("hex")}`;
    expect(verifyCodehostSignature(good, body, "s")).toBe(true);
    expect(verifyCodehostSignature(good.toUpperCase().replace("SHA256=", "sha256="), body, "s")).toBe(true);
    for (const bad of [
      undefined,
      "",
      "sha256=",
      good.slice(0, -2),
      `${good}00`,
      `sha1=${good.slice(7)}`,
      good.slice(7),
      `sha256=${"z".repeat(64)}`,
    ]) {
      expect(verifyCodehostSignature(bad, body, "s")).toBe(false);
    }
  });

  it("names events <event>.<action>, or the bare event", () => {
    expect(codehostEventName("pull_request", { action: "opened" })).toBe("pull_request.opened");
    expect(codehostEventName("push", { ref: "refs/heads/main" })).toBe("push");
    expect(codehostEventName("push", [1])).toBe("push");
    expect(codehostEventName("push", { action: 3 })).toBe("push");
  });
});

describe("tracker verifier", () => {
  it("checks the hex HMAC of the raw body and a 60 s timestamp window", () => {
    const body = Buffer.from('{"type":"Issue"}');
    const hex = createHmac("sha256", "lin").update(body).digest("hex");
    expect(verifyTrackerSignature(hex, body, "lin")).toBe(true);
    expect(verifyTrackerSignature(hex, body, "lin2")).toBe(false);
    expect(verifyTrackerSignature(`sha256=${hex}`, body, "lin")).toBe(false);
    expect(verifyTrackerSignature(undefined, body, "lin")).toBe(false);
    const now = 1_700_000_000_000;
    expect(isFreshTimestamp({ webhookTimestamp: now - 60_000 }, now)).toBe(true);
    expect(isFreshTimestamp({ webhookTimestamp: now + 60_000 }, now)).toBe(true);
    expect(isFreshTimestamp({ webhookTimestamp: now - 60_001 }, now)).toBe(false);
    expect(isFreshTimestamp({ webhookTimestamp: now + 60_001 }, now)).toBe(false);
    expect(isFreshTimestamp({ webhookTimestamp: String(now) }, now)).toBe(false);
    expect(isFreshTimestamp({}, now)).toBe(false);
    expect(isFreshTimestamp(null, now)).toBe(false);
  });

  it("names events <type>.<action>", () => {
    expect(trackerEventName({ type: "Issue", action: "create" })).toBe("Issue.create");
    expect(trackerEventName({ type: "Comment" })).toBe("Comment");
    expect(trackerEventName({ action: "create" })).toBeUndefined();
  });
});

describe("bearer verifier", () => {
  const digest = tokenDigest("t0ken!with spaces");
  it("accepts exactly the token, with any scheme casing", () => {
    expect(verifyBearer("Bearer t0ken!with spaces", digest)).toBe(true);
    expect(verifyBearer("bearer t0ken!with spaces", digest)).toBe(true);
    expect(verifyBearer("BEARER   t0ken!with spaces ", digest)).toBe(true);
  });
  it("rejects wrong tokens, schemes and shapes", () => {
    for (const header of [
      undefined,
      "",
      "Bearer",
      "Bearer ",
      "Basic t0ken!with spaces",
      "t0ken!with spaces",
      "Bearer t0ken!with space",
      "Bearer t0ken!with spacesX",
      "Bearert0ken!with spaces",
    ]) {
      expect(verifyBearer(header, digest)).toBe(false);
    }
  });
  it("never matches the unknown-source digest", () => {
    fc.assert(fc.property(fc.string(), (token) => !verifyBearer(`Bearer ${token}`, UNKNOWN_SOURCE_DIGEST)));
  });
});

describe("content type", () => {
  it("accepts application/json with no charset or UTF-8 only", () => {
    for (const ok of [
      "application/json",
      "Application/JSON",
      "application/json; charset=utf-8",
      'application/json;charset="UTF-8"',
    ]) {
      expect(isJsonContentType(ok)).toBe(true);
    }
    for (const bad of [
      undefined,
      "",
      "text/json",
      "application/jsonp",
      "application/json; charset=latin1",
      "application/x-www-form-urlencoded",
    ]) {
      expect(isJsonContentType(bad)).toBe(false);
    }
  });
});
