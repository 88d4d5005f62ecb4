/** Worker-thread entry (see html-converter.ts): a huge or pathological page costs this thread, not the daemon's. */
import { serveTasks } from "../worker-pool.js";
import { htmlToMarkdown } from "./html-to-markdown.js";

serveTasks(({ html, url }: { html: string; url: string }) => htmlToMarkdown(html, url));
