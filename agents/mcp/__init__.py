"""MCP, the client side: the MCP agent, its transports, the probe and the loop's MCP tools."""
