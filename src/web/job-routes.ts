import type { JobActions } from "../scheduler/job-actions.js";
import { LIMIT_FIELDS } from "../scheduler/stop-rules.js";
import { HttpError, textFields } from "./http.js";

const ACTIONS = ["run", "pause", "resume", "delete", "edit"] as const;

/** `POST /api/jobs/{run,pause,resume,edit,delete}` with `{ id }` (edit: `message`, `schedule`, `tz` and the stop rules
 * of LIMIT_FIELDS, an empty one unset). Answers the sentence of what was done; a refusal is an HttpError with it. */
export async function jobRoute(actions: JobActions, path: string, body: Record<string, unknown>): Promise<string> {
  const action = ACTIONS.find((name) => path === `/api/jobs/${name}`);
  if (!action) throw new HttpError(404, "not found");
  const field = textFields(body);
  const id = field("id", 64);
  const result =
    action === "edit"
      ? await actions.edit(id, {
          message: field("message", 4000),
          schedule: field("schedule", 200),
          tz: field("tz", 64),
          limits: Object.fromEntries(
            LIMIT_FIELDS.filter((f) => body[f] !== undefined).map((f) => [f, field(f, 40, 0)]),
          ),
        })
      : await actions[action === "delete" ? "remove" : action](id);
  if (!result.ok) throw new HttpError(result.status, result.text);
  return result.text;
}
