"""The seam between coop and any chat model: the client (`llm`, the one module that imports litellm), how JSON is
asked for and read (`json_modes`, `jsonreply`), the API-key variables (`credentials`), Ollama's context window
(`ollama`) and the bound on a reply (`reply_limit`). The memory engine may use `jsonreply` (the JSON it asks
for), never the client."""
