import { Args, Command } from "@oclif/core";
import { OUTPUT_HANDLERS } from "../../../shared/config/pipeline/outputs.ts";
import { HANDLER_SCHEMAS, handlerSchema } from "../../../shared/output-schemas.ts";

export default class SchemaShow extends Command {
  static override summary = "Print the JSON schema of an output handler";
  static override description =
    "A pipeline's `result.schema` references one of these ids per `outputs.<key>` (`$ref: <id>`); the agent's " +
    "result is validated against it before anything is published. Give the schema id or the handler name " +
    "(codehost.review). Without an argument, lists every handler and its id.";
  static override examples = [
    "<%= config.bin %> schema show svc://schemas/codehost/review/v1",
    "<%= config.bin %> schema show chat.message",
    "<%= config.bin %> schema show",
  ];
  static override enableJsonFlag = true;
  static override args = {
    id: Args.string({ description: "a schema id (svc://schemas/...) or a handler name", required: false }),
  };

  async run(): Promise<unknown> {
    const { args } = await this.parse(SchemaShow);
    if (!args.id) {
      const list = Object.entries(OUTPUT_HANDLERS).map(([handler, { schema }]) => ({ handler, schema }));
      if (!this.jsonEnabled()) for (const entry of list) this.log(`${entry.handler}  ${entry.schema}`);
      return list;
    }
    const id = OUTPUT_HANDLERS[args.id]?.schema ?? args.id;
    const schema = handlerSchema(id);
    if (!schema) {
      this.error(
        `no output schema ${JSON.stringify(args.id)} - use one of: ${HANDLER_SCHEMAS.map((entry) => entry.$id).join(", ")}`,
        { exit: 2 },
      );
    }
    if (!this.jsonEnabled()) this.log(JSON.stringify(schema, null, 2));
    return schema;
  }
}
