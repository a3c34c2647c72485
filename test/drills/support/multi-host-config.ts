// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { cp, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SECRETS, writeConfigFiles } from "./config.ts";

/** Secrets of the multi-host configuration, beside the single-host drills' ones. */
export const HOST_SECRETS = {
  ...SECRETS,
  DRILL_API_TOKEN: "drill-api-token-5c1e08",
  DRILL_CODEHOST_TOKEN: "ghs_drillPublisherToken0027",
};
export const COMMENT_REPO = "acme/drill";

/**
 * The configuration every host of the multi-host drill starts from (each host gets its own copy:
 * configuration directory, workspaces and knowledge index are per host):
 * - `hook` fires `on-hook` (the `fast` agent); `quiet` fires nothing; `gh` fires `on-push` on pushes;
 * - `comment-hook` fires `comment`, whose agent works `commentSeconds` and then returns a comment
 *   that the worker publishes on the code host (`COMMENT_REPO`, the issue named in the payload);
 * - `auth.tokens` is set, so only loopback clients without forwarding headers are anonymous;
 * - `server.trusted_proxies` names the nginx host;
 * - `worker.heartbeat` is short, so a partitioned host's runs come back within the drill.
 */
export async function writeHostConfig(options: {
  codehostUrl: string;
  nginxAddress: string;
  concurrency: number;
  commentSeconds: number;
  /** `worker.heartbeat`: a lost host's runs are queued again within 5 of these */
  heartbeat: string;
}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "svc-drill-host-"));
  const pipeline = (name: string, trigger: string, target: string, extra = "") =>
    `version: 1.0.0\nagent: helper\ntrigger:\n  ${trigger}\ntargets: [${target}]\nsetup:\n  - run: "true"\ninstructions: handle ${name}\n${extra}`;
  const files: Record<string, string> = {
    "daemon.yaml": `server:
  host: 0.0.0.0
  port: 7420
  trusted_proxies: [${options.nginxAddress}]
auth:
  tokens:
    operator:
      scopes: ["*"]
      secret: "\${DRILL_API_TOKEN}"
webhooks:
  sources:
    hook: { verify: bearer, secret: "\${DRILL_TOKEN}" }
    quiet: { verify: bearer, secret: "\${DRILL_TOKEN}" }
    comment-hook: { verify: bearer, secret: "\${DRILL_TOKEN}" }
    gh: { verify: codehost, secret: "\${DRILL_CODEHOST_SECRET}" }
targets:
  fast: { runtime: command, command: ["./bin/agent"], timeout: 30s }
  commenter: { runtime: command, command: ["./bin/comment"], timeout: 2m }
ask:
  targets: [fast]
codehost:
  api_url: ${options.codehostUrl}
  token: \${DRILL_CODEHOST_TOKEN}
worker:
  concurrency: ${options.concurrency}
  grace_period: 2s
  heartbeat: ${options.heartbeat}
`,
    "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
    "knowledge/runbook.md": "# Runbook\n\nA failed deploy is rolled back with the previous release tag.\n",
    "knowledge/oncall.md": "# On call\n\nThe on-call engineer answers pages within fifteen minutes.\n",
    "bin/agent": "#!/bin/sh\ncat > /dev/null\necho '{\"ok\":true}'\n",
    "bin/comment": `#!/bin/sh\ncat > /dev/null\nsleep ${options.commentSeconds}\necho '{"comment":{"body":"Drill run done."}}'\n`,
    "pipelines/on-hook.yaml": pipeline("the hook", "webhook: [hook]", "fast"),
    "pipelines/on-push.yaml": pipeline("the push", "codehost: [push]", "fast"),
    "pipelines/comment.yaml": pipeline(
      "the comment",
      "webhook: [comment-hook]",
      "commenter",
      `result:
  schema:
    type: object
    properties:
      comment: { $ref: svc://schemas/codehost/comment/v1 }
outputs:
  comment: { handler: codehost.comment }
`,
    ),
  };
  await writeConfigFiles(dir, files);
  return dir;
}

/** A host's own copy of the configuration directory. */
export async function hostCopy(template: string, host: string): Promise<string> {
  const dir = `${template}-${host}`;
  await cp(template, dir, { recursive: true });
  return dir;
}
