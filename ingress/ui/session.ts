import type { Request, Response } from "express";
import type { AccessControl } from "../auth/middleware.ts";
import type { Principal } from "../auth/principal.ts";

/**
 * Browser sessions of the /ui pages. The token a person types into /ui/login is kept in an
 * HttpOnly, SameSite=Strict cookie scoped to /ui, so only these pages ever read it: the API routes
 * look at the Authorization header alone, and a cross-site page can neither read the cookie nor
 * make the browser send it.
 */
export const COOKIE = "svc_ui_token";
const TOKEN_TEXT = /^[\x21-\x7e]{1,4096}$/;

export function cookieToken(req: Request): string | undefined {
  for (const part of (req.get("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0 || part.slice(0, eq).trim() !== COOKIE) continue;
    let value: string;
    try {
      value = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      // a mangled cookie is no credential; the page asks for the token again
      return undefined;
    }
    return TOKEN_TEXT.test(value) ? value : undefined;
  }
  return undefined;
}

/** The request as AccessControl sees it, carrying `token` as its bearer credential. */
function withBearer(req: Request, token: string): Request {
  const view = {
    socket: req.socket,
    headers: req.headers,
    get: (name: string) => (name.toLowerCase() === "authorization" ? `Bearer ${token}` : req.get(name)),
  };
  return view as unknown as Request;
}

/** Authorization header first, then the session cookie, then the loopback rule. */
export function authenticatePage(access: AccessControl, req: Request): Promise<Principal> {
  if (req.get("authorization") !== undefined) return access.authenticate(req);
  const token = cookieToken(req);
  return access.authenticate(token ? withBearer(req, token) : req);
}

/** Checks a token typed into the login form exactly as a request carrying it would be checked. */
export function authenticateToken(access: AccessControl, req: Request, token: string): Promise<Principal> {
  return access.authenticate(withBearer(req, token));
}

export function setSessionCookie(req: Request, res: Response, token: string): void {
  res.cookie(COOKIE, token, { httpOnly: true, sameSite: "strict", path: "/ui", secure: req.secure });
}

export function clearSessionCookie(req: Request, res: Response): void {
  res.clearCookie(COOKIE, { httpOnly: true, sameSite: "strict", path: "/ui", secure: req.secure });
}

/**
 * CSRF defence of the form POSTs beside SameSite=Strict: the browser's Origin header must name
 * this very host. Browsers always send Origin on a form POST; a request without one is refused.
 */
export function sameOrigin(req: Request): boolean {
  const origin = req.get("origin");
  const host = req.get("host");
  if (!origin || !host) return false;
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}
