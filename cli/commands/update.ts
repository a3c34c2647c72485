import { Command, Flags } from "@oclif/core";
import semver from "semver";
import { notesBetween, type Release } from "../update/changelog.ts";
import { foreignRelease } from "../update/identity.ts";
import { installation } from "../update/installation.ts";
import { installGlobal, NpmError, publishedVersions, registry, releaseManifest } from "../update/npm.ts";

export interface UpdateJson {
  name: string;
  installed: string;
  available: string;
  updateAvailable: boolean;
  updated: boolean;
  notes: Release[];
}

const NEXT_STEPS = [
  "svc config migrate --dry-run    # review the configuration rewrites, then run it without --dry-run",
  "svc doctor                      # resolve every error it lists",
  "svc daemon restart              # the running daemon keeps its version until then",
  "svc daemon status               # reachable, and running the installed version",
];

export default class Update extends Command {
  static override summary = "Install the newest svc release from the npm registry";
  static override description =
    "Asks the registry npm is configured with (`npm config get registry`; npm's own settings such as " +
    "npm_config_registry apply) for the releases of this package, compares them with the installed version, " +
    "and installs the newest (or --version) with `npm install --global <name>@<version>` into the prefix svc is " +
    "installed under. A release whose package.json does not name this package and carry its project marker " +
    '(`"svc": { "project": ... }`) is refused before anything is installed. ' +
    "The running daemon keeps its version until `svc daemon restart`. Prints the migration " +
    "notes of every release in between (from the package's CHANGELOG.md) and the next steps of the standard " +
    "upgrade. --check only reports what is available.";
  static override examples = [
    "<%= config.bin %> update --check",
    "<%= config.bin %> update",
    "<%= config.bin %> update --version 0.12.1",
    "npm_config_registry=https://npm.internal.example.com <%= config.bin %> update",
  ];
  static override enableJsonFlag = true;
  static override flags = {
    check: Flags.boolean({ description: "report the newest release and install nothing" }),
    version: Flags.string({
      description: "install this release instead of the newest",
      helpValue: "<version>",
    }),
  };

  async run(): Promise<UpdateJson> {
    const { flags } = await this.parse(Update);
    const self = installation();
    const say = (line: string) => {
      if (!this.jsonEnabled()) this.log(line);
    };
    let published: Awaited<ReturnType<typeof publishedVersions>>;
    try {
      published = await publishedVersions(self.name, process.env);
    } catch (error) {
      if (error instanceof NpmError) this.error(error.message, { exit: 1 });
      throw error;
    }
    const newest = published.latest ?? semver.maxSatisfying(published.versions, "*") ?? undefined;
    if (flags.version !== undefined && !published.versions.includes(flags.version)) {
      this.error(
        `${self.name}@${flags.version} is not published on ${await registry(process.env)} - the newest is ${newest ?? "none"}`,
        { exit: 1 },
      );
    }
    const target = flags.version ?? newest;
    if (!target)
      this.error(`${await registry(process.env)} publishes no release of ${self.name}`, { exit: 1 });
    const json: UpdateJson = {
      name: self.name,
      installed: self.version,
      available: target,
      updateAvailable: semver.gt(target, self.version),
      updated: false,
      notes: [],
    };
    if (target === self.version || (!flags.version && !json.updateAvailable)) {
      say(`${self.name} ${self.version} is installed, the newest release on ${await registry(process.env)}`);
      return json;
    }
    // whose package the release is, from its own manifest, before it is offered or installed
    let refusal: string | undefined;
    try {
      const found = await releaseManifest(self.name, target, process.env);
      refusal = foreignRelease(found, self, await registry(process.env));
    } catch (error) {
      if (error instanceof NpmError) this.error(error.message, { exit: 1 });
      throw error;
    }
    if (refusal) this.error(refusal, { exit: 1 });
    if (flags.check) {
      say(
        `${self.name} ${target} is available (installed: ${self.version}); run \`svc update\` to install it`,
      );
      return json;
    }
    if (!self.prefix) {
      this.error(
        `svc runs from a source checkout (${self.root}), which npm did not install: update it with \`git pull && npm ci\`, or install the package with \`npm install --global ${self.name}\``,
        { exit: 1 },
      );
    }
    say(`installing ${self.name}@${target} with npm into ${self.prefix} (installed: ${self.version})`);
    try {
      await installGlobal(`${self.name}@${target}`, self.prefix, process.env);
    } catch (error) {
      if (error instanceof NpmError) this.error(error.message, { exit: 1 });
      throw error;
    }
    json.updated = true;
    json.notes = semver.gt(target, self.version) ? await notesBetween(self.root, self.version, target) : [];
    say(`installed ${self.name} ${target}; the running daemon stays on ${self.version} until it restarts`);
    for (const release of json.notes) say(`\n## ${release.version}\n${release.notes}`);
    if (semver.lt(target, self.version))
      say("\nthis is a downgrade: configuration and database migrations are not undone");
    say(`\nnext steps of the standard upgrade:\n${NEXT_STEPS.map((step) => `  ${step}`).join("\n")}`);
    return json;
  }
}
