import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What the fake model answers to one chat-completions request. */
export interface FakeReply {
  content?: string;
  toolCalls?: Array<{ name: string; arguments: unknown; id?: string }>;
  /** Answer with this HTTP status and an OpenAI-style error body instead. */
  status?: number;
  /** The error body's message (default "fake error STATUS"), e.g. llama.cpp's own sentences. */
  message?: string;
  delayMs?: number;
  /** Send the headers at once, then the body one byte every this many ms (a server that trickles). */
  trickleMs?: number;
  /** Overrides the finish reason ("length": cut off); `null` sends none. */
  finishReason?: string | null;
  /** Sent as `reasoning_content`, the way llama.cpp, vLLM and DeepSeek report thinking. */
  reasoning?: string;
  /** The usage reported (plain replies, and streams that asked with `stream_options.include_usage`). */
  usage?: Record<string, unknown>;
  /**
   * With `status`: this body instead of the default error (a server's error in its own words);
   * without: a plain reply's whole body, sent as it is (odd shapes).
   */
  body?: unknown;
  /** A stream's chunks, each sent as one `data:` event as it is (strings unquoted), then `[DONE]`. */
  chunks?: unknown[];
  /** A slow stream: its chunks are written this many ms apart (a model that writes as it thinks). */
  chunkDelayMs?: number;
  /** A stream that stops after `chunks` chunks until `until` settles (tests order on it, not on time). */
  holdAfter?: { chunks: number; until: Promise<unknown> };
  /**
   * A stream's raw bytes, each piece written on its own a few ms apart (no `data:`, no `[DONE]`
   * added): comments, CRLF, a piece ending inside a UTF-8 character. A string `"CLOSE"` drops the
   * connection there.
   */
  sse?: Array<string | Buffer>;
}

export interface ChatRequest {
  model: string;
  stream?: boolean;
  messages: Array<{ role: string; content?: unknown; tool_calls?: unknown[]; tool_call_id?: string }>;
  tools?: Array<{ function: { name: string } }>;
  max_tokens?: number;
  max_completion_tokens?: number;
  stream_options?: { include_usage?: boolean };
  headers: Record<string, string | string[] | undefined>;
  /** What the request costs in the fake's own tokens (see limitContext). */
  promptTokens: number;
  /** The messages as they came, with the line of facts pincer appends to user messages (`messages` has it cut). */
  sent: ChatRequest["messages"];
}

/** How a server words a context refusal (see limitContext). */
export type ContextStyle = "llama.cpp" | "vllm";

export interface FakeOpenAI {
  /** Base URL including /v1, for OPENAI_BASE_URL. */
  url: string;
  /** Replies used in order, one per request. */
  enqueue(...replies: FakeReply[]): void;
  /** Drops the replies still queued (so one failed test does not feed the next). */
  clearQueue(): void;
  /** Answers requests when the queue is empty (default: content "ok"). */
  respond(fn: (request: ChatRequest) => FakeReply | Promise<FakeReply>): void;
  requests: ChatRequest[];
  /** What GET /v1/models lists. */
  models: string[];
  /** More fields of a model's /v1/models entry (`max_model_len`, `context_length`…), by id. */
  modelInfo: Record<string, Record<string, unknown>>;
  /** What GET /props answers (llama-server's; beside /v1); 404 while unset. */
  serveProps(body: unknown): void;
  /**
   * Refuses every request longer than `tokens` of the fake's own count (about 3.5 characters a
   * token: more than pincer counts, as real servers' tokenizers often do) in the words of
   * `style`; vLLM counts `max_tokens` in. Undefined lifts the limit.
   */
  limitContext(tokens: number | undefined, style?: ContextStyle): void;
  /** Refuses (401, as OpenAI words it) every request that does not send `Bearer KEY`; undefined takes any key. */
  requireKey(key: string | undefined): void;
  /** The key (`Authorization: Bearer …`) of every request, models lists included, in order. */
  keysSeen: string[];
  /** Uploads to /v1/audio/transcriptions: the form's model and the audio bytes' length. */
  transcriptions: Array<{ model: string; bytes: number }>;
  /** How transcriptions are answered (default: the text "hello from a voice note"). */
  transcribeWith(reply: { text: string; delayMs?: number } | { status: number }): void;
  /** Requests to /v1/audio/speech, as sent; each is answered with a second of a 440 Hz tone as WAV. */
  speech: Array<{ model: string; voice: string; input: string; speed?: number; response_format?: string }>;
  close(): Promise<void>;
}

/** pincer's per-turn facts after the user's words (see withTurnFacts): scripts answer the words, as most tests ask. */
const METADATA = /\n\n\[pincer metadata: [^\n]*\]$/;

function withoutMetadata(message: ChatRequest["messages"][number]): ChatRequest["messages"][number] {
  if (message.role !== "user") return message;
  const cut = (text: string) => text.replace(METADATA, "");
  if (typeof message.content === "string") return { ...message, content: cut(message.content) };
  if (!Array.isArray(message.content)) return message;
  const parts = message.content.map((part: { type?: string; text?: string }) =>
    part.type === "text" && typeof part.text === "string" ? { ...part, text: cut(part.text) } : part,
  );
  return { ...message, content: parts };
}

/** A scripted OpenAI-compatible server on 127.0.0.1, speaking plain and streamed chat completions. */
export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const fake = createFakeOpenAI();
  await fake.listen();
  return fake;
}

/** The same server before it listens: `listen()` starts it on a free port, and then `url` is known. */
export function createFakeOpenAI(): FakeOpenAI & { listen(): Promise<void> } {
  const queue: FakeReply[] = [];
  const requests: ChatRequest[] = [];
  const models = ["gpt-4.1-mini"];
  const modelInfo: Record<string, Record<string, unknown>> = {};
  let props: unknown;
  let limit: { tokens: number; style: ContextStyle } | undefined;
  let responder: (request: ChatRequest) => FakeReply | Promise<FakeReply> = () => ({ content: "ok" });
  let counter = 0;
  const transcriptions: Array<{ model: string; bytes: number }> = [];
  let transcript: { text: string; delayMs?: number } | { status: number } = { text: "hello from a voice note" };

  const speech: FakeOpenAI["speech"] = [];
  let requiredKey: string | undefined;
  const keysSeen: string[] = [];
  const server = createServer(async (req, res) => {
    const key = String(req.headers.authorization ?? "").replace(/^Bearer /, "");
    keysSeen.push(key);
    if (requiredKey !== undefined && key !== requiredKey) {
      const error = { message: "Incorrect API key provided.", type: "invalid_request_error", code: "invalid_api_key" };
      return sendJson(res, 401, { error });
    }
    if (req.method === "POST" && req.url === "/v1/audio/speech") {
      speech.push(JSON.parse(await readBody(req, "utf8")));
      res.writeHead(200, { "content-type": "audio/wav" });
      res.end(toneWav(1, 440));
      return;
    }
    if (req.method === "POST" && req.url === "/v1/audio/transcriptions") {
      const form = await new Request("http://fake/", {
        method: "POST",
        headers: { "content-type": String(req.headers["content-type"]) },
        body: Buffer.from(await readBody(req, "latin1"), "latin1"),
      }).formData();
      const file = form.get("file");
      transcriptions.push({ model: String(form.get("model")), bytes: file instanceof Blob ? file.size : 0 });
      if ("status" in transcript) return sendJson(res, transcript.status, { error: { message: "fake failure" } });
      if (transcript.delayMs) await new Promise((r) => setTimeout(r, (transcript as { delayMs: number }).delayMs));
      return sendJson(res, 200, { text: transcript.text });
    }
    // Like OpenAI itself, everything lives under /v1: a base URL without it gets 404s.
    if (req.method === "GET" && req.url === "/v1/models") {
      return sendJson(res, 200, {
        object: "list",
        data: models.map((id) => ({ id, object: "model", owned_by: "fake", ...modelInfo[id] })),
      });
    }
    if (req.method === "GET" && req.url === "/props" && props !== undefined) return sendJson(res, 200, props);
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
      return sendJson(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
    }
    const body = JSON.parse(await readBody(req)) as ChatRequest;
    const promptTokens = Math.ceil(JSON.stringify({ messages: body.messages, tools: body.tools }).length / 3.5);
    const request = {
      ...body,
      messages: body.messages.map(withoutMetadata),
      sent: body.messages,
      headers: req.headers,
      promptTokens,
    };
    requests.push(request);
    const refusal = limit && contextRefusal(limit, promptTokens, body.max_tokens ?? 0);
    if (refusal) return sendJson(res, 400, refusal);
    const reply = queue.shift() ?? (await responder(request));
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    if (reply.status && reply.status >= 400) {
      const message = reply.message ?? `fake error ${reply.status}`;
      const error = reply.body ?? { error: { code: reply.status, message, type: "server_error" } };
      return sendJson(res, reply.status, error);
    }
    if (reply.sse) return sendRaw(res, reply.sse);
    if (reply.trickleMs) return trickle(res, request, reply.content ?? "", reply.trickleMs);
    const id = `chatcmpl-${++counter}`;
    const toolCalls = (reply.toolCalls ?? []).map((call, index) => ({
      index,
      id: call.id ?? `call_${counter}_${index}`,
      type: "function" as const,
      function: {
        name: call.name,
        arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
      },
    }));
    const usage = { total_tokens: 2, ...(reply.usage ?? { prompt_tokens: 1, completion_tokens: 1 }) };
    const finish = reply.finishReason === undefined ? (toolCalls.length ? "tool_calls" : "stop") : reply.finishReason;
    if (request.stream) {
      const chunks = reply.chunks ?? streamChunks(reply.content ?? "", toolCalls, finish, reply.reasoning);
      if (!reply.chunks && request.stream_options?.include_usage) chunks.push({ choices: [], usage });
      return sendStream(res, id, request.model, chunks, reply);
    }
    if (reply.body !== undefined) return sendJson(res, 200, reply.body);
    sendJson(res, 200, {
      id,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: request.model,
      choices: [
        {
          index: 0,
          finish_reason: finish,
          message: {
            role: "assistant",
            content: reply.content ?? (toolCalls.length ? null : ""),
            ...(reply.reasoning ? { reasoning_content: reply.reasoning } : {}),
            ...(toolCalls.length ? { tool_calls: toolCalls.map(({ index: _i, ...call }) => call) } : {}),
          },
        },
      ],
      usage,
    });
  });
  let url: string | undefined;

  return {
    get url() {
      if (!url) throw new Error("the fake model is not listening yet: call listen() (or use startFakeOpenAI)");
      return url;
    },
    async listen() {
      server.listen(0, "127.0.0.1");
      await once(server, "listening");
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    },
    models,
    modelInfo,
    serveProps: (body) => {
      props = body;
    },
    limitContext: (tokens, style = "llama.cpp") => {
      limit = tokens === undefined ? undefined : { tokens, style };
    },
    requireKey: (key) => {
      requiredKey = key;
    },
    keysSeen,
    transcriptions,
    speech,
    transcribeWith: (reply) => {
      transcript = reply;
    },
    enqueue: (...replies) => queue.push(...replies),
    clearQueue: () => {
      queue.length = 0;
    },
    respond: (fn) => {
      responder = fn;
    },
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A request over the limit, refused as llama-server and vLLM word it. */
function contextRefusal(
  limit: { tokens: number; style: ContextStyle },
  prompt: number,
  maxTokens: number,
): object | undefined {
  if (limit.style === "llama.cpp") {
    if (prompt <= limit.tokens) return undefined;
    return {
      error: {
        code: 400,
        message: `request (${prompt} tokens) exceeds the available context size (${limit.tokens} tokens), try increasing it`,
        type: "exceed_context_size_error",
        n_prompt_tokens: prompt,
        n_ctx: limit.tokens,
      },
    };
  }
  if (prompt + maxTokens <= limit.tokens) return undefined;
  return {
    error: {
      object: "error",
      message: `This model's maximum context length is ${limit.tokens} tokens. However, you requested ${prompt + maxTokens} tokens (${prompt} in the messages, ${maxTokens} in the completion). Please reduce the length of the messages or completion.`,
      type: "BadRequestError",
      param: null,
      code: 400,
    },
  };
}

/** The chunks of a streamed reply, content and tool-call arguments split into small pieces. */
function streamChunks(
  content: string,
  toolCalls: Array<{ index: number; id: string; type: "function"; function: { name: string; arguments: string } }>,
  finish: string | null,
  reasoning?: string,
): object[] {
  const delta = (delta: object, finishReason: string | null = null) => ({
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
  const chunks = [delta({ role: "assistant", content: "" })];
  for (const piece of reasoning?.match(/[\s\S]{1,5}/g) ?? []) chunks.push(delta({ reasoning_content: piece }));
  for (const piece of content.match(/[\s\S]{1,5}/g) ?? []) chunks.push(delta({ content: piece }));
  for (const call of toolCalls) {
    chunks.push(
      delta({
        tool_calls: [
          { index: call.index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } },
        ],
      }),
    );
    for (const piece of call.function.arguments.match(/[\s\S]{1,4}/g) ?? []) {
      chunks.push(delta({ tool_calls: [{ index: call.index, function: { arguments: piece } }] }));
    }
  }
  chunks.push(delta({}, finish));
  return chunks;
}

/** Sends chunks as server-sent events; objects get the chunk envelope, strings go as they are. */
async function sendStream(
  res: ServerResponse,
  id: string,
  model: string,
  chunks: unknown[],
  pace: Pick<FakeReply, "chunkDelayMs" | "holdAfter"> = {},
): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const [index, chunk] of chunks.entries()) {
    if (index === pace.holdAfter?.chunks) await pace.holdAfter.until.catch(() => {});
    if (pace.chunkDelayMs && index > 0) await new Promise((r) => setTimeout(r, pace.chunkDelayMs));
    // The client gave up (a stopped turn): nothing more to write.
    if (res.destroyed) return;
    const data =
      typeof chunk === "string"
        ? chunk
        : JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model, ...(chunk as object) });
    res.write(`data: ${data}\n\n`);
  }
  res.end("data: [DONE]\n\n");
}

/** Headers now, then a (content-only) reply one byte at a time until it is all out or the client gives up. */
async function trickle(res: ServerResponse, request: ChatRequest, content: string, everyMs: number): Promise<void> {
  const message = { role: "assistant", content };
  const body = request.stream
    ? `data: ${JSON.stringify({ id: "chatcmpl-trickle", object: "chat.completion.chunk", created: 0, model: request.model, choices: [{ index: 0, delta: message, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`
    : JSON.stringify({
        id: "chatcmpl-trickle",
        object: "chat.completion",
        created: 0,
        model: request.model,
        choices: [{ index: 0, finish_reason: "stop", message }],
      });
  res.writeHead(200, { "content-type": request.stream ? "text/event-stream" : "application/json" });
  for (const byte of body) {
    if (res.destroyed) return;
    res.write(byte);
    await new Promise((r) => setTimeout(r, everyMs));
  }
  res.end();
}

async function sendRaw(res: ServerResponse, pieces: Array<string | Buffer>): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const piece of pieces) {
    if (res.destroyed) return;
    if (piece === "CLOSE") return void res.socket?.destroy();
    res.write(piece);
    await new Promise((r) => setTimeout(r, 5));
  }
  res.end();
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage, encoding: BufferEncoding = "utf8"): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString(encoding);
}

/** `seconds` of a sine tone as a 16 kHz mono 16-bit WAV file. */
function toneWav(seconds: number, hertz: number): Buffer {
  const rate = 16000;
  const samples = Math.round(seconds * rate);
  const wav = Buffer.alloc(44 + samples * 2);
  wav.write("RIFF", 0);
  wav.writeUInt32LE(36 + samples * 2, 4);
  wav.write("WAVEfmt ", 8);
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20);
  wav.writeUInt16LE(1, 22);
  wav.writeUInt32LE(rate, 24);
  wav.writeUInt32LE(rate * 2, 28);
  wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34);
  wav.write("data", 36);
  wav.writeUInt32LE(samples * 2, 40);
  for (let i = 0; i < samples; i++)
    wav.writeInt16LE(Math.round(Math.sin((2 * Math.PI * hertz * i) / rate) * 12000), 44 + i * 2);
  return wav;
}
