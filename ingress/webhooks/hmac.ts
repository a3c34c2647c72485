import { createHmac, timingSafeEqual } from "node:crypto";

const SHA256_HEX = /^[0-9a-fA-F]{64}$/;
const NOTHING = Buffer.alloc(32);

/**
 * Constant-time check of a hex HMAC-SHA256 of the raw body. The HMAC is computed and compared even
 * when the presented value is malformed, so a malformed header costs what a wrong one does.
 */
export function verifyHexHmac(presentedHex: string | undefined, rawBody: Buffer, secret: string): boolean {
  const wellFormed = presentedHex !== undefined && SHA256_HEX.test(presentedHex);
  const presented = wellFormed ? Buffer.from(presentedHex, "hex") : NOTHING;
  const expected = createHmac("sha256", secret).update(rawBody).digest();
  return timingSafeEqual(presented, expected) && wellFormed;
}
