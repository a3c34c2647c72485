import { describe, expect, it } from "vitest";
import { REDACTED, Redactor } from "../../../shared/redact.ts";

const KEY = "sk-live-0123456789abcdef";
const TOKEN = "svct_AbCdEf0123456789xyz";

describe("shared/redact: the text a run stores", () => {
  const redactor = new Redactor([KEY, TOKEN, "short"]);

  it("replaces every known value, wherever it appears", () => {
    const text = `key ${KEY} and ${KEY}\ntoken:${TOKEN}.`;
    expect(redactor.redact(text)).toBe(`key ${REDACTED} and ${REDACTED}\ntoken:${REDACTED}.`);
  });

  it("replaces a value that contains another whole, and its JSON-escaped form", () => {
    const quoted = 'pa"ss\\word-9876';
    const both = new Redactor(["abcdefgh", "abcdefgh-longer-value", quoted]);
    expect(both.redact("x abcdefgh-longer-value y abcdefgh")).toBe(`x ${REDACTED} y ${REDACTED}`);
    expect(both.redact(JSON.stringify({ v: quoted }))).toBe(`{"v":"${REDACTED}"}`);
  });

  it("does not look for values too short to be credentials", () => {
    expect(redactor.redact("a short note")).toBe("a short note");
  });

  it("masks credential-shaped text whatever its value", () => {
    const unknown = "ghp_unknownvalue123456";
    expect(redactor.redact(`{"token": "${unknown}", "body": "kept"}`)).toBe(
      `{"token": "${REDACTED}", "body": "kept"}`,
    );
    // a tool's output inside an agent CLI's JSON event
    expect(redactor.redact(`{"content":"{\\"api_key\\": \\"${unknown}\\"}"}`)).toBe(
      `{"content":"{\\"api_key\\": \\"${REDACTED}\\"}"}`,
    );
    expect(redactor.redact(`> Authorization: token ${unknown}\n`)).toBe(
      `> Authorization: token ${REDACTED}\n`,
    );
    expect(redactor.redact(`curl -H 'x: Bearer ${unknown}'`)).toBe(`curl -H 'x: Bearer ${REDACTED}'`);
    expect(redactor.redact(`GH_TOKEN=${unknown}\nOPENAI_API_KEY=${unknown}\nHOME=/root`)).toBe(
      `GH_TOKEN=${REDACTED}\nOPENAI_API_KEY=${REDACTED}\nHOME=/root`,
    );
    expect(redactor.redact(`https://x.test/?access_token=${unknown}&a=1`)).toBe(
      `https://x.test/?access_token=${REDACTED}&a=1`,
    );
  });

  it("leaves ordinary text alone", () => {
    const text = '{"usage": {"input_tokens": 12, "tokens": 40}, "review": {"body": "ok"}}\nMAX_TOKENS=5';
    expect(redactor.redact(text)).toBe(text);
  });
});
