"""The agent loop of the chat-shaped agents: streamed tool calls, their checks, the loop's MCP tools, the
session policy."""
