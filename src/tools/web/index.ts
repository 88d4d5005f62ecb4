import type { Config } from "../../config/config.js";
import type { Tool } from "../tool.js";
import { compilePolicy } from "./address-policy.js";
import type { Resolver } from "./pinned-agent.js";
import { createSearchProvider } from "./search-providers.js";
import { createWebFetchTool } from "./web-fetch-tool.js";
import { createWebSearchTool } from "./web-search-tool.js";

export const USER_AGENT = "Mozilla/5.0 (compatible; pincer/0.1; self-hosted assistant)";

/**
 * web_fetch always; web_search only when a provider is configured (a tool that can only
 * answer "not configured" is not offered, see docs/tools.md, "Web").
 */
export function createWebTools(config: Pick<Config, "web">, resolve?: Resolver): Tool[] {
  const { web } = config;
  const tools: Tool[] = [
    createWebFetchTool({
      policy: compilePolicy(web.allow),
      limits: { timeoutMs: web.timeoutSeconds * 1000, maxBytes: web.maxBytes, maxRedirects: web.maxRedirects },
      defaultMaxChars: web.maxChars,
      userAgent: web.userAgent ?? USER_AGENT,
      resolve,
    }),
  ];
  const search = web.search;
  if (search?.provider && search.baseUrl) {
    const timeoutMs = search.timeoutSeconds * 1000;
    const provider = createSearchProvider({
      provider: search.provider,
      baseUrl: search.baseUrl,
      apiKey: search.apiKey,
      timeoutMs,
    });
    tools.push(createWebSearchTool(provider, timeoutMs));
  }
  return tools;
}
