"""The MCP server over coop's memory (`coop mcp`) and its installation into MCP hosts."""
