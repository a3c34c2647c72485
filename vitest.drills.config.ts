import { defineConfig } from "vitest/config";

/**
 * `npm run drills`: fault drills on real processes and a real Postgres (test/drills/). They are
 * heavy (bursts of thousands of webhooks, a five-minute soak), so they run one file at a time and
 * apart from `npm test`. Each drill prints its duration and an accounting line.
 */
export default defineConfig({
  test: {
    include: ["test/drills/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    pool: "forks",
    maxWorkers: 1,
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 120_000,
    // the accounting lines are the point of a drill: show them as they are printed
    silent: false,
    reporters: ["default"],
  },
});
