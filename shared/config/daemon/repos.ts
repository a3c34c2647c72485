import { checkKeys, mapping, quote, str, type YamlMap } from "../read.ts";
import { type ConfigFile, formatPath } from "../source.ts";
import type { DaemonSettings } from "../types.ts";

const REPO_NAME = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;
// git reads a URL or a path holding one as something else (a second config line, a cut argument)
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u001f\u007f]/;

/** `repos` as daemon.yaml writes it: each repository's `clone_url`, when one is given. */
export type ConfiguredRepos = Record<string, { cloneUrl?: string; auth?: "none" }>;

/**
 * `repos: { <owner>/<name>: { clone_url? } }`; an entry may be empty (`acme/widgets: {}` or
 * `acme/widgets:`), and its clone URL is then the code host's (see resolveRepos).
 */
export function readRepos(f: ConfigFile, root: YamlMap): ConfiguredRepos {
  const repos: ConfiguredRepos = {};
  if (root.repos === undefined || root.repos === null) return repos;
  const list = mapping(f, root.repos, ["repos"], " - e.g. repos: { acme/widgets: {} }");
  if (!list) return repos;
  for (const [name, value] of Object.entries(list)) {
    const path = ["repos", name];
    if (!REPO_NAME.test(name)) {
      f.report(
        path,
        "invalid_value",
        `repository key ${quote(name)} must be written <owner>/<name>, e.g. acme/widgets`,
      );
      continue;
    }
    const raw =
      value === null || value === undefined
        ? {}
        : mapping(
            f,
            value,
            path,
            ` - write { clone_url: https://github.com/${name}.git }, or {} to clone it from the code host`,
          );
    if (!raw) continue;
    checkKeys(f, raw, path, ["clone_url", "auth"]);
    // `auth: none`: fetched anonymously whatever the pipeline's identity (a public repository, or
    // a mirror that takes no credential)
    let auth: { auth?: "none" } = {};
    if (raw.auth !== undefined && raw.auth !== null) {
      if (raw.auth !== "none") {
        f.report(
          [...path, "auth"],
          "invalid_value",
          `"${formatPath([...path, "auth"])}" must be "none" (fetch anonymously), or left out to fetch as the pipeline's code-host identity, not ${quote(String(raw.auth))}`,
        );
        continue;
      }
      auth = { auth: "none" };
    }
    if (raw.clone_url === undefined || raw.clone_url === null) {
      repos[name] = { ...auth };
      continue;
    }
    const cloneUrl = str(f, raw, "clone_url", path);
    if (cloneUrl === undefined) continue;
    const refused = refusal(cloneUrl);
    if (refused) {
      f.report(
        [...path, "clone_url"],
        "invalid_value",
        `"${formatPath([...path, "clone_url"])}" must be an https:// or http:// URL, or the file:// URL or absolute path of a local mirror, e.g. clone_url: https://github.com/${name}.git (got ${refused})`,
      );
      continue;
    }
    repos[name] = { cloneUrl, ...auth };
  }
  return repos;
}

/**
 * Why git must not be handed `value` as a clone URL, or undefined when it is fine. Said without
 * the value: a URL may carry a password. Only http(s) reaches the code host with the run's
 * identity; file:// and absolute paths serve tests and local mirrors. Everything else (an option,
 * `ext::` or another remote helper, ssh) is refused before git ever sees it.
 */
function refusal(value: string): string | undefined {
  if (CONTROL.test(value)) return "a value holding a control character such as a newline";
  if (value.startsWith("-")) return 'a value starting with "-", which git would read as an option';
  if (value.startsWith("/")) return undefined;
  const helper = /^([A-Za-z0-9+.-]+)::/.exec(value)?.[1];
  if (helper !== undefined) {
    return helper.toLowerCase() === "ext"
      ? `git's "ext::" remote helper syntax, which runs a command`
      : `git's remote helper syntax ${quote(`${helper}::`)}`;
  }
  const [, scheme, slashes] = /^([A-Za-z][A-Za-z0-9+.-]*):(\/\/)?/.exec(value) ?? [];
  const known = scheme?.toLowerCase();
  if (known === "http" || known === "https" || known === "file") {
    let url: URL | undefined;
    try {
      url = slashes ? new URL(value) : undefined;
    } catch {}
    if (!url) return `a malformed ${known}:// URL`;
    if (known === "file") {
      return url.host === "" && url.pathname.length > 1
        ? undefined
        : "a file:// URL naming no absolute path on this host";
    }
    return url.hostname ? undefined : `an ${known}:// URL without a host`;
  }
  const ssh = "svc fetches over http(s), as the pipeline's code-host identity";
  if (known && slashes) {
    return /^(git\+)?ssh(\+git)?$/.test(known)
      ? `an SSH URL: ${ssh}`
      : `a URL of scheme ${quote(`${known}:`)}`;
  }
  // git reads "host:path" and "user@host:path", a colon before any slash, as an SSH address
  if (/^[^/]*:/.test(value)) return `an SSH address (host:path): ${ssh}`;
  return "a relative path";
}

/**
 * Where the code host serves its web pages and git, derived from its API URL as GitHub does:
 * `https://api.github.com` → `https://github.com`; GitHub Enterprise's `https://ghe.example.com/api/v3`
 * → `https://ghe.example.com`; any other URL → its origin and path, less a trailing `/api/v3` or
 * `/api` (a loopback fake at `http://127.0.0.1:4567` stays itself).
 */
export function codehostWebBase(apiUrl: string): string {
  const url = new URL(apiUrl);
  if (url.hostname === "api.github.com") return "https://github.com";
  const path = url.pathname.replace(/\/+$/, "").replace(/\/api(\/v3|\/v4)?$/, "");
  return `${url.origin}${path}`;
}

/** The clone URL of a repository configured without `clone_url`: `<web base>/<owner>/<name>.git`. */
export function defaultCloneUrl(apiUrl: string, repo: string): string {
  return `${codehostWebBase(apiUrl)}/${repo}.git`;
}

/** Each configured repository with the URL it is cloned from: its `clone_url`, else the code host's. */
export function resolveRepos(repos: ConfiguredRepos, apiUrl: string): DaemonSettings["repos"] {
  const out: DaemonSettings["repos"] = {};
  for (const [name, { cloneUrl, auth }] of Object.entries(repos)) {
    out[name] = {
      ...(cloneUrl
        ? { cloneUrl, configured: true }
        : { cloneUrl: defaultCloneUrl(apiUrl, name), configured: false }),
      ...(auth ? { auth } : {}),
    };
  }
  return out;
}

/** `url` without a `user:password@` part, for showing it; any other text unchanged. */
export function withoutUserinfo(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.username && !parsed.password) return url;
    parsed.username = "";
    parsed.password = "";
    return parsed.toString();
  } catch {
    return url;
  }
}
