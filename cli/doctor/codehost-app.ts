import { existsSync } from "node:fs";
import { join } from "node:path";
import { createPool, resolveDatabase } from "../../db/connect.ts";
import { readSecrets } from "../../db/secrets.ts";
import { AppAuthError, AppTokens } from "../../shared/codehost/app-tokens.ts";
import { instanceKeyPath } from "../../shared/config/dir.ts";
import type { SecretSource } from "../../shared/config/secret-source.ts";
import { ConfigFile } from "../../shared/config/source.ts";
import type { CodehostApp, ConfigProblem } from "../../shared/config/types.ts";
import { readInstanceKey } from "../../shared/secrets/instance-key.ts";
import type { CheckOutcome, DoctorCheck, DoctorContext } from "./types.ts";

/**
 * Each GitHub App of daemon.yaml (`codehost.app`, `codehost.principals.<id>.app`): its key signs an
 * App JWT, GitHub accepts it (`GET /app`) and the App's installations are listed
 * (`GET /app/installations`). A refusal names the App, the key path and the fix; never the key.
 */
export const codehostAppCheck: DoctorCheck = {
  name: "codehost-app",
  async run(ctx): Promise<CheckOutcome> {
    const result = await ctx.config();
    if (!result.ok) return { status: "skipped", detail: "the configuration has errors", problems: [] };
    const codehost = result.config.codehost;
    const apps: [string, CodehostApp][] = [
      ...(codehost?.app ? [["codehost.app", codehost.app] as [string, CodehostApp]] : []),
      ...Object.entries(codehost?.principals ?? {}).flatMap(([id, principal]) =>
        principal.app ? [[`codehost.principals.${id}.app`, principal.app] as [string, CodehostApp]] : [],
      ),
    ];
    if (!codehost || apps.length === 0)
      return { status: "skipped", detail: "no GitHub App in daemon.yaml", problems: [] };
    const problems: ConfigProblem[] = [];
    const file = new ConfigFile("daemon.yaml", problems);
    const details: string[] = [];
    for (const [path, app] of apps) {
      try {
        const privateKey = await keyOf(ctx, app.privateKey);
        const tokens = new AppTokens({ apiUrl: codehost.apiUrl, appId: app.id, privateKey });
        const self = await tokens.asApp<{ slug?: string; name?: string }>("GET", "/app");
        const installations = await tokens.asApp<{ id: number; account?: { login?: string } }[]>(
          "GET",
          "/app/installations",
        );
        const where = installations.map((entry) => `${entry.account?.login ?? "?"} (${entry.id})`).join(", ");
        details.push(
          `${path}: App ${self.slug ?? self.name ?? app.id} (${app.id}), ${installations.length} installation(s)${where ? `: ${where}` : " - install it on your repositories"}`,
        );
      } catch (error) {
        if (!(error instanceof AppAuthError)) throw error;
        file.report(path.split("."), "codehost_app_refused", `"${path}": ${error.message}`);
        details.push(`${path}: ${error.message}`);
      }
    }
    return { status: problems.length ? "error" : "ok", detail: details.join("; "), problems };
  },
};

/** A secret of daemon.yaml (an App's PEM key, a token): inline as configured, or the stored secret (the database and the instance key). */
export async function keyOf(ctx: DoctorContext, source: SecretSource): Promise<string> {
  if (source.kind === "inline") return source.value;
  // unset: the daemon's embedded default, when it has one (never made here)
  const embedded = existsSync(join(ctx.dir, "data", "postgres.json"));
  const url =
    ctx.env.SVC_DATABASE_URL?.trim() || (embedded ? (await resolveDatabase(ctx.dir, ctx.env)).url : "");
  if (!url)
    throw new AppAuthError(`the stored key ${source.name} cannot be read: SVC_DATABASE_URL is not set`);
  const pool = createPool(url, { max: 1, applicationName: "svc-doctor" });
  try {
    const key = await readInstanceKey(instanceKeyPath(ctx.dir, ctx.env));
    const value = (await readSecrets(pool, key, [source.name])).get(source.name);
    if (value === undefined)
      throw new AppAuthError(`the stored key ${source.name} does not exist - store it with svc setup`);
    return value;
  } finally {
    await pool.end().catch(() => {});
  }
}
