import { Command } from "@oclif/core";
import { type ImageStatus, imageInventory } from "../../../shared/sandbox/images.ts";
import { configDirOf, dirFlag } from "../../config-dir-flag.ts";
import { imageConfig, withEngine } from "../../image/config.ts";
import { tableLines } from "../../table.ts";

const COLUMNS = ["IMAGE", "ON THIS HOST", "PIPELINES", "MADE BY"] as const;

export default class ImageList extends Command {
  static override summary = "Show the sandbox images this host has against those the configuration needs";
  static override description =
    "Lists agent:default and studio:default, and every agent:<variant> a pipeline's `sandbox.image` names, " +
    "with whether the container engine of this host has it, the pipelines that run in it, and how a missing " +
    "one is made: `svc image pull` for the two defaults, the variant's build directory or reference (made on " +
    "first use) for the others.";
  static override examples = [
    "<%= config.bin %> image list",
    "<%= config.bin %> image list --json",
    "<%= config.bin %> image list --dir /etc/svc",
  ];
  static override flags = { dir: dirFlag };
  static override enableJsonFlag = true;

  async run(): Promise<{ images: ImageStatus[] }> {
    const { flags } = await this.parse(ImageList);
    const env = process.env;
    const { config, settings, docker } = await imageConfig(this, configDirOf(flags.dir, env), env);
    const images = await withEngine(this, settings, () => imageInventory(docker, config, settings));
    if (!this.jsonEnabled()) {
      const rows = images.map((image) => [
        image.image,
        image.present ? "yes" : "no",
        image.pipelines.join(", ") || "-",
        image.source,
      ]);
      for (const line of tableLines(COLUMNS, rows)) this.log(line);
    }
    return { images };
  }
}
