import type { Config } from "../../config/config.js";
import type { Tool } from "../tool.js";
import { compilePolicy } from "./address-policy.js";
import { createWebFetchTool } from "./web-fetch-tool.js";
import { createWebSearchTool } from "./web-search-tool.js";

export const USER_AGENT = "Mozilla/5.0 (compatible; pincer/0.1; self-hosted assistant)";

/** web_fetch always; web_search only with a provider (a tool that can only say "not configured" is not offered). */
export function createWebTools({ web }: Pick<Config, "web">): Tool[] {
  const { provider, baseUrl } = web.search ?? {};
  const fetch = createWebFetchTool({
    policy: compilePolicy(web.allow),
    limits: { timeoutMs: web.timeoutSeconds * 1000, maxBytes: web.maxBytes, maxRedirects: web.maxRedirects },
    defaultMaxChars: web.maxChars,
    userAgent: web.userAgent ?? USER_AGENT,
  });
  return provider && baseUrl ? [fetch, createWebSearchTool({ ...web.search, provider, baseUrl })] : [fetch];
}
