import { describe, expect, it } from "vitest";
import type { Member } from "../../../../shared/config/types.ts";
import {
  footerLine,
  hasMarker,
  marker,
  renderMentions,
  stampBody,
} from "../../../../worker/outputs/render.ts";

const STAMP = {
  pipeline: "pr-review",
  version: "2.0.0",
  origin: "trg_abcdefgh",
  invocation: "inv_qrstuvwx",
  seal: "Sx7Qm2Kd9Lp4Vn8A",
};

describe("marker and footer", () => {
  it("the marker names the invocation, the output key and the invocation's seal, hidden as an HTML comment", () => {
    expect(marker(STAMP, "review")).toBe("<!-- svc:inv_qrstuvwx:review:Sx7Qm2Kd9Lp4Vn8A -->");
  });

  it("a stamped body ends with the visible footer (pipeline, version, trigger), then the marker", () => {
    expect(footerLine(STAMP)).toBe("pr-review 2.0.0 · trg_abcdefgh");
    expect(stampBody("Looks good.\n\n", STAMP, "review")).toBe(
      "Looks good.\n\n---\n<sub>pr-review 2.0.0 · trg_abcdefgh</sub>\n<!-- svc:inv_qrstuvwx:review:Sx7Qm2Kd9Lp4Vn8A -->",
    );
    expect(stampBody("", STAMP, "review")).toBe(
      "---\n<sub>pr-review 2.0.0 · trg_abcdefgh</sub>\n<!-- svc:inv_qrstuvwx:review:Sx7Qm2Kd9Lp4Vn8A -->",
    );
  });

  it("finds its own marker only: another key, invocation or seal is not a match", () => {
    const body = stampBody("x", STAMP, "summary");
    expect(hasMarker(body, STAMP, "summary")).toBe(true);
    expect(hasMarker(body, STAMP, "review")).toBe(false);
    expect(hasMarker(body, { ...STAMP, invocation: "inv_other000" }, "summary")).toBe(false);
    // the invocation id is public; without the seal, the marker an outsider can write is no match
    expect(hasMarker("<!-- svc:inv_qrstuvwx:summary -->", STAMP, "summary")).toBe(false);
    expect(hasMarker(body, { ...STAMP, seal: "guessedguessed00" }, "summary")).toBe(false);
    expect(hasMarker(null, STAMP, "summary")).toBe(false);
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
