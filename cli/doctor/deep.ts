import { agentImageCheck } from "./deep-agent-image.ts";
import { appInstallationsCheck } from "./deep-app.ts";
import { sandboxCheck } from "./deep-sandbox.ts";
import { targetKeysCheck } from "./deep-target-keys.ts";
import { webhookDeliveryCheck } from "./deep-webhook.ts";
import type { DoctorCheck } from "./types.ts";

/**
 * `svc doctor --deep`: the chain a first pull request travels, one link per check, run after the
 * checks of plain `svc doctor`: the App installed with the permissions and events svc needs, the
 * webhook's last delivery reaching svc, the sandbox engine and its images, each target's keys
 * accepted by its model API, and each agent CLI starting in its image. These ask GitHub, the
 * container engine and the model APIs, and spend one model request per credential.
 */
export const DEEP_CHECKS: DoctorCheck[] = [
  appInstallationsCheck,
  webhookDeliveryCheck,
  sandboxCheck,
  targetKeysCheck,
  agentImageCheck,
];
