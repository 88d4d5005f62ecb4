import { describe, expect, it } from "vitest";
import { formatResult, type SaveFile } from "./format-result.js";

const saved: Array<{ bytes: Buffer; extension: string }> = [];
const save: SaveFile = async (bytes, extension) => {
  saved.push({ bytes, extension });
  return `mcp-files/s/file${saved.length}.${extension}`;
};

describe("MCP results as text", () => {
  it("joins text blocks as they are", async () => {
    const text = await formatResult(
      {
        content: [
          { type: "text", text: "one" },
          { type: "text", text: "two" },
        ],
      },
      save,
      100,
    );
    expect(text).toBe("one\ntwo");
  });

  it("adds structured content as JSON unless a text block already says the same", async () => {
    const structured = { temperature: 21, tags: ["a"] };
    expect(await formatResult({ content: [], structuredContent: structured }, save, 1000)).toBe(
      JSON.stringify(structured, null, 2),
    );
    const both = await formatResult(
      { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured },
      save,
      1000,
    );
    expect(both).toBe(JSON.stringify(structured));
  });

  it("saves images, audio and binary resources and names the files", async () => {
    saved.length = 0;
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
    const text = await formatResult(
      {
        content: [
          { type: "image", data: png.toString("base64"), mimeType: "image/png" },
          { type: "audio", data: "AAAA", mimeType: "audio/wav" },
          { type: "resource", resource: { uri: "file:///x.bin", blob: "AQID", mimeType: "application/x-thing" } },
          { type: "resource", resource: { uri: "file:///notes.txt", text: "hello", mimeType: "text/plain" } },
          { type: "resource_link", uri: "https://example.org/doc", name: "doc", description: "a document" },
        ],
      },
      save,
      1000,
    );
    expect(saved.map((s) => s.extension)).toEqual(["png", "wav", "bin"]);
    expect(saved[0].bytes.equals(png)).toBe(true);
    expect(text).toBe(
      [
        "[image image/png saved to mcp-files/s/file1.png, 4 bytes]",
        "[audio audio/wav saved to mcp-files/s/file2.wav, 3 bytes]",
        "[resource file:///x.bin (application/x-thing) saved to mcp-files/s/file3.bin, 3 bytes]",
        "[resource file:///notes.txt (text/plain)]\nhello",
        "[resource link: doc https://example.org/doc — a document]",
      ].join("\n"),
    );
  });

  it("keeps at most 10 files from one result", async () => {
    saved.length = 0;
    const image = { type: "image" as const, data: "AAAA", mimeType: "image/png" };
    const text = await formatResult({ content: Array.from({ length: 1000 }, () => image) }, save, 1_000_000);
    expect(saved).toHaveLength(10);
    expect(
      text.split("\n").filter((l) => l.includes("not saved (3 bytes): only 10 files are kept per result")),
    ).toHaveLength(990);
  });

  it("turns isError into a thrown ToolError (the model reads Error: …)", async () => {
    await expect(
      formatResult({ content: [{ type: "text", text: "no such repo" }], isError: true }, save, 100),
    ).rejects.toThrow("no such repo");
    await expect(formatResult({ content: [], isError: true }, save, 100)).rejects.toThrow(/without saying what/);
  });

  it("cuts long results with a note and says when there is nothing", async () => {
    const text = await formatResult({ content: [{ type: "text", text: "x".repeat(500) }] }, save, 100);
    expect(text).toBe(`${"x".repeat(100)}\n… (truncated, 400 more chars)`);
    expect(await formatResult({ content: [] }, save, 100)).toBe("(no output)");
  });
});
