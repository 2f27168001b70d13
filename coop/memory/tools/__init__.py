"""The memory tools, defined once: the registry (name, description, argument schema, limits, whether it writes)
from which the chat's tool specs and the MCP server's tools are made, and the tools themselves over one user's
memory, called with typed arguments."""
