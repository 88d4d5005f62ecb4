import { objectSchema, type Tool, type ToolDeps, ToolError } from "./tool.js";

export type SpawnArgs = { task: string; label?: string };

const DESCRIPTION = [
  "Start a background helper for a long task (reading many files, research, a long command), so you can answer now and keep talking.",
  "`task` must say everything the helper needs: it starts with no memory of this conversation, has the file, exec and web tools, and cannot ask questions.",
  "`label` is a short name for it. The call returns at once with a run id; when the helper is done its result comes back to this conversation",
  "as a system message, and you then tell the user. Tell the user now that a helper is on it; do not wait for it or make up its result.",
].join(" ");

export function createSpawnTool(spawner: NonNullable<ToolDeps["helpers"]>): Tool<SpawnArgs> {
  return {
    name: "spawn",
    description: DESCRIPTION,
    parameters: objectSchema(["task"], {
      task: { type: "string", minLength: 1, maxLength: 20_000, description: "The complete task for the helper" },
      label: { type: "string", maxLength: 80, description: "A short name, e.g. 'garden notes'" },
    }),
    async execute(args, ctx) {
      if (ctx.inbound.channel === "system" && ctx.inbound.run.kind === "helper") {
        throw new ToolError(
          "this turn relays a helper's result, and it may not start another helper (no endless chains). Tell the user what the helper found; they can ask for more.",
        );
      }
      const task = args.task.trim();
      if (!task) throw new ToolError("`task` is empty: say what the helper should do.");
      const label = args.label?.trim() || undefined;
      const id = await spawner.spawn(ctx.inbound, task, label);
      return `Helper ${id}${label ? ` ("${label}")` : ""} started in the background. Its result will come to this conversation as a system message when it is done; tell the user it is on it.`;
    },
  };
}
