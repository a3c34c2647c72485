import { describe, expect, it } from "vitest";
import type { Member } from "../../../../shared/config/types.ts";
import {
  footerLine,
  hasMarker,
  marker,
  renderMentions,
  stampBody,
} from "../../../../worker/outputs/render.ts";

const STAMP = { pipeline: "pr-review", version: "2.0.0", origin: "trg_abcdefgh", invocation: "inv_qrstuvwx" };

describe("marker and footer", () => {
  it("the marker names the invocation and the output key, hidden as an HTML comment", () => {
    expect(marker("inv_qrstuvwx", "review")).toBe("<!-- svc:inv_qrstuvwx:review -->");
  });

  it("a stamped body ends with the visible footer (pipeline, version, trigger), then the marker", () => {
    expect(footerLine(STAMP)).toBe("pr-review 2.0.0 · trg_abcdefgh");
    expect(stampBody("Looks good.\n\n", STAMP, "review")).toBe(
      "Looks good.\n\n---\n<sub>pr-review 2.0.0 · trg_abcdefgh</sub>\n<!-- svc:inv_qrstuvwx:review -->",
    );
    expect(stampBody("", STAMP, "review")).toBe(
      "---\n<sub>pr-review 2.0.0 · trg_abcdefgh</sub>\n<!-- svc:inv_qrstuvwx:review -->",
    );
  });

  it("finds its own marker only: another key or invocation is not a match", () => {
    const body = stampBody("x", STAMP, "summary");
    expect(hasMarker(body, "inv_qrstuvwx", "summary")).toBe(true);
    expect(hasMarker(body, "inv_qrstuvwx", "review")).toBe(false);
    expect(hasMarker(body, "inv_other000", "summary")).toBe(false);
    expect(hasMarker(null, "inv_qrstuvwx", "summary")).toBe(false);
  });
});

describe("renderMentions", () => {
  const members: Member[] = [
    { name: "dana", kind: "human", identities: { codehost: { handle: "Dana" }, chat: { id: "U0DANA" } } },
    { name: "bot", kind: "agent", identities: { codehost: { handle: "svc-bot" } } },
  ];

  it("renders @handle of a member with a chat id as <@id>, case-insensitively, and leaves the rest", () => {
    expect(renderMentions("thanks @dana, @DANA and @svc-bot; cc @stranger", members)).toBe(
      "thanks <@U0DANA>, <@U0DANA> and @svc-bot; cc @stranger",
    );
  });

  it("an e-mail address or a longer handle is not a mention", () => {
    expect(renderMentions("mail ops@dana.example or @dana-team", members)).toBe(
      "mail ops@dana.example or @dana-team",
    );
  });
});
