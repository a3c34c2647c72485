import { Octokit } from "@octokit/core";
import { isRsaPem } from "../config/codehost-app.ts";
import { codehostWebBase } from "../config/daemon/repos.ts";

/**
 * svc's GitHub App as a manifest (GitHub's "Registering a GitHub App from a manifest"): what
 * `svc setup github` asks GitHub to create, and the exchange of the code GitHub sends back
 * (`POST /app-manifests/{code}/conversions`) for the App's id, private key and webhook secret.
 */

/**
 * Exactly the permissions svc uses, at their lowest level: it reads code and checks, writes pull
 * request and issue comments. What `svc setup github` asks for and `svc doctor --deep` requires.
 */
export const APP_PERMISSIONS = Object.freeze({
  contents: "read",
  pull_requests: "write",
  issues: "write",
  checks: "read",
  metadata: "read",
} as const);

/** Exactly the events svc reads from a `verify: codehost` source (trigger.codehost). */
export const APP_EVENTS = Object.freeze([
  "pull_request",
  "issue_comment",
  "pull_request_review_comment",
  "push",
] as const);

/** The webhook source the App delivers to, and the stored secrets it writes. */
export const GITHUB_SOURCE = "github";
export const APP_KEY_REF = "codehost/app-private-key";
export const WEBHOOK_SECRET_REF = `webhook/${GITHUB_SOURCE}`;

/** The daemon's page and the address GitHub sends the browser back to. */
export const SETUP_PAGE_PATH = "/ui/setup/github";
export const SETUP_CALLBACK_PATH = "/ui/setup/github/callback";

/** GitHub's longest App name. */
const NAME_LIMIT = 34;
/** An organisation or user login on GitHub. */
export const GITHUB_LOGIN = /^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/;

export interface AppManifest {
  name: string;
  url: string;
  description: string;
  hook_attributes: { url: string; active: boolean };
  redirect_url: string;
  public: boolean;
  default_permissions: Record<string, string>;
  default_events: string[];
}

/** The manifest for a daemon reached at `publicUrl` (server.public_url, no trailing slash). */
export function appManifest(publicUrl: string): AppManifest {
  // GitHub takes letters, digits, spaces, "-", "_" and "." in a name (the person may change it there)
  const host = new URL(publicUrl).hostname.replace(/[^A-Za-z0-9._-]+/g, "-");
  return {
    name: `svc ${host}`.slice(0, NAME_LIMIT).trim(),
    url: publicUrl,
    description: `svc pipeline daemon at ${publicUrl}`,
    hook_attributes: { url: `${publicUrl}/webhooks/${GITHUB_SOURCE}`, active: true },
    redirect_url: `${publicUrl}${SETUP_CALLBACK_PATH}`,
    public: false,
    default_permissions: { ...APP_PERMISSIONS },
    default_events: [...APP_EVENTS],
  };
}

/**
 * Where the page's form posts the manifest: `<web>/settings/apps/new` (the signed-in user's App)
 * or `<web>/organizations/<org>/settings/apps/new`, `<web>` being github.com or the GitHub
 * Enterprise server of `codehost.api_url`; `state` comes back on the redirect.
 */
export function manifestFormAction(apiUrl: string, org: string | undefined, state: string): string {
  const web = codehostWebBase(apiUrl);
  const path = org ? `/organizations/${encodeURIComponent(org)}/settings/apps/new` : "/settings/apps/new";
  return `${web}${path}?state=${encodeURIComponent(state)}`;
}

/** What svc keeps of GitHub's answer (the OAuth client id and secret are not used, and not kept). */
export interface ConvertedApp {
  id: number;
  slug: string;
  name: string;
  htmlUrl: string;
  owner: string | undefined;
  pem: string;
  webhookSecret: string;
}

/** The exchange failed; `message` names what GitHub said and what to do. Nothing was written. */
export class ManifestConversionError extends Error {
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

/** A code as GitHub writes it into the redirect: letters, digits, `-` and `_`. */
export const MANIFEST_CODE = /^[A-Za-z0-9_-]{1,256}$/;

/** `POST /app-manifests/{code}/conversions` at `apiUrl`, through Octokit, without credentials. */
export async function convertManifestCode(
  apiUrl: string,
  code: string,
  options: { userAgent: string; timeoutMs?: number },
): Promise<ConvertedApp> {
  const octokit = new Octokit({
    baseUrl: apiUrl.replace(/\/+$/, ""),
    userAgent: options.userAgent,
    log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  });
  let data: Record<string, unknown>;
  try {
    const answer = await octokit.request("POST /app-manifests/{code}/conversions", {
      code,
      request: { signal: AbortSignal.timeout(options.timeoutMs ?? 30_000) },
    });
    data = answer.data as unknown as Record<string, unknown>;
  } catch (error) {
    throw conversionRefusal(apiUrl, error);
  }
  return convertedApp(data);
}

function conversionRefusal(apiUrl: string, error: unknown): ManifestConversionError {
  const status = (error as { status?: unknown }).status;
  const said = (error as { response?: { data?: { message?: unknown } } }).response?.data?.message;
  const message = typeof said === "string" && said ? said : undefined;
  if (status === 404)
    return new ManifestConversionError(
      `GitHub does not know the code it sent back (404${message ? ` ${message}` : ""}): it was already used, or it expired ` +
        "(a code works once, within an hour); nothing was written - run svc setup github again and press the button once",
      404,
    );
  if (status === 422)
    return new ManifestConversionError(
      `GitHub refused to exchange the code (422${message ? ` ${message}` : ""}); nothing was written - run svc setup github again`,
      422,
    );
  if (typeof status === "number" && status > 0)
    return new ManifestConversionError(
      `GitHub answered ${status}${message ? ` (${message})` : ""} to POST /app-manifests/{code}/conversions at ${apiUrl}; nothing was written - check codehost.api_url, then run svc setup github again`,
      status,
    );
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const why = cause?.code ?? cause?.message ?? (error as Error).message;
  return new ManifestConversionError(
    `cannot reach GitHub at ${apiUrl} (${why}) to exchange the code; nothing was written - check codehost.api_url and the daemon's network, then run svc setup github again`,
  );
}

function convertedApp(data: Record<string, unknown>): ConvertedApp {
  const lacking = (what: string) =>
    new ManifestConversionError(
      `GitHub's answer to the code exchange has no usable ${what}; nothing was written - delete the App it created on GitHub (its settings page, Advanced) and run svc setup github again`,
    );
  const id = data.id;
  if (typeof id !== "number" || !Number.isSafeInteger(id) || id <= 0) throw lacking("App id");
  const slug = typeof data.slug === "string" && data.slug ? data.slug : undefined;
  if (!slug) throw lacking("slug");
  const htmlUrl = typeof data.html_url === "string" ? data.html_url : "";
  if (!/^https?:\/\//.test(htmlUrl)) throw lacking("html_url");
  const pem = typeof data.pem === "string" ? data.pem : "";
  if (!isRsaPem(pem)) throw lacking("private key (pem)");
  const webhookSecret = typeof data.webhook_secret === "string" ? data.webhook_secret : "";
  if (!webhookSecret) throw lacking("webhook secret");
  const owner = (data.owner as { login?: unknown } | null | undefined)?.login;
  return {
    id,
    slug,
    name: typeof data.name === "string" && data.name ? data.name : slug,
    htmlUrl: htmlUrl.replace(/\/+$/, ""),
    owner: typeof owner === "string" ? owner : undefined,
    pem,
    webhookSecret,
  };
}

/** Where the App is installed on accounts and repositories. */
export function installationUrl(htmlUrl: string): string {
  return `${htmlUrl}/installations/new`;
}
