/** The configuration the worker's end-to-end tests run: real YAML, loaded by the real loader. */
export const AGENT_SCRIPT = `#!/bin/sh
cat > "$RUN_DIR/prompt.txt"
echo "working on $EVENT_NAME"
echo '{"summary": "done", "event": "'"$EVENT_NAME"'"}'
`;

export const SLOW_AGENT_SCRIPT = `#!/bin/sh
sleep 300 &
echo $! > "$RUN_DIR/grandchild.pid"
sleep 300
`;

export const BAD_AGENT_SCRIPT = `#!/bin/sh
cat > /dev/null
echo '{"review": {"event": "MAYBE", "body": "looks fine"}}'
`;

export function baseFiles(
  extra: { sources?: string; targets?: string } = {},
  pipelines: Record<string, string> = {},
): Record<string, string> {
  return {
    "daemon.yaml": `webhooks:
  sources:
    deploy-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    broken-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    slow-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    strict-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    orphan-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    linear: { verify: tracker, secret: "\${LINEAR_SECRET}" }
${extra.sources ?? ""}
targets:
  local:
    runtime: command
    command: ["./bin/agent"]
    timeout: 30s
  slow:
    runtime: command
    command: ["./bin/slow-agent"]
    timeout: 1s
  strict:
    runtime: command
    command: ["./bin/bad-agent"]
    timeout: 30s
${extra.targets ?? ""}
ask:
  targets: [local]
codehost:
  api_url: http://127.0.0.1:9/unreachable
  token: e2e-codehost-token-unused
worker:
  concurrency: 2
  grace_period: 5s
`,
    "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\npolicies: [short]\n---\nYou help.\n",
    "policies/short.md": "---\nname: short\ndescription: Be short.\n---\nBe short.\n",
    "bin/agent": AGENT_SCRIPT,
    "bin/slow-agent": SLOW_AGENT_SCRIPT,
    "bin/bad-agent": BAD_AGENT_SCRIPT,
    "pipelines/notes.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [deploy-hook]
targets: [local]
env:
  DEPLOY_ENV: production
setup:
  - run: env > "$RUN_DIR/env.txt"; date +%s%N > "$RUN_DIR/started.txt"
instructions: |
  Summarise the deployment.
`,
    "pipelines/broken.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [broken-hook]
targets: [local]
setup:
  - run: echo first
  - run: echo failing >&2; exit 7
instructions: never reached
`,
    "pipelines/sleepy.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [slow-hook]
targets: [slow]
instructions: take your time
`,
    "pipelines/strict.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [strict-hook]
targets: [strict]
instructions: review it
result:
  schema:
    type: object
    properties:
      review:
        $ref: svc://schemas/codehost/review/v1
    required: [review]
outputs:
  review:
    handler: codehost.review
`,
    "pipelines/session.yaml": `version: 1.0.0
agent: helper
trigger:
  tracker: [AgentSessionEvent.created]
targets: [local]
instructions: answer the session
`,
    ...pipelines,
  };
}

export const EXECUTABLES = ["bin/agent", "bin/slow-agent", "bin/bad-agent"];
