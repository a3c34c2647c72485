import { createPrivateKey } from "node:crypto";
import { createAppAuth, type StrategyOptions } from "@octokit/auth-app";
import { request } from "@octokit/request";

/**
 * GitHub App authentication through Octokit's App strategy (@octokit/auth-app: the App JWT,
 * RS256, under GitHub's ten minutes, and the installation token exchange), plus what svc adds:
 * the installation of a repository remembered for the process, and installation tokens cached per
 * installation (and per restriction) until five minutes before GitHub says they expire, with one
 * exchange at a time per cache key. Nothing here logs; no message carries the key, the JWT or a token.
 */
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

/** What the message of an App that is not installed on a repository says (installationOf), for callers that may go on without it. */
export const NOT_INSTALLED = "is not installed on";

export function isNotInstalled(error: unknown): boolean {
  return error instanceof Error && error.message.includes(`${NOT_INSTALLED} `);
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
  #auth: AppAuth | undefined;

  constructor(credentials: AppCredentials, now: () => number = Date.now) {
    this.#apiUrl = credentials.apiUrl.replace(/\/+$/, "");
    this.#appId = credentials.appId;
    this.#privateKey = credentials.privateKey;
    this.#now = now;
  }

  /** An App JWT; throws an AppAuthError naming the App when the key cannot sign. */
  async jwt(): Promise<string> {
    const { token } = await this.#strategy()({ type: "app" });
    return token;
  }

  /** Octokit's App strategy over codehost.api_url, made once the key is known to be an RSA key. */
  #strategy(): AppAuth {
    if (this.#auth) return this.#auth;
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
    const options: StrategyOptions = {
      appId: this.#appId,
      // PKCS#8 whatever GitHub's file held (PKCS#1): the signer reads either through Node's crypto
      privateKey: key.export({ type: "pkcs8", format: "pem" }).toString(),
      request: request.defaults({ baseUrl: this.#apiUrl, headers: { "user-agent": "svc-app-auth" } }),
    };
    this.#auth = createAppAuth(options);
    return this.#auth;
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
          `GitHub App ${this.#appId} ${NOT_INSTALLED} ${repo} - install it on the repository (the App's page > Install App)`,
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

  /** Octokit's installation exchange; svc's own cache above decides when a new token is needed. */
  async #exchange(installationId: number, body: Record<string, unknown>): Promise<InstallationToken> {
    const repositories = body.repositories as string[] | undefined;
    const permissions = body.permissions as Record<string, string> | undefined;
    let answer: { token: string; expiresAt: string };
    try {
      answer = (await (this.#strategy() as unknown as InstallationAuth)({
        type: "installation",
        installationId,
        ...(repositories ? { repositoryNames: repositories } : {}),
        ...(permissions ? { permissions } : {}),
        // the library keeps a cache of its own, keyed without our five-minute margin
        refresh: true,
      })) as { token: string; expiresAt: string };
    } catch (error) {
      const status = (error as { status?: number }).status;
      const message =
        (error as { response?: { data?: { message?: unknown } } }).response?.data?.message ??
        (error as Error).message;
      throw new AppAuthError(
        `GitHub App ${this.#appId}: POST /app/installations/${installationId}/access_tokens answered ${status ?? "no answer"} (${String(message).slice(0, 200)})${status === 401 ? " - check codehost.app.id and that the private key belongs to this App" : ""}`,
        status,
      );
    }
    const expiresAt = Date.parse(answer.expiresAt);
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

type AppAuth = ReturnType<typeof createAppAuth>;

type InstallationAuth = (options: {
  type: "installation";
  installationId: number;
  repositoryNames?: string[];
  permissions?: Record<string, string>;
  refresh?: boolean;
}) => Promise<unknown>;

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
