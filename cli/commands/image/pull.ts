import { Command } from "@oclif/core";
import { DEFAULT_IMAGES } from "../../../shared/config/sandboxes.ts";
import { isEngineUnreachable } from "../../../shared/sandbox/engine.ts";
import { pullDefaultImages } from "../../../shared/sandbox/images.ts";
import { configDirOf, dirFlag } from "../../config-dir-flag.ts";
import { imageConfig, registryCredentials, withEngine } from "../../image/config.ts";

export default class ImagePull extends Command {
  static override summary =
    "Pull the agent:default and studio:default sandbox images from sandboxes.registry";
  static override description =
    "Pulls exactly <registry>/agent:default and <registry>/studio:default from the registry that " +
    "`sandboxes.registry` in daemon.yaml names, tags them agent:default and studio:default on this host's " +
    "container engine (sandboxes.engine.socket, else DOCKER_HOST, else /var/run/docker.sock), and shows " +
    "progress per layer. Nothing else is pulled: other variants (sandboxes.images) are built or pulled on the " +
    "host that runs the pipelines requesting them, on first use. Credentials come from " +
    "`sandboxes.registry_auth` (`secret_ref: registry/password` needs the instance key and the database).";
  static override examples = [
    "<%= config.bin %> image pull",
    "<%= config.bin %> image pull --dir /etc/svc",
    "DOCKER_HOST=unix:///run/podman/podman.sock <%= config.bin %> image pull",
  ];
  static override flags = { dir: dirFlag };

  async run(): Promise<void> {
    const { flags } = await this.parse(ImagePull);
    const env = process.env;
    const dir = configDirOf(flags.dir, env);
    const { settings, docker } = await imageConfig(this, dir, env);
    if (!settings.registry) {
      process.stderr.write(
        `svc image pull: "sandboxes.registry" is not set in ${dir}/daemon.yaml - add "sandboxes: { registry: <registry>/<path> }" naming where ${DEFAULT_IMAGES.join(" and ")} are published\n`,
      );
      return this.exit(1);
    }
    const registry = settings.registry;
    const auth = await registryCredentials(settings, dir, env);
    const pulled = await withEngine(this, settings, () =>
      pullDefaultImages(docker, registry, (line) => this.log(line), auth).catch((error: Error) => {
        if (isEngineUnreachable(error)) throw error;
        // the engine's own words (a missing tag, a refused login), without its HTTP wrapping
        const why = error.message.replace(/^\(HTTP code \d+\) [\w ]+ - /, "").trim();
        const fix = /auth|unauthorized|denied/i.test(why)
          ? auth
            ? ' - check the username in "sandboxes.registry_auth" and the stored password'
            : ' - the registry wants a login: set "sandboxes.registry_auth: { username, secret_ref: registry/password }"'
          : ` - check that ${registry} holds ${DEFAULT_IMAGES.join(" and ")}`;
        process.stderr.write(`svc image pull: pulling from ${registry} failed: ${why}${fix}\n`);
        return this.exit(1);
      }),
    );
    this.log(`pulled ${pulled.join(" and ")} from ${registry}`);
  }
}
