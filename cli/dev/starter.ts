import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * What `svc dev` writes when the configuration directory does not exist yet, so the first command
 * of a fresh clone runs something end to end: one bearer webhook (`hello`), a pipeline it fires
 * (a setup step that keeps the payload as an artifact, then a stand-in agent that answers JSON),
 * and the `ask` block the daemon requires. The token is random per checkout and stays in the
 * git-ignored `.svc/`.
 */
export async function writeStarterConfig(dir: string): Promise<{ files: string[] }> {
  const token = randomBytes(18).toString("base64url");
  await mkdir(join(dir, "pipelines"), { recursive: true });
  const daemon = `# Starter configuration written by \`svc dev\` because ${dir} did not exist.
# Edit it freely; every change takes effect at the next restart.
server:
  host: 127.0.0.1
  port: 7420

webhooks:
  sources:
    hello:                  # POST /webhooks/hello with "Authorization: Bearer <secret>"
      verify: bearer
      secret: ${token}

targets:
  starter-agent:            # a stand-in agent: replace with your agent CLI or an openai target
    runtime: command
    command: ["sh", "-c", "cat > /dev/null; echo '{\\"acknowledged\\": true}'"]
    timeout: 1m

ask:
  targets: [starter-agent]
`;
  const pipeline = `# Fired by POST /webhooks/hello. Replace the setup step and the agent with real work.
version: 0.1.0
agent: greeter
trigger:
  webhook: [hello]
targets: [starter-agent]
instructions: |
  Acknowledge the event in one sentence.
setup:
  - run: printf '%s\\n' "$PAYLOAD_JSON" > "$SURFACE_DIR/event.json"
`;
  const persona = `---
name: greeter
description: Acknowledges incoming events (the starter agent of svc dev).
---
You acknowledge incoming events in one sentence.
`;
  await mkdir(join(dir, "agents", "greeter"), { recursive: true });
  const files = {
    daemon: join(dir, "daemon.yaml"),
    pipeline: join(dir, "pipelines", "hello.yaml"),
    persona: join(dir, "agents", "greeter", "PERSONA.md"),
  };
  await writeFile(files.daemon, daemon, { mode: 0o600 });
  await writeFile(files.pipeline, pipeline);
  await writeFile(files.persona, persona);
  return { files: Object.values(files) };
}
