import { Flags } from "@oclif/core";

export const TRIGGER_STATUSES = ["queued", "running", "completed", "error", "discarded"] as const;

/** `--status`, refusing `timeout` with the replacement (the status was removed in 0.9.0). */
export const statusFlag = (description: string, defaultValue?: string) =>
  Flags.string({
    description,
    helpValue: `<${TRIGGER_STATUSES.join("|")}>`,
    ...(defaultValue ? { default: defaultValue } : {}),
    parse: async (input) => {
      if (input === "timeout") {
        throw new Error(
          'the status "timeout" no longer exists: a timed-out run has status error and code agent_timeout; use --status error --code agent_timeout',
        );
      }
      if (!(TRIGGER_STATUSES as readonly string[]).includes(input)) {
        throw new Error(`--status must be one of ${TRIGGER_STATUSES.join(", ")}`);
      }
      return input;
    },
  });

export const sinceFlag = Flags.string({
  description: "only triggers created since then: an ISO timestamp or a duration such as 30m, 24h, 7d",
  helpValue: "<when>",
});
