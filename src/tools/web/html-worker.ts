/** Worker of createHtmlConverter (web-fetch-tool.ts): a huge or pathological page costs this thread, not the daemon. */
import { serveTasks } from "../worker-pool.js";
import { htmlToMarkdown } from "./html-to-markdown.js";

serveTasks(({ html, url }: { html: string; url: string }) => htmlToMarkdown(html, url));
