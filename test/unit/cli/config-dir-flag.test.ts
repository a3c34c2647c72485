import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { configDirOf, configEnvOf } from "../../../cli/config-dir-flag.ts";

describe("--dir", () => {
  const env = { PATH: "/usr/bin", SVC_CONFIG_DIR: "/etc/svc" };

  it("names the configuration directory over $SVC_CONFIG_DIR, which names it over ./.svc", () => {
    expect(configDirOf("/srv/svc", env)).toBe("/srv/svc");
    expect(configDirOf(undefined, env)).toBe("/etc/svc");
    expect(configDirOf(undefined, { PATH: "/usr/bin" })).toBe(resolve(".svc"));
  });

  it("is handed on as SVC_CONFIG_DIR in a copy of the environment, which is left as it was", () => {
    expect(configEnvOf("/srv/svc", env)).toEqual({ PATH: "/usr/bin", SVC_CONFIG_DIR: "/srv/svc" });
    expect(env.SVC_CONFIG_DIR).toBe("/etc/svc");
    expect(configEnvOf(undefined, env)).toBe(env);
  });
});
