#!/usr/bin/env node
// An MCP server (the official SDK's low-level Server over stdio) that misbehaves on request, for
// attacking pincer's MCP client. Behaviour comes from the arguments, several may be combined:
//   tools=N          offer N tools t0…t(N-1) besides the fixed ones
//   odd-names        tools whose names collide or run long after sanitising
//   bloated          a 100 KB description, a 30 KB schema, a schema ajv refuses
//   redos            tools whose argument checks cost exponential or quadratic time, one RE2 cannot compile
//   no-init          read stdin, never answer anything (initialize included)
//   crash            write a reason to stderr and exit 3 at once
//   crash-after=MS   exit MS milliseconds after the client says it is initialized
//   flood-stderr     write to stderr without pause while running
//   count=FILE       append one line to FILE per start (to count restarts)
//   pid=FILE         write this process's pid and a grandchild's pid to FILE
import { spawn } from "node:child_process";
import { appendFileSync, writeFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [key, ...rest] = a.split("=");
    return [key, rest.join("=") || "1"];
  }),
);

if (args.has("count")) appendFileSync(args.get("count"), `${Date.now()}\n`);
if (args.has("crash")) {
  process.stderr.write("hostile server: configuration missing, giving up\n");
  process.exit(3);
}
if (args.has("pid")) {
  const grandchild = spawn("sleep", ["600"], { stdio: "ignore" });
  writeFileSync(args.get("pid"), `${process.pid} ${grandchild.pid}\n`);
}
if (args.has("no-init")) {
  process.stdin.resume();
} else {
  await serve();
}
if (args.has("flood-stderr")) {
  const line = `${"noise ".repeat(100)}\n`;
  const flood = () => process.stderr.write(line.repeat(100), () => setImmediate(flood));
  flood();
}

async function serve() {
  const tools = [
    { name: "huge", description: "returns 5 MB of text", inputSchema: { type: "object", properties: {} } },
    {
      name: "flood_stdout",
      description: "writes 20 MB to stdout without a newline",
      inputSchema: { type: "object", properties: {} },
    },
    {
      name: "add_tool",
      description: "adds a tool and announces it",
      inputSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    },
    {
      name: "remove_tool",
      description: "removes a tool and announces it",
      inputSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    },
    { name: "storm", description: "sends 1000 list_changed", inputSchema: { type: "object", properties: {} } },
    {
      name: "list_count",
      description: "how often tools/list was asked",
      inputSchema: { type: "object", properties: {} },
    },
    {
      name: "hang",
      description: "never answers",
      inputSchema: { type: "object", properties: {} },
      annotations: { readOnlyHint: true },
    },
  ];
  for (let i = 0; i < Number(args.get("tools") ?? 0); i++) {
    tools.push({ name: `t${i}`, description: `tool number ${i}`, inputSchema: { type: "object", properties: {} } });
  }
  if (args.has("bloated")) {
    tools.push(
      { name: "verbose", description: "blah ".repeat(20_000), inputSchema: { type: "object", properties: {} } },
      {
        name: "bloated",
        description: "a schema of 30,000 characters",
        inputSchema: { type: "object", properties: { x: { type: "string", description: "d".repeat(30_000) } } },
      },
      {
        name: "broken",
        description: "a schema ajv refuses",
        inputSchema: { type: "object", properties: { x: { type: "no-such-type" } } },
      },
    );
  }
  if (args.has("redos")) {
    const patterned = (pattern) => ({ type: "object", properties: { text: { type: "string", pattern } } });
    tools.push(
      { name: "match", description: "checks its text with ^(a+)+$", inputSchema: patterned("^(a+)+$") },
      { name: "lookahead", description: "a pattern with lookahead", inputSchema: patterned("^(?=a)a+$") },
      // RE2 takes time per character in proportion to the program: this one ~19,000 instructions.
      { name: "heavy", description: "a long pattern", inputSchema: patterned("[a-z]{1000}".repeat(19)) },
      {
        name: "unique",
        description: "takes a list of distinct items (ajv compares every pair)",
        inputSchema: { type: "object", properties: { items: { type: "array", uniqueItems: true } } },
      },
      {
        // 32 levels of allOf naming the next twice: a few lines that ajv walks 2^32 times per call.
        name: "bomb",
        description: "an allOf bomb through $refs",
        inputSchema: {
          type: "object",
          properties: { x: { $ref: "#/$defs/d0" } },
          $defs: Object.fromEntries(
            Array.from({ length: 33 }, (_, i) => [
              `d${i}`,
              i === 32 ? { type: "string" } : { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] },
            ]),
          ),
        },
      },
    );
  }
  if (args.has("odd-names")) {
    for (const name of ["weird tool/ä.x", "weird_tool__.x", `long_${"x".repeat(100)}_a`, `long_${"x".repeat(100)}_b`]) {
      tools.push({ name, description: `odd name ${name}`, inputSchema: { type: "object", properties: {} } });
    }
  }
  const server = new Server({ name: "hostile", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });
  let listed = 0;
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    listed++;
    return { tools };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name, arguments: input = {} } = request.params;
    switch (name) {
      case "huge":
        return { content: [{ type: "text", text: "y".repeat(5 * 1024 * 1024) }] };
      case "flood_stdout":
        process.stdout.write("z".repeat(20 * 1024 * 1024));
        return new Promise(() => {});
      case "add_tool":
        tools.push({
          name: String(input.name),
          description: "added later",
          inputSchema: { type: "object", properties: {} },
        });
        await server.sendToolListChanged();
        return { content: [{ type: "text", text: `added ${input.name}` }] };
      case "remove_tool":
        tools.splice(
          tools.findIndex((t) => t.name === input.name),
          1,
        );
        await server.sendToolListChanged();
        return { content: [{ type: "text", text: `removed ${input.name}` }] };
      case "storm":
        for (let i = 0; i < 1000; i++) void server.sendToolListChanged();
        return { content: [{ type: "text", text: "sent 1000 list_changed" }] };
      case "list_count":
        return { content: [{ type: "text", text: String(listed) }] };
      case "hang":
        return new Promise(() => {});
      default:
        return { content: [{ type: "text", text: `${name} ran` }] };
    }
  });
  server.oninitialized = () => {
    if (args.has("crash-after")) setTimeout(() => process.exit(4), Number(args.get("crash-after")));
  };
  await server.connect(new StdioServerTransport());
}
