"""Which environment variable a model's API key must be in, so a missing key is named at once ("OPENAI_API_KEY is
not set") instead of surfacing, after retries, as a provider's puzzling error. Shared by `coop check` and the
model client, so both say the same thing."""

from __future__ import annotations

import os

PROVIDER_KEYS = {
    "openai": "OPENAI_API_KEY", "gpt": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
    "claude": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY", "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY", "cohere": "COHERE_API_KEY", "together_ai": "TOGETHERAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY", "deepseek": "DEEPSEEK_API_KEY", "xai": "XAI_API_KEY",
    "voyage": "VOYAGE_API_KEY", "fireworks_ai": "FIREWORKS_AI_API_KEY", "perplexity": "PERPLEXITYAI_API_KEY",
}
# Other names litellm also reads a provider's key from: a key there is not missing.
ALTERNATES = {"GEMINI_API_KEY": ("GOOGLE_API_KEY",), "TOGETHERAI_API_KEY": ("TOGETHER_API_KEY",)}
LOCAL_PROVIDERS = {"ollama", "ollama_chat", "lm_studio", "hosted_vllm", "llamafile", "vllm"}


def key_variable(model: str, api_key_env: str | None, api_base: str | None) -> str | None:
    """The environment variable the model's key must be in; None when it needs no key (a local provider, or
    any server at a configured `api_base` with no `api_key_env`: LM Studio, llama.cpp, a proxy that takes none);
    "" when coop cannot tell (an unknown provider)."""
    if api_key_env:
        return api_key_env
    provider = model.split("/", 1)[0] if "/" in model else model.split("-", 1)[0]
    if provider in LOCAL_PROVIDERS or api_base:
        return None
    return PROVIDER_KEYS.get(provider, "")


def missing_key(model: str, api_key_env: str | None, api_base: str | None) -> str | None:
    """The variable that should hold the model's key but is unset or empty, or None."""
    variable = key_variable(model, api_key_env, api_base)
    if not variable or api_key_env:
        return variable if variable and not os.environ.get(variable) else None
    present = any(os.environ.get(name) for name in (variable, *ALTERNATES.get(variable, ())))
    return None if present else variable


def missing_key_hint(variable: str) -> str:
    return (f"export {variable}=... in your shell (or name another variable in model.api_key_env); "
            "`coop check` checks the whole setup")
