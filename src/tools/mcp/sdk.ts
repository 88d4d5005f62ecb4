/** What connections need from the MCP SDK at run time, in one module loaded on the first connect (see
 * McpConnection.open): a daemon without MCP servers never loads the SDK (~45 MB, ~200 ms). */
export { Client } from "@modelcontextprotocol/sdk/client/index.js";
export { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
export { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
export { ErrorCode, McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
export { ProcessGroupTransport } from "./stdio-transport.js";
