import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { loopbackVerdict } from "../../../shared/loopback-client.ts";

/** A request as the ingress's socket sees it: peer, the port it was accepted on, headers. */
function request(headers: Record<string, string>, peer = "127.0.0.1", port = 7420): IncomingMessage {
  return { socket: { remoteAddress: peer, localPort: port }, headers } as unknown as IncomingMessage;
}

const local = (headers: Record<string, string>, peer?: string, port?: number) =>
  loopbackVerdict(request(headers, peer, port)).local;

describe("the loopback rule's Host", () => {
  it.each([
    "127.0.0.1:7420",
    "localhost:7420",
    "LocalHost:7420",
    "[::1]:7420",
    "127.8.9.10:7420",
    "[0:0:0:0:0:0:0:1]:7420",
  ])("%s is the daemon on loopback", (host) => {
    expect(local({ host })).toBe(true);
  });

  it.each([
    ["a rebinding name", "rebind.evil.example:7420"],
    ["a name under .localhost", "evil.localhost:7420"],
    ["localhost with a trailing dot", "localhost.:7420"],
    ["a shorthand IPv4 address", "127.1:7420"],
    ["a bracketed IPv4 address", "[127.0.0.1]:7420"],
    ["an unbracketed IPv6 address", "::1"],
    ["another port", "127.0.0.1:7421"],
    ["no port on a daemon not on 80", "127.0.0.1"],
    ["a private address", "10.0.0.1:7420"],
    ["a userinfo trick", "127.0.0.1:7420@evil.example"],
    ["an empty Host", ""],
  ])("%s is not (%s)", (_label, host) => {
    expect(local({ host })).toBe(false);
  });

  it("a Host without a port names port 80", () => {
    expect(local({ host: "localhost" }, "127.0.0.1", 80)).toBe(true);
  });

  it("no Host at all is not loopback", () => {
    expect(local({})).toBe(false);
  });
});

describe("the loopback rule's Origin and Sec-Fetch-Site", () => {
  const host = "127.0.0.1:7420";

  it("accepts the daemon's own origin, over http or https", () => {
    expect(local({ host, origin: "http://127.0.0.1:7420" })).toBe(true);
    expect(local({ host, origin: "https://127.0.0.1:7420" })).toBe(true);
  });

  it.each([
    "null",
    "https://evil.example",
    "http://localhost:7420",
    "http://127.0.0.1:7421",
    "http://127.0.0.1:7420/",
    "file://",
    "http://127.0.0.1:7420, https://evil.example",
  ])("refuses Origin %s", (origin) => {
    expect(loopbackVerdict(request({ host, origin }))).toMatchObject({
      local: false,
      refused: expect.stringContaining("Origin"),
    });
  });

  it("accepts Sec-Fetch-Site none and same-origin, refuses same-site and cross-site", () => {
    expect(local({ host, "sec-fetch-site": "none" })).toBe(true);
    expect(local({ host, "sec-fetch-site": "same-origin" })).toBe(true);
    for (const site of ["same-site", "cross-site", "Cross-Site"]) {
      expect(loopbackVerdict(request({ host, "sec-fetch-site": site }))).toMatchObject({
        local: false,
        refused: expect.stringContaining("Sec-Fetch-Site"),
      });
    }
  });
});

describe("who is never a loopback client, whatever the headers", () => {
  it("a remote peer, or a loopback peer with a forwarding header, gets no reason", () => {
    expect(loopbackVerdict(request({ host: "127.0.0.1:7420" }, "203.0.113.7"))).toEqual({ local: false });
    expect(loopbackVerdict(request({ host: "127.0.0.1:7420", "x-forwarded-for": "203.0.113.7" }))).toEqual({
      local: false,
    });
  });

  it("an IPv4-mapped loopback peer is loopback", () => {
    expect(local({ host: "127.0.0.1:7420" }, "::ffff:127.0.0.1")).toBe(true);
  });
});
