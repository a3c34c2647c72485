import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { sign } from "@octokit/webhooks-methods";

const ROOT = join(import.meta.dirname, "../../..");

/** The code host's `pull_request.opened` delivery the ingress's own tests use. */
export const PR_PAYLOAD = JSON.parse(
  await readFile(join(ROOT, "ingress/webhooks/codehost/fixtures/pull_request/opened.payload.json"), "utf8"),
) as {
  number: number;
  repository: { full_name: string };
  pull_request: { head: { sha: string } };
  sender: { login: string };
};

/** `owner/repo#number` of the fixture: the key the fake code host files its posts under. */
export const THREAD = `${PR_PAYLOAD.repository.full_name}#${PR_PAYLOAD.number}`;

/** Posts a `pull_request` delivery signed as the code host signs it; the ingress's answer. */
export function postSignedPullRequest(url: string, secret: string, payload: unknown): Promise<Response> {
  return postSignedDelivery(url, secret, "pull_request", payload);
}

/** Posts a delivery of `event` (X-GitHub-Event) signed as the code host signs it; the ingress's answer. */
export async function postSignedDelivery(
  url: string,
  secret: string,
  event: string,
  payload: unknown,
): Promise<Response> {
  const body = JSON.stringify(payload);
  return fetch(`${url}/webhooks/github`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": event,
      "x-github-delivery": crypto.randomUUID(),
      "x-hub-signature-256": await sign(secret, body),
    },
    body,
  });
}
