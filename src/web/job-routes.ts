import type { JobActions } from "../scheduler/job-actions.js";
import { HttpError } from "./http.js";

const ACTIONS = ["run", "pause", "resume", "delete", "edit"] as const;

/**
 * `POST /api/jobs/{run,pause,resume,edit,delete}` with `{ id }` (and for edit `message`, `schedule`, `tz`): the page's
 * job actions, behind the same session check as the page's others. Answers the sentence of what was done; a refusal
 * is an HttpError with that sentence.
 */
export async function jobRoute(actions: JobActions, path: string, body: Record<string, unknown>): Promise<string> {
  const action = ACTIONS.find((name) => path === `/api/jobs/${name}`);
  if (!action) throw new HttpError(404, "not found");
  const field = (name: string, max: number): string => {
    const value = body[name];
    if (typeof value !== "string" || value.trim() === "" || value.length > max) {
      throw new HttpError(400, `"${name}" must be a string of 1 to ${max} characters`);
    }
    return value;
  };
  const id = field("id", 64);
  const result =
    action === "edit"
      ? await actions.edit(id, {
          message: field("message", 4000),
          schedule: field("schedule", 200),
          tz: field("tz", 64),
        })
      : await actions[action === "delete" ? "remove" : action](id);
  if (!result.ok) throw new HttpError(result.status, result.text);
  return result.text;
}
