"""The agent loop of the chat-shaped agents: request bodies, streamed tool calls, their checks, the session
policy."""
