import ipaddr from "ipaddr.js";
import { ConfigError } from "./errors.js";
import type { FileConfig } from "./file-schema.js";

const BRAVE_BASE_URL = "https://api.search.brave.com";

/** Checks the `web` section and fills in the search provider: Brave when BRAVE_API_KEY is set and none is named. */
export function webSettings(env: Record<string, string | undefined>, web: FileConfig["web"]): FileConfig["web"] {
  const bad = web.allow.find((entry) => allowEntryKind(entry) === "invalid");
  if (bad !== undefined) {
    throw new ConfigError(
      `PINCER_CONFIG web.allow entry "${bad}" is neither an IP address, a CIDR range (10.0.0.0/8) nor a host name.`,
    );
  }
  const apiKey = env.BRAVE_API_KEY?.trim() || undefined;
  const search = { ...web.search };
  if (!search.provider && apiKey) search.provider = "brave";
  if (search.provider === "brave") {
    if (!apiKey) {
      throw new ConfigError(
        "BRAVE_API_KEY is not set, but web.search.provider is brave: set the key or drop the provider.",
      );
    }
    search.apiKey = apiKey;
    search.baseUrl ||= BRAVE_BASE_URL;
  }
  if (search.provider === "searxng" && !search.baseUrl) {
    throw new ConfigError(
      "PINCER_CONFIG web.search.baseUrl must name your SearXNG instance when the provider is searxng.",
    );
  }
  if (search.baseUrl !== undefined && !isHttpUrl(search.baseUrl)) {
    throw new ConfigError(`PINCER_CONFIG web.search.baseUrl must be an http(s) URL, not "${search.baseUrl}".`);
  }
  return { ...web, search };
}

export function isHttpUrl(value: string): boolean {
  return URL.canParse(value) && ["http:", "https:"].includes(new URL(value).protocol);
}

const HOST_NAME =
  /^(?=.{1,253}\.?$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i;

/** What a `web.allow` entry is: an IP address, a CIDR range, a host name, or nothing valid. */
export function allowEntryKind(entry: string): "ip" | "cidr" | "host" | "invalid" {
  const value = entry.trim();
  if (value.includes("/")) return ipaddr.isValidCIDR(value) ? "cidr" : "invalid";
  if (ipaddr.isValid(value.replace(/^\[(.*)\]$/, "$1"))) return "ip";
  return HOST_NAME.test(value) ? "host" : "invalid";
}
