/** `host_tools.<name>.input.<field>` */
export interface HostToolInputSpec {
  /** string, number, integer, boolean, or path (resolved inside the caller's worktree) */
  type: string;
  required: boolean;
  description?: string;
  /** `allow_options: true`: a value may start with "-" (otherwise it is refused) */
  allowOptions?: boolean;
}

export interface HostTool {
  name: string;
  description: string;
  input: Record<string, HostToolInputSpec>;
  exec: string;
  args: string[];
  stdin?: string;
  env: Record<string, string>;
}
