import { createPrivateKey } from "node:crypto";
import { SignJWT } from "jose";

/**
 * GitHub App authentication: an App JWT (RS256, nine minutes, backdated a minute for clock skew —
 * GitHub refuses one living over ten), the installation of a repository, and installation tokens
 * cached per installation (and per restriction) until five minutes before GitHub says they expire.
 *
 * The JWT is signed with jose (already a dependency) rather than @octokit/auth-app: installing a
 * new package would have rewritten the node_modules this worktree shares (see CHANGELOG/report).
 * Nothing here logs; no message carries the key, the JWT or a token.
 */

const JWT_LIFETIME_S = 9 * 60;
const CLOCK_SKEW_S = 60;
/** renew a cached token this long before its `expires_at` */
export const RENEW_BEFORE_MS = 5 * 60_000;

export interface InstallationToken {
  token: string;
  expiresAt: number;
  installationId: number;
}

export interface TokenOptions {
  /** only the repository asked about (`repositories: [name]` in the exchange) */
  restrict?: boolean;
  /** fewer permissions than the installation has, e.g. `{ contents: "read" }` */
  permissions?: Record<string, "read" | "write">;
}

export class AppAuthError extends Error {
  /** the HTTP status GitHub answered, when it answered */
  readonly status?: number;
  constructor(message: string, status?: number) {
    super(message);
    this.name = "AppAuthError";
    if (status !== undefined) this.status = status;
  }
}

export interface AppCredentials {
  apiUrl: string;
  appId: number;
  privateKey: string;
}

export class AppTokens {
  readonly #apiUrl: string;
  readonly #appId: number;
  readonly #privateKey: string;
  readonly #now: () => number;
  readonly #installations = new Map<string, number>();
  readonly #tokens = new Map<string, InstallationToken>();
  readonly #pending = new Map<string, Promise<InstallationToken>>();

  constructor(credentials: AppCredentials, now: () => number = Date.now) {
    this.#apiUrl = credentials.apiUrl.replace(/\/+$/, "");
    this.#appId = credentials.appId;
    this.#privateKey = credentials.privateKey;
    this.#now = now;
  }

  /** An App JWT; throws an AppAuthError naming the App when the key cannot sign. */
  async jwt(): Promise<string> {
    let key: ReturnType<typeof createPrivateKey>;
    try {
      key = createPrivateKey(this.#privateKey);
    } catch {
      throw new AppAuthError(
        `the private key of GitHub App ${this.#appId} is not a PEM private key - download a new one from the App's settings (Private keys) and store it again`,
      );
    }
    if (key.asymmetricKeyType !== "rsa") {
      throw new AppAuthError(
        `the private key of GitHub App ${this.#appId} is a ${key.asymmetricKeyType} key; GitHub Apps sign with RSA - use the .pem file GitHub generated`,
      );
    }
    const nowS = Math.floor(this.#now() / 1000);
    return new SignJWT({})
      .setProtectedHeader({ alg: "RS256", typ: "JWT" })
      .setIssuer(String(this.#appId))
      .setIssuedAt(nowS - CLOCK_SKEW_S)
      .setExpirationTime(nowS - CLOCK_SKEW_S + JWT_LIFETIME_S)
      .sign(key);
  }

  /** GET `path` (or another method) as the App itself. */
  async asApp<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
    return this.#call<T>(method, path, `Bearer ${await this.jwt()}`, body);
  }

  /** The installation id of `owner/name`, remembered for the process. */
  async installationOf(repo: string): Promise<number> {
    const known = this.#installations.get(repo);
    if (known !== undefined) return known;
    const [owner, name] = repo.split("/");
    if (!owner || !name) throw new AppAuthError(`"${repo}" is not an owner/name repository`);
    let found: { id: number };
    try {
      found = await this.asApp<{ id: number }>("GET", `/repos/${enc(owner)}/${enc(name)}/installation`);
    } catch (error) {
      if (error instanceof AppAuthError && error.status === 404) {
        throw new AppAuthError(
          `GitHub App ${this.#appId} is not installed on ${repo} - install it on the repository (the App's page > Install App)`,
          404,
        );
      }
      throw error;
    }
    this.#installations.set(repo, found.id);
    return found.id;
  }

  /**
   * An installation token for `repo`'s installation. With `restrict`, the token reaches only that
   * repository (`repositories: [name]` in the exchange) — what an untrusted step may hold.
   */
  async tokenFor(repo: string, options: TokenOptions = {}): Promise<InstallationToken> {
    const installationId = await this.installationOf(repo);
    const name = repo.split("/")[1]!;
    const cacheKey = `${installationId}:${options.restrict ? name : "*"}:${JSON.stringify(options.permissions ?? null)}`;
    const cached = this.#tokens.get(cacheKey);
    if (cached && cached.expiresAt - this.#now() > RENEW_BEFORE_MS) return cached;
    // one exchange per key at a time: concurrent publishes of one run share it
    const pending = this.#pending.get(cacheKey);
    if (pending) return pending;
    const body = {
      ...(options.restrict ? { repositories: [name] } : {}),
      ...(options.permissions ? { permissions: options.permissions } : {}),
    };
    const exchange = this.#exchange(installationId, body).finally(() => this.#pending.delete(cacheKey));
    this.#pending.set(cacheKey, exchange);
    const fresh = await exchange;
    this.#tokens.set(cacheKey, fresh);
    return fresh;
  }

  async #exchange(installationId: number, body: Record<string, unknown>): Promise<InstallationToken> {
    const answer = await this.asApp<{ token: string; expires_at: string }>(
      "POST",
      `/app/installations/${installationId}/access_tokens`,
      body,
    );
    const expiresAt = Date.parse(answer.expires_at);
    if (typeof answer.token !== "string" || !Number.isFinite(expiresAt)) {
      throw new AppAuthError(
        `GitHub answered the token exchange of installation ${installationId} without a token`,
      );
    }
    return { token: answer.token, expiresAt, installationId };
  }

  async #call<T>(method: string, path: string, authorization: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${this.#apiUrl}${path}`, {
        method,
        headers: {
          authorization,
          accept: "application/vnd.github+json",
          "x-github-api-version": "2022-11-28",
          "user-agent": "svc-app-auth",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new AppAuthError(`${method} ${path} on ${this.#apiUrl} failed: ${(error as Error).message}`);
    }
    const text = await response.text();
    if (!response.ok) {
      // GitHub's error body is { message, documentation_url }; only its message is shown
      let message = text.slice(0, 200);
      try {
        message = String((JSON.parse(text) as { message?: unknown }).message ?? message);
      } catch {
        // not JSON: the raw start of the body is the best description there is
      }
      throw new AppAuthError(
        `GitHub App ${this.#appId}: ${method} ${path} answered ${response.status} (${message})${response.status === 401 ? " - check codehost.app.id and that the private key belongs to this App" : ""}`,
        response.status,
      );
    }
    return JSON.parse(text) as T;
  }
}

function enc(part: string): string {
  return encodeURIComponent(part);
}

/**
 * One AppTokens per App and API for the whole process, so its cache outlives a single publish.
 * Keyed by the key too: a rotated key after a reload is a new App client.
 */
const registry = new Map<string, AppTokens>();

export function appTokens(credentials: AppCredentials): AppTokens {
  const key = `${credentials.apiUrl}\n${credentials.appId}\n${credentials.privateKey}`;
  let tokens = registry.get(key);
  if (!tokens) {
    tokens = new AppTokens(credentials);
    registry.set(key, tokens);
  }
  return tokens;
}
