import { describe, expect, it } from "vitest";
import { readWebhooks, sourceTrustsSender } from "../../../shared/config/daemon/webhooks.ts";
import { outsiderMayRead, readKnowledgeSettings } from "../../../shared/config/knowledge.ts";
import { ConfigFile } from "../../../shared/config/source.ts";
import type { ConfigProblem } from "../../../shared/config/types.ts";

function problemsOf<T>(read: (f: ConfigFile) => T): { value: T; messages: string[] } {
  const problems: ConfigProblem[] = [];
  const value = read(new ConfigFile("daemon.yaml", problems));
  return { value, messages: problems.map((problem) => `${problem.severity}: ${problem.message}`) };
}

describe("knowledge.outsiders", () => {
  const read = (outsiders: unknown) =>
    problemsOf((f) => readKnowledgeSettings(f, { knowledge: { outsiders } }));

  it("defaults to none: an outsider's run reads no document", () => {
    const { value, messages } = problemsOf((f) => readKnowledgeSettings(f, {}));
    expect(messages).toEqual([]);
    expect(value.outsiders).toBeUndefined();
    expect(read("none").value.outsiders).toBeUndefined();
    expect(outsiderMayRead(undefined, "knowledge/public/faq.md")).toBe(false);
  });

  it("a folder gives outsiders' runs the documents under it, and nothing beside or above it", () => {
    const { value, messages } = read("public/");
    expect(messages).toEqual([]);
    expect(value.outsiders).toBe("public");
    expect(outsiderMayRead("public", "knowledge/public/faq.md")).toBe(true);
    expect(outsiderMayRead("public", "./knowledge/public/deep/faq.md")).toBe(true);
    expect(outsiderMayRead("public", "knowledge/runbook.md")).toBe(false);
    expect(outsiderMayRead("public", "knowledge/public-not/faq.md")).toBe(false);
    expect(outsiderMayRead("public", "knowledge/public/../runbook.md")).toBe(false);
    expect(outsiderMayRead("public", "knowledge/public")).toBe(false);
    expect(read("docs/outside").value.outsiders).toBe("docs/outside");
  });

  it("a folder that leaves the knowledge base, the base itself or a hidden one is refused, naming the key and the fix", () => {
    for (const bad of ["../secrets", "/etc", ".", "./", "a/../../b", ".hidden", "a\\b"]) {
      const { value, messages } = read(bad);
      expect(value.outsiders, bad).toBeUndefined();
      expect(messages, bad).toEqual([
        `error: daemon.yaml: "knowledge.outsiders" must be none or a folder inside the knowledge base, written relative to knowledge/ without hidden parts, such as public for knowledge/public/ (got ${JSON.stringify(bad)})`,
      ]);
    }
    expect(read(true).messages).toEqual([
      'error: daemon.yaml: "knowledge.outsiders" must be a string, not a boolean',
    ]);
  });
});

describe("webhooks.sources.<name>.trusted_senders", () => {
  const read = (source: Record<string, unknown>) =>
    problemsOf((f) => readWebhooks(f, { webhooks: { sources: { hook: { secret: "s", ...source } } } }));

  it("defaults to false: a bearer or tracker sender is not vouched for", () => {
    for (const verify of ["bearer", "tracker"]) {
      const { value, messages } = read({ verify });
      expect(messages).toEqual([]);
      expect(value.sources.hook!.trustedSenders).toBeUndefined();
      expect(
        sourceTrustsSender(value.sources, { kind: verify === "bearer" ? "webhook" : verify, source: "hook" }),
      ).toBe(false);
    }
  });

  it("true vouches for a bearer or tracker source's senders, and only its own", () => {
    const { value, messages } = read({ verify: "bearer", trusted_senders: true });
    expect(messages).toEqual([]);
    expect(value.sources.hook!.trustedSenders).toBe(true);
    expect(sourceTrustsSender(value.sources, { kind: "webhook", source: "hook" })).toBe(true);
    expect(sourceTrustsSender(value.sources, { kind: "webhook", source: "other" })).toBe(false);
    expect(sourceTrustsSender(value.sources, { kind: "tracker", source: "toString" })).toBe(false);
  });

  it("code-host events, fires and schedules are judged by their author, not their source", () => {
    for (const kind of ["codehost", "manual", "schedule"])
      expect(sourceTrustsSender({}, { kind, source: "anything" })).toBe(true);
  });

  it("is refused on a codehost or gitlab source, whose events state their author, and must be a boolean", () => {
    for (const verify of ["codehost", "gitlab"]) {
      const { value, messages } = read({ verify, trusted_senders: true });
      expect(value.sources.hook).toBeUndefined();
      expect(messages).toEqual([
        `error: daemon.yaml: "webhooks.sources.hook.trusted_senders" applies to bearer and tracker sources only - a ${verify} event states its author, whose association decides whether its run's notes are trusted; remove the key`,
      ]);
    }
    expect(read({ verify: "bearer", trusted_senders: "yes" }).messages).toEqual([
      'error: daemon.yaml: "webhooks.sources.hook.trusted_senders" must be a boolean (true or false)',
    ]);
  });
});
