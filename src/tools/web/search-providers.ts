export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export interface SearchProvider {
  /** Shown to the model and in errors, e.g. "Brave Search". */
  readonly label: string;
  search(query: string, count: number, signal: AbortSignal): Promise<SearchResult[]>;
}

/** A search failure worded for the model (and the user reading over its shoulder). */
export class SearchError extends Error {}

export interface SearchSettings {
  provider: "brave" | "searxng";
  baseUrl: string;
  apiKey?: string;
  timeoutMs: number;
}

const MAX_RESPONSE_BYTES = 2 * 1024 * 1024;

/** The configured provider. Its base URL is the operator's choice, so it is not SSRF-checked. */
export function createSearchProvider(settings: SearchSettings): SearchProvider {
  const base = settings.baseUrl.replace(/\/+$/, "");
  const brave = settings.provider === "brave";
  const label = brave ? "Brave Search" : "SearXNG";
  return {
    label,
    async search(query, count, signal) {
      const url = new URL(brave ? `${base}/res/v1/web/search` : `${base}/search`);
      url.searchParams.set("q", query);
      url.searchParams.set(brave ? "count" : "format", brave ? String(count) : "json");
      const headers: Record<string, string> = { accept: "application/json" };
      if (brave) headers["x-subscription-token"] = settings.apiKey ?? "";
      const hint = brave
        ? "check BRAVE_API_KEY"
        : 'the instance must list "json" under search.formats in its settings.yml';
      const data = (await getJson(label, url, headers, settings.timeoutMs, signal, hint)) as {
        web?: { results?: unknown[] };
        results?: unknown[];
      } | null;
      const results = (brave ? data?.web?.results : data?.results) ?? [];
      // The HTML parser loads with the first search, not at start.
      const { htmlToPlainText } = await import("./html-to-text.js");
      return results
        .map((r) => toResult(r, brave ? "description" : "content", htmlToPlainText))
        .filter(isResult)
        .slice(0, count);
    },
  };
}

async function getJson(
  label: string,
  url: URL,
  headers: Record<string, string>,
  timeoutMs: number,
  signal: AbortSignal,
  refusedHint: string,
): Promise<unknown> {
  const deadline = AbortSignal.timeout(timeoutMs);
  let response: Response;
  try {
    response = await fetch(url, { headers, signal: AbortSignal.any([signal, deadline]), redirect: "error" });
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    if (deadline.aborted) throw new SearchError(`${label} did not answer within ${timeoutMs / 1000} s.`);
    const cause = (err as Error).cause as Error | undefined;
    throw new SearchError(`${label} could not be reached: ${cause?.message ?? (err as Error).message}.`);
  }
  const text = await readText(response, signal, deadline, label, timeoutMs);
  if (response.status === 401 || response.status === 403) {
    throw new SearchError(`${label} refused the request (HTTP ${response.status}): ${refusedHint}.`);
  }
  if (response.status === 429) throw new SearchError(`${label} says too many requests (HTTP 429); try again later.`);
  if (!response.ok) throw new SearchError(`${label} answered HTTP ${response.status}.`);
  try {
    return JSON.parse(text);
  } catch {
    throw new SearchError(`${label} answered with something that is not JSON.`);
  }
}

async function readText(
  response: Response,
  signal: AbortSignal,
  deadline: AbortSignal,
  label: string,
  timeoutMs: number,
): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body ?? []) {
      size += chunk.length;
      // Throwing out of the loop cancels the stream, which stops the download.
      if (size > MAX_RESPONSE_BYTES) {
        throw new SearchError(`${label} sent more than ${MAX_RESPONSE_BYTES} bytes.`);
      }
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof SearchError) throw err;
    if (signal.aborted) throw signal.reason;
    if (deadline.aborted) throw new SearchError(`${label} did not answer within ${timeoutMs / 1000} s.`);
    throw new SearchError(`${label} broke off its answer: ${(err as Error).message}.`);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function toResult(raw: unknown, snippetField: string, toText: (html: string) => string): SearchResult | undefined {
  // Snippets arrive with <strong> highlights and entities; the model wants plain text on one line.
  const plain = (html: string) => toText(html).replace(/\s+/g, " ");
  if (typeof raw !== "object" || raw === null) return undefined;
  const r = raw as Record<string, unknown>;
  if (typeof r.url !== "string" || r.url === "") return undefined;
  return {
    title: plain(typeof r.title === "string" ? r.title : r.url),
    url: r.url,
    snippet: plain(typeof r[snippetField] === "string" ? (r[snippetField] as string) : ""),
  };
}

function isResult(r: SearchResult | undefined): r is SearchResult {
  return r !== undefined;
}
