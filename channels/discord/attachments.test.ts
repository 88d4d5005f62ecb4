import { describe, expect, it } from "vitest";
import { attachmentUrlAllowed } from "./attachments.js";

describe("which attachment addresses are fetched", () => {
  it("Discord's CDN and the configured REST server's origin, nothing else", () => {
    const api = "https://discord.com/api";
    for (const url of [
      "https://cdn.discordapp.com/attachments/1/2/a.png?ex=1",
      "https://media.discordapp.net/attachments/1/2/a.png",
      "https://discord.com/attachments/1/2/a.png",
    ]) {
      expect(attachmentUrlAllowed(url, api), url).toBe(true);
    }
    for (const url of [
      "http://cdn.discordapp.com/attachments/1/2/a.png",
      "https://cdn.discordapp.com:8443/a.png",
      "https://cdn.discordapp.com.evil.example/a.png",
      "https://cdn.discordapp.com@127.0.0.1/a.png",
      "https://evil.example/cdn.discordapp.com/a.png",
      "http://127.0.0.1:7390/api/state",
      "http://169.254.169.254/latest/meta-data/",
      "file:///etc/passwd",
      "not a url",
    ]) {
      expect(attachmentUrlAllowed(url, api), url).toBe(false);
    }
    expect(attachmentUrlAllowed("http://127.0.0.1:5000/attachments/1", "http://127.0.0.1:5000/api")).toBe(true);
    expect(attachmentUrlAllowed("http://127.0.0.1:5001/attachments/1", "http://127.0.0.1:5000/api")).toBe(false);
  });
});
