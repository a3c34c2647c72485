import { Args, Command } from "@oclif/core";

/** A template is a command of the init topic: `svc init review` is cli/commands/init/review.ts. */
const PREFIX = "init:";

export default class Init extends Command {
  static override summary = "List the templates that write a ready configuration (svc init <template>)";
  static override description =
    "Each template writes the files of one use of svc into the configuration directory (--dir, else " +
    "$SVC_CONFIG_DIR, else ./.svc), overwrites nothing that exists without --force, checks the result as " +
    "`svc config validate` does and prints the next steps. Without a template, lists them with what each " +
    "writes; `svc init <template> --help` gives a template's flags.";
  static override examples = [
    "<%= config.bin %> init",
    "<%= config.bin %> init review --agent claude-code",
    "<%= config.bin %> init review --help",
  ];
  static override args = {
    template: Args.string({ description: "a template's name (see the list)", required: false }),
  };

  async run(): Promise<void> {
    const { args } = await this.parse(Init);
    const templates = this.config.commands
      .filter((command) => command.id.startsWith(PREFIX) && !command.hidden)
      .map((command) => ({ name: command.id.slice(PREFIX.length), summary: command.summary ?? "" }))
      .sort((a, b) => a.name.localeCompare(b.name));
    const names = templates.map((template) => template.name).join(", ");
    if (args.template !== undefined) {
      process.stderr.write(`unknown template "${args.template}": svc init has ${names}\n`);
      return this.exit(1);
    }
    const width = Math.max(...templates.map((template) => template.name.length));
    this.log("Templates (svc init <template> --help gives its flags and examples):");
    for (const template of templates) this.log(`  ${template.name.padEnd(width)}  ${template.summary}`);
    this.log(`\ne.g. ${this.config.bin} init review --agent claude-code`);
  }
}
