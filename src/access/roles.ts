import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { InboundMessage, PersonRef } from "../bus/types.js";
import type { FileConfig } from "../config/file-schema.js";
import type { Person } from "../store/people.js";
import { matchesGlob } from "../text.js";
import { spaceOf } from "./policy.js";

/** A role's rights (config `roles.NAME`): `tools` globs (absent: all), `approvals` over the top-level section,
 * `usage` budgets per person, `models` the right to `/model`. */
export type Role = FileConfig["roles"][string];
type RoleConfig = Pick<FileConfig, "roles" | "people">;

/** The built-in roles; `roles.NAME` in the config is merged over them. Only the owner sees everyone's usage. */
const BUILT_IN: Record<string, Role> = { owner: { models: true }, member: { models: true }, guest: { models: false } };

/** A role's settings, the file's over the built-in's; a name the config no longer knows is the default role. */
export function roleSettings(config: RoleConfig, name: string): Role {
  if (!BUILT_IN[name] && !config.roles[name]) return roleSettings(config, config.people.defaultRole);
  return { ...BUILT_IN[name], ...config.roles[name] };
}

/** A person's role: the one `pincer people role` set, else `owner` when one of the person's accounts is named in
 * `*_ALLOW_FROM` (or is local: the terminal, the control page), else `people.defaultRole`. */
export function roleOf(person: Person, named: (route: string, userId: string) => boolean, defaultRole: string): string {
  if (person.role) return person.role;
  return person.identities.some((i) => named(i.route, i.userId)) ? "owner" : defaultRole;
}

/** A run's workspace for its tools (ToolContext): the owner's whole one, or a person's space (policy.ts spaceOf), made
 * on first use, which reaches `shared/` (written only by a role with `writeShared`) and the skills, read. */
export function spaceFor(config: RoleConfig & { workspace: string }, msg: Pick<InboundMessage, "person">) {
  const workspace = spaceOf(msg, config.workspace);
  if (workspace === config.workspace || !msg.person) return { workspace };
  if (!existsSync(workspace)) mkdirSync(workspace, { recursive: true, mode: 0o700 });
  const [shared, skills] = [join(config.workspace, "shared"), join(config.workspace, "skills")];
  const writes = roleSettings(config, msg.person.role).writeShared === true;
  return { workspace, shared: { read: writes ? [skills] : [shared, skills], write: writes ? [shared] : [] } };
}

/** Whether a run for `person` is offered a tool (their role's `tools` globs); undefined when the role names none, so a
 * turn need not copy the registry. A run no person is behind (the heartbeat) is pincer's own: every tool. */
export function offeredTo(config: RoleConfig, person: PersonRef | undefined): ((tool: string) => boolean) | undefined {
  const tools = person && roleSettings(config, person.role).tools;
  return tools && ((tool) => tools.some((glob) => matchesGlob(tool, glob)));
}
