import type { Config } from "../../config/config.js";
import type { Tool } from "../tool.js";
import { compilePolicy } from "./address-policy.js";
import { createWebFetchTool } from "./web-fetch-tool.js";
import { createWebSearchTool } from "./web-search-tool.js";

/** web_fetch always; web_search only with a provider (a tool that can only say "not configured" is not offered). */
export function createWebTools({ web }: Pick<Config, "web">): Tool[] {
  const { provider, baseUrl } = web.search ?? {};
  const fetch = createWebFetchTool({ ...web, policy: compilePolicy(web.allow) });
  return provider && baseUrl ? [fetch, createWebSearchTool({ ...web.search, provider, baseUrl })] : [fetch];
}
